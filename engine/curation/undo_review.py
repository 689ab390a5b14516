"""Undo and redo of the decisions that wrote or judged facts: review decisions on proposals,
keep-both verdicts on duplicate pairs, and chain edits (engine/curation/chain_edits.py).

Nothing is ever deleted, so taking one back is a new write that puts the store where it was:

- a review decision that wrote a fact of its own (add, edit) retires that fact; one that
  superseded a fact (supersede, merge, a held keyed update) reverts the chain: a successor
  with the superseded fact's text becomes the head. Either way the proposal is pending again,
  and a rejected or "existing" proposal (nothing written) is simply pending again;
- a keep-both verdict is withdrawn: the pair is offered again;
- a chain supersede or revert is reverted the same way, with the text the head had before.

Doing one again (redo) puts the decision back: the retired fact is restored (the same fact),
a reverted chain gets the written text again as its head, the proposal its decided state; a
verdict is given again, an edited text appended again. A fact
changed since by someone else (retired, superseded) cannot be taken back safely: refused with
MEMORY_SUPERSEDE_CONFLICT, which undo passes over (engine/curation/undo.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlalchemy import update
from sqlalchemy.orm import Session
from sqlmodel import col

from engine.contract.errors import MemoryFailure
from engine.curation import review
from engine.curation.chain_edits import (
    CHAIN_ACTIONS,
    ChainEdit,
    append_successor,
    edit_chain,
    log_chain_step,
)
from engine.curation.journal import journal_detail
from engine.memory import browse
from engine.memory.browse import KEEP_BOTH
from engine.storage import tables
from engine.storage.database import bump_generation
from engine.storage.records import get_fact

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

WROTE = ("added", "superseded", "merged")  # proposal states whose decision wrote a fact
JOURNAL_KEYS = ("undoes", "redoes", "batch")


def base_action(row: tables.DecisionRow) -> str:
    # A redo did the decision again: undoing it is undoing that decision.
    return row.action.removeprefix("redo:")


def reverse(engine: MemoryEngine, row: tables.DecisionRow, actor: str) -> bool:
    """Take back `row` (see the module's note); False when it is none of these decisions."""
    action = base_action(row)
    if action.startswith("review:"):
        _reverse_review(engine, row, action, actor)
    elif action == KEEP_BOTH:
        log_chain_step(engine, actor=actor, action=f"undo:{KEEP_BOTH}", target=row.target,
                       detail=journal_detail(row.id, None))  # fmt: skip
    elif action in CHAIN_ACTIONS:
        _reverse_chain(engine, row, action, actor)
    else:
        return False
    return True


def forward(
    engine: MemoryEngine, decision: tables.DecisionRow, undo: tables.DecisionRow, actor: str
) -> bool:
    """Do `decision` again, as the redo of `undo`; False when it is none of these decisions."""
    action = base_action(decision)
    after: dict[str, Any] = decision.detail.get("after") or {}
    if action.startswith("review:"):
        _redo_review(engine, decision, undo, action, actor)
    elif action == KEEP_BOTH:
        kept = {k: v for k, v in decision.detail.items() if k not in JOURNAL_KEYS}
        log_chain_step(engine, actor=actor, action=f"redo:{KEEP_BOTH}", target=decision.target,
                       detail={**kept, **journal_detail(None, undo.id)})  # fmt: skip
    elif action in CHAIN_ACTIONS:
        head = browse.chain(engine, undo.target)[-1]
        edit = ChainEdit(head.uri, head.content_hash, str(after.get("text", "")), actor, "redo",
                         revert=action == "chain:revert")  # fmt: skip
        edit_chain(engine, edit, redoes=undo.id)
    else:
        return False
    return True


def _reverse_review(engine: MemoryEngine, row: tables.DecisionRow, action: str, actor: str) -> None:
    proposal_id = _proposal_id(row)
    after: dict[str, Any] = row.detail.get("after") or {}
    wrote = after.get("resolution") if after.get("state") in WROTE else None
    effect: dict[str, Any] = {"proposal": proposal_id, "after": after}
    if wrote:
        fact = _still_current(engine, wrote)
        if fact.supersedes:  # it superseded a fact: that fact's text is the head again
            effect["reverted"] = _append(engine, fact, _text(engine, fact.supersedes[0]), actor)
        else:  # its own fact: retired, and this retire is the undo's log entry
            reason = f"undo of {action} (proposal #{proposal_id})"
            review.retire(engine, ref=fact.uri, actor=actor, reason=reason, undoes=row.id,
                          extra=effect, undo_of=action)  # fmt: skip
    _set_proposal(engine, proposal_id, {"state": "pending"}, actor=None)
    if not wrote or "reverted" in effect:
        log_chain_step(engine, actor=actor, action=f"undo:{action}", target=row.target,
                       detail={**effect, **journal_detail(row.id, None)})  # fmt: skip


def _redo_review(
    engine: MemoryEngine,
    decision: tables.DecisionRow,
    undo: tables.DecisionRow,
    action: str,
    actor: str,
) -> None:
    """The proposal decided again as it was: the fact its undo retired comes back, a reverted
    chain gets the written text again, and the proposal's state and resolution are restored."""
    proposal_id = _proposal_id(decision)
    after: dict[str, Any] = dict(decision.detail.get("after") or {})
    if undo.target.startswith("proposal:") and undo.detail.get("reverted"):
        head = _still_current(engine, str(undo.detail["reverted"]))
        wrote = _text(engine, str(after.get("resolution")))
        after["resolution"] = _append(engine, head, wrote, actor)
    elif not undo.target.startswith("proposal:"):  # the undo retired the fact: it is back
        review.restore(engine, ref=undo.target, actor=actor, redoes=undo.id, journal_as=action,
                       extra={"proposal": proposal_id, "after": after})  # fmt: skip
    _set_proposal(engine, proposal_id, after, actor=actor)
    if undo.target.startswith("proposal:"):
        log_chain_step(engine, actor=actor, action=f"redo:{action}", target=decision.target,
                       detail={"proposal": proposal_id, "after": after,
                               **journal_detail(None, undo.id)})  # fmt: skip


def _reverse_chain(engine: MemoryEngine, row: tables.DecisionRow, action: str, actor: str) -> None:
    after: dict[str, Any] = row.detail.get("after") or {}
    before: dict[str, Any] = row.detail.get("before") or {}
    fact = _still_current(engine, str(after.get("uri")))
    text = str(before.get("text"))
    result = append_successor(engine, head=fact.uri, head_hash=fact.content_hash,
                              text=text, actor=actor, session="undo")  # fmt: skip
    log_chain_step(
        engine,
        actor=actor,
        action=f"undo:{action}",
        target=result["record"]["uri"],
        detail={
            "before": {"uri": fact.uri, "text": fact.text},
            "after": {"uri": result["record"]["uri"], "text": before.get("text")},
            **journal_detail(row.id, None),
        },
    )


def _text(engine: MemoryEngine, uri: str) -> str:
    with Session(engine.db) as session:
        row = get_fact(session, ref=uri)
    if row is None:
        raise MemoryFailure("MEMORY_NOT_FOUND", f"No fact {uri}: the chain cannot be reverted.")
    return row.text


def _append(engine: MemoryEngine, head: tables.FactRow, text: str, actor: str) -> str:
    """A successor of `head` that says `text`; its uri."""
    result = append_successor(engine, head=head.uri, head_hash=head.content_hash,
                              text=text, actor=actor, session="undo")  # fmt: skip
    return str(result["record"]["uri"])


def _still_current(engine: MemoryEngine, uri: str) -> tables.FactRow:
    with Session(engine.db, expire_on_commit=False) as session:
        fact = get_fact(session, ref=uri)
    if fact is None:
        raise MemoryFailure("MEMORY_NOT_FOUND", f"No fact {uri}.")
    if fact.superseded_by or fact.retired_at:
        raise MemoryFailure(
            "MEMORY_SUPERSEDE_CONFLICT",
            f"{fact.docid} was superseded or retired since: taking the decision back would "
            "undo that too. Open its chain (enter in the Library) to decide.",
        )
    return fact


def _set_proposal(
    engine: MemoryEngine, proposal_id: int, after: dict[str, Any], *, actor: str | None
) -> None:
    """The proposal's state as `after` has it: pending again (an undo), or decided (a redo)."""
    state = str(after.get("state", "pending"))
    decided = state != "pending"
    with Session(engine.db) as session:
        session.execute(
            update(tables.ProposalRow)
            .where(col(tables.ProposalRow.id) == proposal_id)
            .values(
                state=state,
                resolution=after.get("resolution") if decided else None,
                decided_at=engine.now() if decided else None,
                decided_by=actor if decided else None,
            )
        )
        bump_generation(session)
        session.commit()


def _proposal_id(row: tables.DecisionRow) -> int:
    # A review decision targets its proposal; an undo that retired the written fact (and its
    # redo) targets the fact and names the proposal in its detail.
    named = row.detail.get("proposal")
    return int(named) if named is not None else int(row.target.removeprefix("proposal:"))
