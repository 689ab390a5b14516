"""Undo and redo (the workbench's `z` and `ctrl+z`): take back a person's latest curation
decision, or the latest undo.

The decision log is the journal. A person's newest decision that is not itself an undo and has
not been undone yet is reversed through the same review path, and the reversal is logged as
`undo:<action>` with `undoes: <decision id>`, so the log tells the whole story and the next
`z` goes one step further back. Redo walks the same log the other way: the newest undo not
redone yet is taken back by doing the undone decision again, logged as `redo:<action>` with
`redoes: <undo id>`. A new decision ends the redo trail, as in an editor; a redo is itself a
decision that `z` can undo.

What can be undone: curation changes (confirm, stale, use policy, confidence: the fields go
back to exactly what they were), retire (the fact is restored) and restore (retired again
with its old reason). Review decisions write or supersede facts, and keep-both only records a
judgement; undoing them is refused with what to do instead, since nothing is ever deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.curation import review
from engine.storage import tables

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

CURATION_KEYS = frozenset({"provenance", "usePolicy", "freshness"})


@dataclass(frozen=True)
class Undone:
    action: str  # the decision taken back
    target: str  # the fact's uri


@dataclass(frozen=True)
class Redone:
    action: str  # the decision done again
    target: str  # the fact's uri


def _decisions(engine: MemoryEngine, actor: str) -> Sequence[tables.DecisionRow]:
    """The actor's decisions, newest first."""
    with Session(engine.db) as session:
        return session.scalars(
            select(tables.DecisionRow)
            .where(tables.DecisionRow.actor == actor)
            .order_by(tables.DecisionRow.id.desc())
        ).all()


def _base_action(row: tables.DecisionRow) -> str:
    # A redo did the decision again: undoing it is undoing that decision.
    return row.action.removeprefix("redo:")


def _enact(
    engine: MemoryEngine,
    decision: tables.DecisionRow,
    actor: str,
    *,
    forward: bool,
    journal: dict[str, int | None],
) -> bool:
    """Do `decision` again (forward) or its reverse, through the review path, logged with
    `journal` (undoes / redoes). False when the decision is not one that can be."""
    action = _base_action(decision)
    if action in ("retire", "restore"):
        wanted = action if forward else {"retire": "restore", "restore": "retire"}[action]
        if wanted == "retire":
            # A restore's log keeps the reason the fact had, so it is retired with it again.
            reason = decision.detail.get("reason") or (
                f"{'redo' if forward else 'undo'} of a {action}"
            )
            review.retire(engine, ref=decision.target, actor=actor, reason=reason, **journal)
        else:
            review.restore(engine, ref=decision.target, actor=actor, **journal)
        return True
    # Curation: forward puts the fields the decision set, back the ones it found.
    changes = decision.detail.get("after" if forward else "before")
    if isinstance(changes, dict) and changes and set(changes) <= CURATION_KEYS:
        review.set_curation(
            engine, ref=decision.target, actor=actor, action=action, changes=changes, **journal
        )
        return True
    return False


def undo_last(engine: MemoryEngine, *, actor: str) -> Undone:
    """Reverse `actor`'s newest decision that is not undone yet (see the module's note)."""
    rows = _decisions(engine, actor)
    undone = {row.detail.get("undoes") for row in rows if row.action.startswith("undo:")}
    latest = next(
        (row for row in rows if not row.action.startswith("undo:") and row.id not in undone),
        None,
    )
    if latest is None or latest.id is None:
        raise MemoryFailure(
            "MEMORY_NOTHING_TO_UNDO",
            f"{actor} has no decision left to undo; `@` shows the decision log.",
        )
    if _enact(engine, latest, actor, forward=False, journal={"undoes": latest.id}):
        return Undone(_base_action(latest), latest.target)
    if latest.target == "receipts":
        raise MemoryFailure(
            "MEMORY_UNDO_UNSUPPORTED",
            f"The latest decision ({latest.action}) cannot be undone: deleted receipts are "
            "gone; the decision log keeps their digests.",
        )
    raise MemoryFailure(
        "MEMORY_UNDO_UNSUPPORTED",
        f"The latest decision ({latest.action} on {latest.target}) cannot be undone: it "
        "wrote or judged facts. Supersede or retire the fact instead; nothing is deleted.",
    )


def redo_last(engine: MemoryEngine, *, actor: str) -> Redone:
    """Do again the decision `actor`'s newest undo took back, unless a new decision came since."""
    rows = _decisions(engine, actor)
    by_id = {row.id: row for row in rows}
    redone = {row.detail.get("redoes") for row in rows if row.action.startswith("redo:")}
    undo = None
    for row in rows:
        if row.action.startswith("redo:") or row.id in redone:
            continue
        if row.action.startswith("undo:"):
            undo = row
        break  # the newest live entry: an undo to redo, or a new decision that ends the trail
    if undo is None or undo.id is None or undo.detail.get("undoes") not in by_id:
        raise MemoryFailure(
            "MEMORY_NOTHING_TO_REDO",
            f"{actor} has no undo to redo (a new decision since the last undo ends the "
            "trail); `@` shows the decision log.",
        )
    decision = by_id[undo.detail["undoes"]]
    if not _enact(engine, decision, actor, forward=True, journal={"redoes": undo.id}):
        # Only decisions undo_last can take back are ever undone.
        raise MemoryFailure(
            "MEMORY_UNDO_UNSUPPORTED",
            f"{decision.action} on {decision.target} cannot be done again from the log.",
        )
    return Redone(_base_action(decision), decision.target)
