"""A near-duplicate pair as the Review screen's Duplicates tab shows it: its row (with the
scopes of each side), the older fact against the newer as a word diff, and the line under the
list that says what the list holds."""

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


def scopes_of(fact: Any) -> str:
    return ", ".join(fact.scopes) or "no scope"


def cross_scope(pair: DuplicatePair) -> bool:
    """The two facts are not in the same scopes: retiring one takes the fact out of a scope."""
    return set(pair.left.scopes) != set(pair.right.scopes)


def scope_cell(pair: DuplicatePair) -> str:
    """Both sides' scopes: once when they are the same, else older ↔ newer."""
    older, newer = ordered(pair)
    if not cross_scope(pair):
        return scopes_of(older)
    return f"{scopes_of(older)} ↔ {scopes_of(newer)}"


def pair_cells(pair: DuplicatePair) -> list[str]:
    """similarity, tier, method, scopes, older, newer."""
    older, newer = ordered(pair)
    return [
        f"{pair.similarity:.3f}",
        pair.tier,
        pair.method,
        scope_cell(pair),
        f"{older.docid} {collapse_text(older.text)}",
        f"{newer.docid} {collapse_text(newer.text)}",
    ]


def scopes_lost(gone: Any, kept: Any) -> str:
    """What retiring `gone` (a duplicate of `kept`) takes the fact out of."""
    lost = [scope for scope in gone.scopes if scope not in kept.scopes]
    return f"leaves {', '.join(lost)} without it" if lost else "loses no scope"


def pair_text(pair: DuplicatePair) -> Text:
    older, newer = ordered(pair)
    out = Text()
    out.append(
        f"{older.docid} (older, in {scopes_of(older)}) → {newer.docid} (newer, in "
        f"{scopes_of(newer)}) · similarity {pair.similarity:.3f} · {pair.tier} · "
        f"{pair.method}\n",
        style="bold",
    )
    if cross_scope(pair):
        out.append(
            f"Cross-scope pair: r (retire the older) {scopes_lost(older, newer)}; "
            f"R (retire the newer) {scopes_lost(newer, older)}; b keeps both.\n",
            style="yellow",
        )
    out.append_text(pair_diff(older.text, newer.text, ("older", "newer")))
    return out


def pairs_summary(
    pairs: list[DuplicatePair], *, scope: str | None, total: int, compared: int, visible: int
) -> str:
    """The line under the pairs: how many, where, how many cross scopes, and what a cap left
    out (only the best pairs are listed; only the newest facts of a big view are compared)."""
    where = "across all scopes" if scope is None else f"in scope {scope}"
    if total > len(pairs):
        line = f"best {len(pairs)} of {total:,} near-duplicate pairs {where}"
    else:
        line = f"{len(pairs)} near-duplicate pair(s) {where}"
    if crossing := sum(cross_scope(pair) for pair in pairs):
        line += f" · {crossing} cross-scope"
    if compared < visible:
        line += f" · among the newest {compared:,} of {visible:,} facts"
        line += ": pick a scope to narrow" if scope is None else ""
    return line
