"""Undo (the workbench's `z`): take back a person's latest curation decision.

The decision log is the journal. A person's newest decision that is not itself an undo and has
not been undone yet is reversed through the same review path, and the reversal is logged as
`undo:<action>` with `undoes: <decision id>`, so the log tells the whole story and the next
`z` goes one step further back.

What can be undone: curation changes (confirm, stale, use policy, confidence: the fields go
back to exactly what they were), retire (the fact is restored) and restore (retired again
with its old reason). Review decisions write or supersede facts, and keep-both only records a
judgement; undoing them is refused with what to do instead, since nothing is ever deleted.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from engine import review, tables
from engine.errors import MemoryFailure

if TYPE_CHECKING:
    from engine.store import MemoryEngine

CURATION_KEYS = frozenset({"provenance", "usePolicy", "freshness"})


@dataclass(frozen=True)
class Undone:
    action: str  # the decision taken back
    target: str  # the fact's uri


def undo_last(engine: MemoryEngine, *, actor: str) -> Undone:
    """Reverse `actor`'s newest decision that is not undone yet (see the module's note)."""
    with Session(engine.db) as session:
        rows = session.scalars(
            select(tables.DecisionRow)
            .where(tables.DecisionRow.actor == actor)  # type: ignore[arg-type]
            .order_by(tables.DecisionRow.id.desc())  # type: ignore[union-attr]
        ).all()
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
    before = latest.detail.get("before")
    if latest.action == "retire":
        review.restore(engine, ref=latest.target, actor=actor, undoes=latest.id)
    elif latest.action == "restore":
        reason = latest.detail.get("reason") or "undo of a restore"
        review.retire(engine, ref=latest.target, actor=actor, reason=reason, undoes=latest.id)
    elif isinstance(before, dict) and before and set(before) <= CURATION_KEYS:
        review.set_curation(
            engine,
            ref=latest.target,
            actor=actor,
            action=latest.action,
            changes=before,
            undoes=latest.id,
        )
    else:
        raise MemoryFailure(
            "MEMORY_UNDO_UNSUPPORTED",
            f"The latest decision ({latest.action} on {latest.target}) cannot be undone: it "
            "wrote or judged facts. Supersede or retire the fact instead; nothing is deleted.",
        )
    return Undone(latest.action, latest.target)
