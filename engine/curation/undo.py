"""Undo and redo (the workbench's `z` and `ctrl+z`): take back a person's latest decision, or
the latest undo.

The decision log is the journal. A person's newest decision that is not itself an undo and has
not been undone yet is reversed, and the reversal is logged as `undo:<action>` with
`undoes: <decision id>`, so the log tells the whole story and the next `z` goes one step
further back. Redo walks the same log the other way: the newest undo not redone yet is taken
back by doing the undone decision again, logged as `redo:<action>` with `redoes: <undo id>`.
A new decision ends the redo trail, as in an editor; a redo is itself a decision that `z` can
undo. Decisions logged in one batch (engine/curation/journal.py: a batch decision, a review
decision with its confirm) are one step each way.

What is undone, and how: curation changes (confirm, stale, use policy, confidence: the fields
go back to exactly what they were), retire (restored) and restore (retired again with its old
reason) here; review decisions, keep-both and chain edits in engine/curation/undo_review.py.
A decision that cannot be taken back (deleted receipts are gone; a policy change is made
again with `p`, where relaxing asks first) or no longer can (its fact was superseded or retired
since) is passed over, and said so, so it never blocks the older decisions behind it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.curation import review, undo_review
from engine.curation.journal import batch
from engine.curation.undo_review import base_action
from engine.storage import tables

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

CURATION_KEYS = frozenset({"provenance", "usePolicy", "freshness"})
# Why a kind of decision is never taken back, for the note that passes over it.
NOT_UNDOABLE = {
    "delete-receipts": "deleted receipts are gone; the decision log keeps their digests",
    "purge-receipts": "purged receipts are gone; the decision log keeps their digests",
    "set-policy": "choose the policy again with p (relaxing asks first)",
}
# Refusals that mean "the store moved on since": that decision is passed over, not retried.
MOVED_ON = frozenset({"MEMORY_SUPERSEDE_CONFLICT", "MEMORY_NOT_FOUND", "MEMORY_PROPOSAL_DECIDED",
                      "MEMORY_PREDECESSOR_HASH_MISMATCH"})  # fmt: skip


@dataclass(frozen=True)
class Undone:
    action: str  # the decision taken back (the newest, for a batch)
    target: str  # the fact's uri (proposal:<id>, a pair, receipts)
    count: int = 1  # decisions taken back in this step (a batch: all of it)
    passed_over: tuple[str, ...] = ()  # newer decisions that could not be, and why


@dataclass(frozen=True)
class Redone:
    action: str  # the decision done again
    target: str  # the fact's uri
    count: int = 1


def _decisions(engine: MemoryEngine, actor: str) -> Sequence[tables.DecisionRow]:
    """The actor's decisions, newest first."""
    with Session(engine.db) as session:
        return session.scalars(
            select(tables.DecisionRow)
            .where(tables.DecisionRow.actor == actor)
            .order_by(tables.DecisionRow.id.desc())
        ).all()


def _enact(
    engine: MemoryEngine,
    decision: tables.DecisionRow,
    actor: str,
    *,
    forward: bool,
    journal: dict[str, int | None],
) -> bool:
    """Do `decision` again (forward) or its reverse, logged with `journal` (undoes / redoes).
    False when the decision is not one that can be."""
    action = base_action(decision)
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


def _step_of(
    rows: Sequence[tables.DecisionRow], first: tables.DecisionRow
) -> list[tables.DecisionRow]:
    """`first` and, when it is part of a batch, the rest of that batch among `rows`."""
    tag = first.detail.get("batch")
    return [first] if tag is None else [row for row in rows if row.detail.get("batch") == tag]


def _why_not(row: tables.DecisionRow) -> str:
    return NOT_UNDOABLE.get(row.action, "it cannot be taken back")


def undo_last(engine: MemoryEngine, *, actor: str) -> Undone:
    """Reverse `actor`'s newest decision (or batch) that is not undone yet; see the module."""
    rows = _decisions(engine, actor)
    undone = {row.detail.get("undoes") for row in rows if row.action.startswith("undo:")}
    live = [row for row in rows if not row.action.startswith("undo:") and row.id not in undone]
    passed: list[str] = []
    tried: set[int | None] = set()
    for first in live:
        if first.id in tried:
            continue
        step = _step_of(live, first)
        tried |= {row.id for row in step}
        done: list[tables.DecisionRow] = []
        with batch():  # the undos of one step are one step for redo
            for row in step:
                try:
                    if _reverse(engine, row, actor):
                        done.append(row)
                    else:
                        passed.append(f"{row.action} on {row.target}: {_why_not(row)}")
                except MemoryFailure as failure:
                    if failure.code not in MOVED_ON:
                        raise
                    passed.append(f"{row.action} on {row.target}: {failure.message}")
        if done:
            return Undone(base_action(done[0]), done[0].target, len(done), tuple(passed))
    if passed:
        raise MemoryFailure(
            "MEMORY_UNDO_UNSUPPORTED",
            "Nothing left that can be undone: " + "; ".join(passed),
        )
    raise MemoryFailure(
        "MEMORY_NOTHING_TO_UNDO",
        f"{actor} has no decision left to undo; `@` shows the decision log.",
    )


def _reverse(engine: MemoryEngine, row: tables.DecisionRow, actor: str) -> bool:
    if row.id is None:
        return False
    if _enact(engine, row, actor, forward=False, journal={"undoes": row.id}):
        return True
    return undo_review.reverse(engine, row, actor)


def redo_last(engine: MemoryEngine, *, actor: str) -> Redone:
    """Do again what `actor`'s newest undo (or batch of undos) took back, unless a new
    decision came since."""
    rows = _decisions(engine, actor)
    by_id = {row.id: row for row in rows}
    redone = {row.detail.get("redoes") for row in rows if row.action.startswith("redo:")}
    live = [row for row in rows if not row.action.startswith("redo:") and row.id not in redone]
    newest = live[0] if live else None  # an undo to redo, or a new decision that ends the trail
    if (
        newest is None
        or not newest.action.startswith("undo:")
        or newest.detail.get("undoes") not in by_id
    ):
        raise MemoryFailure(
            "MEMORY_NOTHING_TO_REDO",
            f"{actor} has no undo to redo (a new decision since the last undo ends the "
            "trail); `@` shows the decision log.",
        )
    step = [row for row in _step_of(live, newest) if row.action.startswith("undo:")]
    with batch():
        for undo in step:
            decision = by_id[undo.detail["undoes"]]
            if not _enact(engine, decision, actor, forward=True, journal={"redoes": undo.id}) and (
                not undo_review.forward(engine, decision, undo, actor)
            ):
                # Only decisions undo_last can take back are ever undone.
                raise MemoryFailure(
                    "MEMORY_UNDO_UNSUPPORTED",
                    f"{decision.action} on {decision.target} cannot be done again from the log.",
                )
    # Named by the newest decision of the step, as its undo was.
    first = by_id[step[-1].detail["undoes"]]
    return Redone(base_action(first), first.target, len(step))
