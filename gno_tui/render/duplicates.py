"""A near-duplicate pair as the Review screen's Duplicates tab shows it: its row, and the
older fact against the newer as a word diff."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from engine.facade import DuplicatePair, collapse_text
from gno_tui.render.diff import pair_diff


def ordered(pair: DuplicatePair) -> tuple[Any, Any]:
    """(older, newer) by creation time."""
    if pair.right.created_at < pair.left.created_at:
        return pair.right, pair.left
    return pair.left, pair.right


def pair_cells(pair: DuplicatePair) -> list[str]:
    """similarity, tier, method, older, newer."""
    older, newer = ordered(pair)
    return [
        f"{pair.similarity:.3f}",
        pair.tier,
        pair.method,
        f"{older.docid} {collapse_text(older.text)[:34]}",
        f"{newer.docid} {collapse_text(newer.text)[:34]}",
    ]


def pair_text(pair: DuplicatePair) -> Text:
    older, newer = ordered(pair)
    out = Text()
    out.append(
        f"{older.docid} (older) → {newer.docid} (newer) · similarity "
        f"{pair.similarity:.3f} · {pair.tier} · {pair.method}\n",
        style="bold",
    )
    out.append_text(pair_diff(older.text, newer.text, ("older", "newer")))
    return out
