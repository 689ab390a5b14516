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

Undo takes back the latest decision or says why it cannot and changes nothing: it never skips
to an older one, which the person did not ask for and might not notice. What can never be taken
back (deleted or purged receipts) and what no longer can (its fact was superseded or retired
since; its collection's policy changed since) stop `z` there, with the reason; `@` shows the
log. In a batch, what can be taken back is, and the rest is named.

What is undone, and how: curation changes (confirm, stale, use policy, confidence: the fields
go back to exactly what they were), retire (restored) and restore (retired again with its old
reason) here; a policy change in engine/curation/undo_policy.py (a step that relaxes a policy
waits for the person's yes: NeedsYes); review decisions, keep-both and chain edits in
engine/curation/undo_review.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.contract.errors import MemoryFailure
from engine.curation import review, undo_policy, undo_review
from engine.curation.journal import batch
from engine.curation.undo_policy import SET_POLICY, PolicyChange
from engine.curation.undo_review import base_action
from engine.storage.queries.curation import decisions_by
from engine.storage.schema import tables

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

CURATION_KEYS = frozenset({"provenance", "usePolicy", "freshness"})
# Why a kind of decision is never taken back, for the refusal.
NOT_UNDOABLE = {
    "delete-receipts": "deleted receipts are gone (the decision log keeps their digests)",
    "purge-receipts": "purged receipts are gone (the decision log keeps their digests)",
}
# Refusals that mean "the store moved on since": that decision cannot be taken back now.
MOVED_ON = frozenset({"MEMORY_SUPERSEDE_CONFLICT", "MEMORY_NOT_FOUND", "MEMORY_PROPOSAL_DECIDED",
                      "MEMORY_PREDECESSOR_HASH_MISMATCH", "MEMORY_UNDO_UNSUPPORTED"})  # fmt: skip


class NeedsYes(MemoryFailure):
    """The step would relax a collection's policy, which asks first: refused until it is asked
    again with `yes=decision` (the id of the step's newest decision, or undo for a redo)."""

    def __init__(self, decision: int, question: str) -> None:
        super().__init__("MEMORY_UNDO_UNSUPPORTED", f"{question} Nothing was changed: the "
                         "workbench asks y/n on z (and ctrl+z) first.")  # fmt: skip
        self.decision, self.question = decision, question


@dataclass(frozen=True)
class Undone:
    action: str  # the decision taken back (the newest, for a batch)
    target: str  # the fact's uri (proposal:<id>, a pair, receipts, a collection)
    count: int = 1  # decisions taken back in this step (a batch: all of it)
    not_undone: tuple[str, ...] = ()  # decisions of this batch that could not be, and why


@dataclass(frozen=True)
class Redone:
    action: str  # the decision done again
    target: str  # the fact's uri
    count: int = 1


def _decisions(engine: MemoryEngine, actor: str) -> Sequence[tables.DecisionRow]:
    """The actor's decisions, newest first."""
    with engine.session() as session:
        return decisions_by(session, actor)


def _curation(row: tables.DecisionRow, side: str) -> dict[str, Any] | None:
    """The curation fields a decision found ("before") or set ("after"), if it is one."""
    changes = row.detail.get(side)
    ok = isinstance(changes, dict) and changes and set(changes) <= CURATION_KEYS
    return changes if ok and isinstance(changes, dict) else None


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
            review.retire(
                engine,
                ref=decision.target,
                actor=actor,
                reason=reason,
                undoes=journal.get("undoes"),
                redoes=journal.get("redoes"),
            )
        else:
            review.restore(
                engine,
                ref=decision.target,
                actor=actor,
                undoes=journal.get("undoes"),
                redoes=journal.get("redoes"),
            )
        return True
    # Curation: forward puts the fields the decision set, back the ones it found.
    changes = _curation(decision, "after" if forward else "before")
    if changes is not None:
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


def _why_not(engine: MemoryEngine, row: tables.DecisionRow) -> str | None:
    """Why `row` cannot be taken back now; None when it can."""
    action = base_action(row)
    if action in NOT_UNDOABLE:
        return NOT_UNDOABLE[action]
    if action == SET_POLICY:
        try:
            undo_policy.back(engine, row)
        except MemoryFailure as failure:
            return failure.message
        return None
    if action in ("retire", "restore") or _curation(row, "before") is not None:
        return None
    return None if undo_review.handles(action) else "gno-tui has no way to take it back"


def _cannot(step: Sequence[tables.DecisionRow], why: str) -> MemoryFailure:
    first = step[0]
    what = f"{first.action} on {first.target}"
    if len(step) > 1:
        what = f"a batch of {len(step)} ({what}, …)"
    return MemoryFailure(
        "MEMORY_UNDO_UNSUPPORTED",
        f"Cannot undo your latest decision, {what}: {why}. Nothing was undone, and older "
        "decisions stay as they are (`@` shows the log).",
    )


def _ask_first(
    decision: int | None, changes: Sequence[PolicyChange], yes: int | None, verb: str
) -> None:
    """NeedsYes when the step relaxes a policy and the person has not said yes to it. A yes
    given to another step (a decision came meanwhile) applies to nothing."""
    if yes is not None and yes != decision:
        raise MemoryFailure(
            "MEMORY_UNDO_UNSUPPORTED",
            "Your latest step is another one since you said yes; nothing was changed. Press "
            "the key again to see what it would take back.",
        )
    relaxing = [change.question(verb) for change in changes if change.relaxes]
    if relaxing and yes is None:
        raise NeedsYes(decision or 0, " ".join(relaxing))


def undo_last(engine: MemoryEngine, *, actor: str, yes: int | None = None) -> Undone:
    """Reverse `actor`'s newest decision (or batch) that is not undone yet; see the module.
    `yes`: the decision id of a NeedsYes the person said yes to."""
    rows = _decisions(engine, actor)
    undone = {row.detail.get("undoes") for row in rows if row.action.startswith("undo:")}
    live = [row for row in rows if not row.action.startswith("undo:") and row.id not in undone]
    if not live:
        raise MemoryFailure(
            "MEMORY_NOTHING_TO_UNDO",
            f"{actor} has no decision left to undo; `@` shows the decision log.",
        )
    step = _step_of(live, live[0])
    for row in step:
        if (why := _why_not(engine, row)) is not None:
            raise _cannot(step, why if len(step) == 1 else f"{row.action} on {row.target}: {why}")
    policies = [undo_policy.back(engine, row) for row in step if base_action(row) == SET_POLICY]
    _ask_first(step[0].id, policies, yes, "Undoing your policy change")
    done: list[tables.DecisionRow] = []
    left: list[str] = []
    gone: set[str] = set()  # facts this step withdrew: decisions on them go with them
    with batch():  # the undos of one step are one step for redo
        for row in step:
            try:
                _reverse(engine, row, actor, gone)
            except MemoryFailure as failure:
                if failure.code not in MOVED_ON:
                    raise
                left.append(f"{row.action} on {row.target}: {failure.message}")
            else:
                done.append(row)
    if not done:
        raise _cannot(step, "; ".join(left))
    return Undone(base_action(done[0]), done[0].target, len(done), tuple(left))


def _reverse(engine: MemoryEngine, row: tables.DecisionRow, actor: str, gone: set[str]) -> None:
    if row.target in gone:
        undo_review.went_with(engine, row, actor)
    elif base_action(row) == SET_POLICY:
        undo_policy.apply(engine, undo_policy.back(engine, row), actor=actor, undoes=row.id)
    elif not _enact(engine, row, actor, forward=False, journal={"undoes": row.id}):
        undo_review.reverse(engine, row, actor, gone)  # _why_not said it is one of these


def redo_last(engine: MemoryEngine, *, actor: str, yes: int | None = None) -> Redone:
    """Do again what `actor`'s newest undo (or batch of undos) took back, unless a new
    decision came since. `yes`: the undo id of a NeedsYes the person said yes to."""
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
    pairs = [(undo, by_id[undo.detail["undoes"]]) for undo in step]
    try:
        policies = [
            undo_policy.again(engine, decision, undo)
            for undo, decision in pairs
            if base_action(decision) == SET_POLICY
        ]
    except MemoryFailure as failure:
        raise MemoryFailure(
            "MEMORY_UNDO_UNSUPPORTED", f"Cannot redo: {failure.message}. Nothing was redone."
        ) from None
    _ask_first(newest.id, policies, yes, "Redoing your policy change")
    # Confirms that went with the fact their add wrote: that add is decided again confirmed.
    confirmed = frozenset(
        str(undo.detail["withdrawn"])
        for undo, decision in pairs
        if undo.detail.get("withdrawn") and base_action(decision) == "confirm"
    )
    with batch():
        for undo, decision in pairs:
            if not undo.detail.get("withdrawn"):  # else written anew by its add's redo
                _do_again(engine, decision, undo, actor, confirmed)
    # Named by the newest decision of the step, as its undo was.
    first = by_id[step[-1].detail["undoes"]]
    return Redone(base_action(first), first.target, len(step))


def _do_again(
    engine: MemoryEngine,
    decision: tables.DecisionRow,
    undo: tables.DecisionRow,
    actor: str,
    confirmed: frozenset[str],
) -> None:
    if base_action(decision) == SET_POLICY:
        again = undo_policy.again(engine, decision, undo)
        undo_policy.apply(engine, again, actor=actor, redoes=undo.id)
    elif not _enact(engine, decision, actor, forward=True, journal={"redoes": undo.id}) and (
        not undo_review.forward(engine, decision, undo, actor, confirmed)
    ):
        # Only decisions undo_last can take back are ever undone.
        raise MemoryFailure(
            "MEMORY_UNDO_UNSUPPORTED",
            f"{decision.action} on {decision.target} cannot be done again from the log.",
        )
