"""What the Remember screen shows as text: the matching line over the candidates, the word
diff of a candidate against the draft, the fence preview (and the receipted spans the draft
comes close to), and the outcome of a write as it is
(outcome, uri, docid, contentHash, sync), so a person sees exactly what an agent would get."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.text import Text

from engine.facade import FenceExposure, FenceNearMiss, collapse_text
from gno_tui.render.diff import pair_diff


def outcome_text(result: Mapping[str, Any]) -> Text:
    record = result.get("record", {})
    sync = result.get("sync", {})
    lines = Text()
    lines.append(f"outcome: {result['outcome']}\n", style="bold")
    lines.append(f"uri: {record.get('uri', '—')}\n")
    lines.append(f"docid: {record.get('docid', '—')}\n")
    lines.append(f"contentHash: {record.get('contentHash', '—')}\n")
    if sync:
        lines.append(f"sync: {sync.get('status')}")
        if sync.get("error"):
            lines.append(f" ({sync['error']})", style="red")
    else:
        lines.append("sync: nothing written")
    return lines


def matching_summary(
    result: Mapping[str, Any],
    candidates: list[dict[str, Any]],
    collection: str,
    elsewhere: Sequence[dict[str, Any]] = (),
    others: Sequence[str] = (),
) -> Text:
    """How many candidates in `collection` (where the draft goes: the only place the engine
    looks), by which method and threshold; an exact duplicate first; then what the same
    lookup found in the `others` collections (`elsewhere`), or that it found nothing there."""
    block = result.get("matching", {})
    line = Text()
    if result["outcome"] == "existing":
        record = result["record"]
        line.append("exact duplicate: ", style="bold yellow")
        line.append(
            f"{record['docid']} {record['uri']} already holds this text; adding writes nothing.\n"
        )
    line.append(
        f"{len(candidates)} candidate(s) in collection {collection} · "
        f"method {block.get('mode', '?')} · threshold {block.get('threshold', '?')}"
    )
    if block.get("semanticUnavailable"):
        line.append(f" ({block['semanticUnavailable']})", style="dim")
    if elsewhere:
        where = sorted({candidate["collection"] for candidate in elsewhere})
        best = max(candidate["similarity"] for candidate in elsewhere)
        line.append(
            f"\nand {len(elsewhere)} in other collection(s): {', '.join(where)}, best "
            f"{best:.3f} (rows marked “other:”)",
            style="yellow",
        )
    elif others:
        line.append(f"\nnone in the other collection(s): {', '.join(others)}", style="dim")
    return line


def candidate_cells(candidate: dict[str, Any], *, other: bool) -> list[str | Text]:
    """A candidate's row: similarity, tier, collection (marked when it is not the draft's),
    docid, scopes and text."""
    where: str | Text = (
        Text(f"other: {candidate['collection']}", style="bold yellow")
        if other
        else candidate["collection"]
    )
    return [
        f"{candidate['similarity']:.3f}",
        candidate["match"],
        where,
        candidate["docid"],
        ",".join(candidate["scopes"]),
        collapse_text(candidate["text"])[:70],
    ]


def candidate_diff(candidate: dict[str, Any], draft_text: str) -> Text:
    body = Text()
    body.append(f"{candidate['docid']} → draft  ", style="bold")
    body.append(
        f"similarity {candidate['similarity']:.3f} · {candidate['match']} · "
        f"collection {candidate.get('collection', '?')}\n",
        style="dim",
    )
    body.append_text(pair_diff(candidate["text"], draft_text, ("candidate", "draft")))
    return body


def fence_text(fence: FenceExposure) -> str:
    """The fence preview: recall receipts already returned this exact text, so an agent
    presenting one cannot write it back (a replay); a person may still add it."""
    return (
        f"fence: {fence.receipts} recall receipt(s) returned this exact text (latest to "
        f"{fence.latest_caller} at {fence.latest_at}); an agent presenting one gets "
        "MEMORY_FENCED_REPLAY."
    )


# How many near misses the fence panel lists (closest first), and how much of each span.
NEAR_MISSES_SHOWN = 3
NEAR_MISS_CLIP = 40


def clip(text: str, width: int = NEAR_MISS_CLIP) -> str:
    body = collapse_text(text)
    return body if len(body) <= width else body[: width - 1].rstrip() + "…"


def near_misses_text(misses: Sequence[FenceNearMiss], docids: Mapping[str, str]) -> Text:
    """The receipted spans the draft is close to without being the same text (so the fence
    would let it through): each with its docid (`docids`, by record id; else the record id),
    similarity (rapidfuzz ratio of the fence forms), clipped text and how many receipts
    returned it, closest first, and why it matters."""
    out = Text()
    out.append(f"fence: {len(misses)} near miss(es)", style="bold")
    out.append(" — recalls returned these; a write that only rewords one is probably a replay.\n")
    for miss in misses[:NEAR_MISSES_SHOWN]:
        out.append(f"  {docids.get(miss.record_id, miss.record_id)}", style="bold")
        out.append(f" {miss.similarity:.1f}% ", style="yellow")
        out.append(f"“{clip(miss.text)}”")
        out.append(f" (recalled {miss.receipts}×)\n", style="dim")
    if len(misses) > NEAR_MISSES_SHOWN:
        out.append(f"  and {len(misses) - NEAR_MISSES_SHOWN} more\n", style="dim")
    out.rstrip()
    return out


def waiting_text(text: str, scopes: Sequence[str]) -> str:
    """What the candidates pane says before there are candidates: a draft without a scope is
    no mistake yet (the Scopes box is below the text), so it says what to do, not a code."""
    if collapse_text(text) and not scopes:
        return "Give the fact a scope (Scopes, below: e.g. user:alice) to see its near-duplicates."
    return "Type a fact to see its near-duplicates."
