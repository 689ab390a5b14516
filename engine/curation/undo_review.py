"""Undo and redo of the decisions that wrote or judged facts: review decisions on proposals,
keep-both verdicts on duplicate pairs, and chain edits (engine/curation/chain_edits.py).

Taking one back puts the store where it was before the decision:

- a review decision that wrote a fact of its own (add, edit, a held keyed write accepted)
  withdraws that fact: its file and its rows leave the store, as before the add (retiring it
  would leave a retired fact the store never had, counted under Retired). The log keeps its
  uri, docid and text. Decisions of the same step on that fact (the confirm of `C`) go with it.
- one that superseded a fact (supersede, merge, a held keyed update) reverts the chain: a
  successor with the superseded fact's text becomes the head (the chain keeps the story).
- either way the proposal is pending again; a rejected or "existing" one (nothing written) is
  simply pending again;
- a keep-both verdict is withdrawn: the pair is offered again;
- a chain supersede or revert is reverted the same way, with the text the head had before.

Doing one again (redo): a withdrawn fact's proposal is decided again as it was (the same
action, text and confirm), which writes the fact anew; a reverted chain gets the written text
again as its head, the proposal its decided state; a verdict is given again, an edited text
appended again. A fact changed since by someone else (retired, superseded) cannot be taken back
safely: refused with MEMORY_SUPERSEDE_CONFLICT (engine/curation/undo.py says so)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

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
from engine.storage.queries.curation import delete_scopes_and_embeddings
from engine.storage.queries.review import set_proposal_state
from engine.storage.reads.records import get_fact
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

WROTE = ("added", "superseded", "merged")  # proposal states whose decision wrote a fact
JOURNAL_KEYS = ("undoes", "redoes", "batch")


def base_action(row: tables.DecisionRow) -> str:
    # A redo did the decision again: undoing it is undoing that decision.
    return row.action.removeprefix("redo:")


def handles(action: str) -> bool:
    """Whether `action` (a base action) is one this module takes back."""
    return action.startswith("review:") or action == KEEP_BOTH or action in CHAIN_ACTIONS


def reverse(engine: MemoryEngine, row: tables.DecisionRow, actor: str, gone: set[str]) -> bool:
    """Take back `row` (see the module's note); False when it is none of these decisions. The
    uri of a fact it withdraws is added to `gone`."""
    action = base_action(row)
    if action.startswith("review:"):
        _reverse_review(engine, row, action, actor, gone)
    elif action == KEEP_BOTH:
        log_chain_step(engine, actor=actor, action=f"undo:{KEEP_BOTH}", target=row.target,
                       detail=journal_detail(row.id, None))  # fmt: skip
    elif action in CHAIN_ACTIONS:
        _reverse_chain(engine, row, action, actor)
    else:
        return False
    return True


def went_with(engine: MemoryEngine, row: tables.DecisionRow, actor: str) -> None:
    """`row` acted on a fact this undo withdrew: nothing is left to change, but the log says
    it is taken back too (so the next `z` does not try it again)."""
    log_chain_step(engine, actor=actor, action=f"undo:{base_action(row)}", target=row.target,
                   detail={"withdrawn": row.target, **journal_detail(row.id, None)})  # fmt: skip


def forward(
    engine: MemoryEngine,
    decision: tables.DecisionRow,
    undo: tables.DecisionRow,
    actor: str,
    confirmed: frozenset[str] = frozenset(),
) -> bool:
    """Do `decision` again, as the redo of `undo`; False when it is none of these decisions.
    `confirmed`: the withdrawn facts whose confirm went with them (decided again confirmed)."""
    action = base_action(decision)
    after: dict[str, Any] = decision.detail.get("after") or {}
    if action.startswith("review:"):
        _redo_review(engine, decision, undo, action, actor, confirmed)
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


def _reverse_review(
    engine: MemoryEngine, row: tables.DecisionRow, action: str, actor: str, gone: set[str]
) -> None:
    proposal_id = _proposal_id(row)
    after: dict[str, Any] = row.detail.get("after") or {}
    wrote = after.get("resolution") if after.get("state") in WROTE else None
    effect: dict[str, Any] = {"proposal": proposal_id, "after": after}
    if wrote:
        fact = _still_current(engine, wrote)
        if not fact.supersedes:  # its own fact: it leaves the store, and this is logged
            _withdraw(engine, fact.uri, proposal_id, actor=actor, action=action,
                      undoes=row.id, effect=effect)  # fmt: skip
            gone.add(fact.uri)
            return
        # It superseded a fact: that fact's text is the head again.
        effect["reverted"] = _append(engine, fact, _text(engine, fact.supersedes[0]), actor)
    _set_proposal(engine, proposal_id, {"state": "pending"}, actor=None)
    log_chain_step(engine, actor=actor, action=f"undo:{action}", target=row.target,
                   detail={**effect, **journal_detail(row.id, None)})  # fmt: skip


def _withdraw(
    engine: MemoryEngine,
    uri: str,
    proposal_id: int,
    *,
    actor: str,
    action: str,
    undoes: int | None,
    effect: dict[str, Any],
) -> None:
    """The fact `uri` leaves the store (its rows and, in the embedded mode, its file) and its
    proposal is pending again, in one transaction with the log entry of the undo."""
    with engine.write_lock(), engine.session() as session:
        fact = get_fact(session, ref=uri)
        _check_current(fact, uri)
        assert fact is not None
        withdrew = {"uri": fact.uri, "docid": fact.docid, "recordId": fact.record_id,
                    "text": fact.text}  # fmt: skip
        delete_scopes_and_embeddings(session, fact.record_id)
        session.delete(fact)
        set_proposal_state(session, proposal_id, {"state": "pending"}, None, engine.now())
        session.add(
            tables.DecisionRow(
                at=engine.now(),
                actor=actor,
                action=f"undo:{action}",
                target=f"proposal:{proposal_id}",
                detail={**effect, "withdrew": withdrew, **journal_detail(undoes, None)},
            )
        )
        bump_generation(session)
        # The file is moved aside before the commit and put back if it fails, so the files
        # (canonical) and the index never disagree on whether the fact is there.
        moved = _move_aside(engine, fact)
        try:
            session.commit()
        except BaseException:
            if moved is not None:
                moved[1].rename(moved[0])
            raise
    if moved is not None:
        moved[1].unlink(missing_ok=True)


def _move_aside(engine: MemoryEngine, fact: tables.FactRow) -> tuple[Path, Path] | None:
    """(where the fact file was, where it is now): a hidden name reindex does not read; None in
    the server mode (the row is the fact) or when the file is gone already."""
    path = engine.store.fact_file(engine, fact.collection, fact.rel_path)
    if path is None:
        return None
    aside = path.with_name(f".{path.name}.withdrawn")
    try:
        path.rename(aside)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise MemoryFailure(
            "MEMORY_SYNC_FAILED",
            f"Could not take the fact file {path} out of the store: {exc}. Nothing was undone.",
        ) from exc
    return path, aside


def _redo_review(
    engine: MemoryEngine,
    decision: tables.DecisionRow,
    undo: tables.DecisionRow,
    action: str,
    actor: str,
    confirmed: frozenset[str],
) -> None:
    """The proposal decided again as it was: a withdrawn fact is written anew by deciding it
    again; a reverted chain gets the written text again; the proposal's state is restored."""
    proposal_id = _proposal_id(decision)
    after: dict[str, Any] = dict(decision.detail.get("after") or {})
    withdrew = undo.detail.get("withdrew")
    if isinstance(withdrew, dict):
        again = review.Decision(proposal_id, action.removeprefix("review:"), actor,
                                text=after.get("text"), redoes=undo.id,
                                confirm=withdrew.get("uri") in confirmed)  # fmt: skip
        review.decide(engine, again)
        return
    if undo.target.startswith("proposal:") and undo.detail.get("reverted"):
        head = _still_current(engine, str(undo.detail["reverted"]))
        wrote = _text(engine, str(after.get("resolution")))
        after["resolution"] = _append(engine, head, wrote, actor)
    elif not undo.target.startswith("proposal:"):  # an older undo retired the fact: it is back
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
    with engine.session() as session:
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
    with engine.session(expire_on_commit=False) as session:
        fact = get_fact(session, ref=uri)
    _check_current(fact, uri)
    assert fact is not None
    return fact


def _check_current(fact: tables.FactRow | None, uri: str) -> None:
    if fact is None:
        raise MemoryFailure("MEMORY_NOT_FOUND", f"No fact {uri}.")
    if fact.superseded_by or fact.retired_at:
        raise MemoryFailure(
            "MEMORY_SUPERSEDE_CONFLICT",
            f"{fact.docid} was superseded or retired since: taking the decision back would "
            "undo that too. Open its chain (enter in the Library) to decide.",
        )


def _set_proposal(
    engine: MemoryEngine, proposal_id: int, after: dict[str, Any], *, actor: str | None
) -> None:
    with engine.session() as session:
        set_proposal_state(session, proposal_id, after, actor, engine.now())
        bump_generation(session)
        session.commit()


def _proposal_id(row: tables.DecisionRow) -> int:
    # A review decision targets its proposal; an undo that retired the written fact (and its
    # redo) targets the fact and names the proposal in its detail.
    named = row.detail.get("proposal")
    return int(named) if named is not None else int(row.target.removeprefix("proposal:"))
