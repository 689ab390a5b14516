"""Why not? as rich Text: the engine's WhyNot (what a recall left out, by reason, as the store
was when the recall was issued) with a few examples per reason, each clipped to one line."""

from __future__ import annotations

from rich.text import Text

from engine.facade import WHY_NOT_REASONS, LeftOut, WhyNot, iso_utc
from gno_tui.render.badges import clip

EXAMPLES = 4  # shown per reason (the engine keeps as many)


def left_out_line(item: LeftOut) -> str:
    return f"{item.docid} {clip(item.text, 44)} ({item.detail})"


def why_not_text(report: WhyNot) -> Text:
    out = Text()
    out.append("Why not?", style="bold underline")
    out.append("  (w hides)\n", style="dim")
    if report.moment is not None:  # the recall's moment, not the store as it is now
        out.append(f"as of this recall: {iso_utc(report.moment)}\n", style="dim")
    if report.semantic_unavailable:
        out.append(f"lexical fallback: {report.semantic_unavailable}\n", style="yellow")
    else:
        out.append(f"retrieval: {report.mode}\n")
    if report.unexplained:
        out.append(f"{report.unexplained}\n", style="yellow")
    if not report.counts:
        out.append("Every match of the query was returned.\n", style="green")
    for reason, label in WHY_NOT_REASONS.items():
        if reason not in report.counts:
            continue
        out.append(f"{report.counts[reason]} {label}\n", style="bold")
        examples = report.excluded.get(reason, [])
        for item in examples[:EXAMPLES]:
            out.append(f"  {left_out_line(item)}\n")
        if examples and report.counts[reason] > EXAMPLES:
            out.append(f"  … and {report.counts[reason] - EXAMPLES} more\n", style="dim")
    if report.gone:
        out.append(
            f"{report.gone} fact{'' if report.gone == 1 else 's'} current then "
            f"{'has' if report.gone == 1 else 'have'} left recall since (superseded, retired "
            "or expired): not ranked again, so not counted above.\n",
            style="dim",
        )
    return out
