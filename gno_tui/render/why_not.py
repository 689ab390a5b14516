"""Why not? as rich Text: the engine's WhyNot (what a recall left out, by reason) with a few
examples per reason, each clipped to one line."""

from __future__ import annotations

from rich.text import Text

from engine.facade import WHY_NOT_REASONS, LeftOut, WhyNot
from gno_tui.render.badges import clip

EXAMPLES = 4  # shown per reason (the engine keeps as many)


def left_out_line(item: LeftOut) -> str:
    return f"{item.docid} {clip(item.text, 44)} ({item.detail})"


def why_not_text(report: WhyNot) -> Text:
    out = Text()
    out.append("Why not?", style="bold underline")
    out.append("  (w hides)\n", style="dim")
    if report.semantic_unavailable:
        out.append(f"lexical fallback: {report.semantic_unavailable}\n", style="yellow")
    else:
        out.append(f"retrieval: {report.mode}\n")
    if not report.counts:
        out.append("Every match of the query was returned.\n", style="green")
    for reason, label in WHY_NOT_REASONS.items():
        if reason not in report.counts:
            continue
        out.append(f"{report.counts[reason]} {label}\n", style="bold")
        for item in report.excluded[reason][:EXAMPLES]:
            out.append(f"  {left_out_line(item)}\n")
        if report.counts[reason] > EXAMPLES:
            out.append(f"  … and {report.counts[reason] - EXAMPLES} more\n", style="dim")
    return out
