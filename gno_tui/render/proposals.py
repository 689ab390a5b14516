"""How the Review screen shows a proposal: its row in the queue, and its text beside each
candidate as a word diff with the similarity, tier and the threshold in force."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from rich.text import Text

from engine.facade import ThresholdCheck, collapse_text, parse_iso
from gno_tui.render.diff import pair_diff


def age(created: str, now: datetime) -> str:
    """How long ago, in the largest whole unit: 45s, 12m, 3h, 2d."""
    seconds = max(0, int((now - parse_iso(created)).total_seconds()))
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def proposal_cells(proposal: dict[str, Any], now: datetime, marked: bool) -> list[str]:
    """mark, id, age, caller, scopes, intent, #candidates, provenance, text (whole: the table
    cuts it to its column, showing where proposals that start alike differ)."""
    return [
        "●" if marked else " ",
        f"#{proposal['id']}",
        age(proposal["createdAt"], now),
        proposal["caller"],
        ",".join(proposal["scopes"]),
        proposal["decision"],
        str(len(proposal["candidates"])),
        f"agent/{proposal['origin']}",
        collapse_text(proposal["text"]),
    ]


def proposal_detail(proposal: dict[str, Any], targets: list[dict[str, Any]], chosen: int) -> Text:
    """The proposal, then each target (candidate) with a word diff; `chosen` is marked ▶."""
    out = Text()
    out.append(
        f"#{proposal['id']} · agent via {proposal['origin']} · {proposal['caller']}"
        f" · {proposal['session']} · {proposal['createdAt']}\n",
        style="bold",
    )
    out.append(f"intends: {proposal['decision']}")
    if proposal.get("predecessor"):
        out.append(f" {proposal['predecessor']}")
    out.append(
        f"\nscopes: {', '.join(proposal['scopes'])} · collection "
        f"{proposal['collection']} · source {proposal.get('source') or '—'}\n"
    )
    matching = proposal["matching"]
    out.append(
        f"method {matching.get('mode', '?')} · threshold {matching.get('threshold', '?')}",
        style="cyan",
    )
    if matching.get("semanticUnavailable"):
        out.append(f" ({matching['semanticUnavailable']})", style="dim")
    out.append("\n\n")
    out.append(proposal["text"] + "\n\n")
    if not targets:
        out.append("No candidate: nothing in scope says nearly the same thing.", style="dim")
    else:
        out.append("Candidates (J/K choose the target of s and m):\n", style="bold")
    for index, target in enumerate(targets):
        is_chosen = index == chosen
        score = "—" if target["similarity"] is None else f"{target['similarity']:.3f}"
        out.append(
            ("▶ " if is_chosen else "  ") + f"{target['docid']} {score} {target['match']}\n",
            style="bold reverse" if is_chosen else "bold",
        )
        labels = ("candidate", "proposal")
        out.append_text(pair_diff(target["text"], proposal["text"], labels, indent="  "))
        out.append("\n")
    return out


def calibration_line(check: ThresholdCheck | None) -> str:
    """The threshold in force against the person's own verdicts (the curation threshold check)."""
    if check is None:
        return ""
    # The mode is in the detail pane (method ...); the line must fit the queue's width.
    head = f"threshold {check.threshold:.2f}"
    if not check.judged:
        return f"{head} · no verdicts yet to check it against"
    precision = "—" if check.precision is None else f"{check.precision:.2f}"
    recall = "—" if check.recall is None else f"{check.recall:.2f}"
    verdicts = f"{check.judged} verdict{'' if check.judged == 1 else 's'}"
    return f"{head} vs your {verdicts}: precision {precision} · recall {recall}"
