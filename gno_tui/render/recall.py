"""How the Recall screen renders a result: table cells (with what each score is made of and
the person's label), the budget cut line, the status, the labels and the schema verdict."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.text import Text

from engine.facade import LabelSummary, ScoreParts
from gno_tui.render.badges import egress_badge, short_hash


def use_policy(workbench: dict[str, Any]) -> str:
    """The OB1 use policy in a few letters: instruction or evidence, and whether it still
    needs a person's confirmation."""
    policy = workbench.get("usePolicy", {})
    use = "instr" if policy.get("canUseAsInstruction") else "evid"
    return use + ("·conf?" if policy.get("requiresUserConfirmation") else "")


COLUMNS = ("#", "score", "lex", "cos", "align", "spanHash", "egress", "use", "label", "fact")
# Each column's (width, rank, least width) for a table that fits its width: the rank, the
# fact and its score stay whatever the width (a low rank stays longest); the fact takes the
# room that is left, from 26 cells up to FACT_WIDTH.
FACT_WIDTH = 80
# Of the table's width, what the fact keeps before the score parts and the hash come in:
# the text is what a person reads; the parts are for when there is room.
FACT_SHARE = 0.4
COLUMN_FIT: dict[str, tuple[int, int, int | None]] = {
    "#": (2, 0, None), "score": (5, 1, None), "lex": (4, 6, None), "cos": (4, 6, None),
    "align": (5, 6, None), "spanHash": (9, 5, None), "egress": (12, 2, None),
    "use": (10, 4, None), "label": (5, 3, None), "fact": (FACT_WIDTH, 0, 26),
}  # fmt: skip
LABEL_MARKS = {"relevant": ("✓ rel", "green"), "irrelevant": ("✗ irr", "red")}
LABEL_NAMES = ("relevant", "irrelevant", "missing")


def label_cell(label: str) -> Text:
    mark, style = LABEL_MARKS.get(label, ("", ""))
    return Text(mark, style=style)


def labels_text(labels: dict[str, str], summary: LabelSummary | None) -> Text:
    """The person's labels on this recall (missing facts named), and across every recall."""
    out = Text()
    if labels:
        counts = {name: sum(v == name for v in labels.values()) for name in LABEL_NAMES}
        out.append("\nlabels: ", style="bold")
        out.append(" · ".join(f"{counts[name]} {name}" for name in LABEL_NAMES))
        missing = [record_id for record_id, label in labels.items() if label == "missing"]
        if missing:
            out.append("\nmissing: " + ", ".join(missing), style="yellow")
    if summary is not None and summary.receipts:
        precision = "—" if summary.precision is None else f"{summary.precision:.2f}"
        out.append(
            f"\nyour labels over {summary.receipts} recall(s): precision {precision}, "
            f"{summary.missing} missed",
            style="dim",
        )
    if not labels:
        out.append("\n+ relevant · - irrelevant · M a fact it missed", style="dim")
    return out


def fact_cells(
    rank: int, fact: Mapping[str, Any], use: str, parts: ScoreParts | None, label: str
) -> list[str | Text]:
    """COLUMNS: rank, score and what it is made of (ScoreParts: BM25 over its
    ceiling, cosine, word alignment; "—" where the mode has no such part), spanHash, egress
    badge, use policy, the person's label, text."""
    policy = fact["egressLineage"]["effectivePolicy"]

    def part(value: float | None) -> Text:
        return Text("—", style="dim") if value is None else Text(f"{value:.2f}")

    breakdown = (
        [part(parts.lexical), part(parts.cosine), part(parts.alignment)]
        if parts is not None
        else [part(None)] * 3
    )
    text = fact["text"]  # whole: the table cuts it to its room, showing where rows differ
    return [str(rank), f"{fact['score']:.3f}", *breakdown, short_hash(fact["spanHash"], 8),
            egress_badge(policy), use, label_cell(label), text]  # fmt: skip


def cut_line(omitted: int) -> Text:
    return Text(f"─── budget cut: {omitted} more match(es) omitted ───", style="dim italic")


def status_text(result: Mapping[str, Any] | None, output_format: str, egress: str) -> Text:
    """Retrieval mode (with the lexical-fallback reason), format, ceiling, strictest lineage."""
    out = Text()
    if result is None:
        out.append("retrieval: —", style="bold")
    else:
        retrieval = result["retrieval"]
        out.append(f"retrieval: {retrieval['mode']}", style="bold")
        if "semanticUnavailable" in retrieval:
            out.append(f" (semanticUnavailable: {retrieval['semanticUnavailable']})",
                       style="yellow")  # fmt: skip
    out.append(f" · format: {output_format} (t) · egress ceiling: {egress} (e)")
    if result is None:
        return out
    out.append("\nstrictest lineage: ")
    lineage = result.get("egressLineage")
    if lineage:
        out.append(egress_badge(lineage["effectivePolicy"]))
        sources = ", ".join(f"{s['collection']}={s['policy']} ({s['source']})"
                            for s in lineage["sources"])  # fmt: skip
        out.append(f"  {sources} · digest {short_hash(lineage['digest'], 12)}")
    else:
        out.append("— (no fact returned)", style="dim")
    return out


def schema_verdict(errors: list[str], label: str) -> Text:
    """Whether the raw document is valid against its schema (the first errors if not)."""
    if errors:
        return Text(
            f"✗ {len(errors)} error(s) against {label}:\n" + "\n".join(errors[:10]),
            style="bold red",
        )
    return Text(f"✓ valid against {label}", style="bold green")
