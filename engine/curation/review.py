"""The review queue and a person's curation actions (docs/contract.md sections 5 and 7).

Every decision goes through the same remember path as any write (fence, compare-and-swap,
sync) and is logged with who, when and what."""

from __future__ import annotations

from contextlib import nullcontext
from typing import TYPE_CHECKING, Any

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import iso_utc
from engine.curation import claim_recovery, claims
from engine.curation.claims import Claim
from engine.curation.decision import Decision as Decision  # re-exported: the façade's
from engine.curation.fields import confirm as confirm
from engine.curation.fields import mark_stale as mark_stale  # re-exported: the façade's verbs
from engine.curation.fields import set_curation as set_curation
from engine.curation.journal import batch, journal_action, journal_detail
from engine.keyed import service as keyed_service
from engine.memory.remember import RememberRequest, remember
from engine.storage.crash_hook import stop_here
from engine.storage.disk_full import CUT_SHORT, NOT_STORED, disk_full_said
from engine.storage.proposals import public_proposal
from engine.storage.queries import curation as queries
from engine.storage.queries.review import decide_claimed
from engine.storage.reads.records import get_fact
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

ACTIONS = ("add", "supersede", "reject", "edit", "merge")


def decide(engine: MemoryEngine, decision: Decision) -> dict[str, Any]:
    """Apply a person's decision on a pending proposal; returns the remember result (or, for a
    rejection, the decided proposal)."""
    if decision.action not in ACTIONS:
        raise MemoryFailure(
            "MEMORY_DECISION_INVALID",
            f"Unknown review action {decision.action!r}; use one of {ACTIONS}.",
        )
    # A confirmed add logs two decisions (the confirm, the add): one step for undo. The batch
    # is open before the claim, which records it for a recovery to complete the step.
    # The claim and the decided proposal are written outside the write lock: a full disk is
    # said as such there too (engine/storage/disk_full.py).
    with batch() if decision.confirm else nullcontext():
        with disk_full_said(engine.home, NOT_STORED):
            proposal, claim = _claim(engine, decision)
        writing = False
        try:
            _check(decision, proposal)  # the refusals that come before anything is written
            stop_here("review-claimed")  # tests: a decision stopped (or killed) right here
            writing = True
            with disk_full_said(engine.home, CUT_SHORT):  # its fact, then the proposal decided
                return _apply(engine, decision, proposal, claim)
        except BaseException:
            # The claim goes: pending again, or, when this decision may have written its fact
            # before it failed, settled as a recovery settles it (with the fact, if written).
            claim_recovery.settle_failed(engine, claim, may_have_written=writing)
            raise
        finally:
            claims.forget(claim)


def _claim(engine: MemoryEngine, decision: Decision) -> tuple[tables.ProposalRow, Claim]:
    """Take a pending proposal for deciding (pending -> deciding, recording the claim) in one
    conditional update, so two people deciding it at once cannot both write its fact. A claim
    left by a decision whose process is gone is recovered first (engine/curation/claims.py)."""
    proposal, claim = claims.take(engine, decision.proposal_id, decision)
    stale = proposal is not None and claim is None and proposal.state == "deciding"
    if stale and claim_recovery.recover(engine, only=decision.proposal_id):
        proposal, claim = claims.take(engine, decision.proposal_id, decision)
    if proposal is None:
        raise MemoryFailure(
            "MEMORY_PROPOSAL_NOT_FOUND",
            f"No proposal #{decision.proposal_id}; list them with `gno-tui review --list`.",
        )
    if claim is None:
        held = Claim.of(proposal)
        raise MemoryFailure(
            "MEMORY_PROPOSAL_DECIDED",
            f"Proposal #{decision.proposal_id} is being decided by {claims.describe(held)}."
            if proposal.state == "deciding"
            else f"Proposal #{decision.proposal_id} was already decided ({proposal.state}).",
        )
    return proposal, claim


def _check(decision: Decision, proposal: tables.ProposalRow) -> None:
    if keyed_service.is_held(proposal) and decision.action not in ("add", "reject"):
        raise MemoryFailure(
            "MEMORY_DECISION_INVALID",
            f"Proposal #{proposal.id} is a held keyed write (memory_remember): accept it as "
            "the agent sent it (add) or reject it; it cannot be edited, merged or redirected "
            "to another fact.",
        )
    rewrites = decision.action in ("edit", "merge")
    if rewrites and not (decision.text and decision.text.strip()):
        raise MemoryFailure(
            "MEMORY_TEXT_REQUIRED",
            f"A{'n edit' if decision.action == 'edit' else ' merge'} needs the text to write; "
            "it is empty.",
        )
    if decision.action == "reject" and not (decision.reason and decision.reason.strip()):
        raise MemoryFailure(
            "MEMORY_DECISION_INVALID",
            "A rejection needs a reason, so the agent's author can learn.",
        )


def _apply(
    engine: MemoryEngine, decision: Decision, proposal: tables.ProposalRow, claim: Claim
) -> dict[str, Any]:
    result: dict[str, Any]
    held_keyed = keyed_service.is_held(proposal)
    rewrites = decision.action in ("edit", "merge")
    if decision.action == "reject":
        state, resolution, result = "rejected", (decision.reason or "").strip(), {}
    elif held_keyed:
        # The request the agent sent, written now under the key's compare-and-swap.
        result = keyed_service.apply_held(engine, proposal, actor=decision.actor).result
        state = {"added": "added", "superseded": "superseded"}.get(result["outcome"], "existing")
        resolution = result["record"]["uri"]
        if decision.confirm:
            confirm(engine, ref=resolution, actor=decision.actor)
    else:
        request = RememberRequest(
            text=decision.text if rewrites and decision.text else proposal.text,
            scopes=list(proposal.scopes),
            caller=proposal.caller,
            session=proposal.session,
            collection=proposal.collection,
            source=proposal.source,
            workbench={"reviewedBy": decision.actor},
        )
        if decision.action in ("supersede", "merge"):
            target = decision.target or proposal.predecessor
            with engine.session(expire_on_commit=False) as session:
                row = get_fact(session, ref=target) if target else None
            if row is None:
                raise MemoryFailure(
                    "MEMORY_PREDECESSOR_REQUIRED",
                    "Choose the fact to supersede (one of the candidates).",
                )
            request.decision, request.predecessor = "supersede", row.uri
            request.predecessor_hash = row.content_hash
            request.collection = None
        else:
            request.decision = "add"
        result = remember(engine, request)
        state = {"added": "added", "superseded": "superseded"}.get(result["outcome"], "existing")
        if decision.action == "merge" and state == "superseded":
            state = "merged"
        resolution = result["record"]["uri"]
        if decision.confirm:
            confirm(engine, ref=resolution, actor=decision.actor)
    stop_here("review-written")  # tests: the fact written, the proposal not yet decided
    after = {"state": state, "resolution": resolution,
             "text": decision.text if rewrites else None}  # fmt: skip
    with engine.session(expire_on_commit=False) as session:
        # Only while the claim is still this decision's (a lapsed lease may have passed it on).
        decided_values = {"state": state, "resolution": resolution,
                          "decided_at": engine.now(), "decided_by": decision.actor}  # fmt: skip
        if decide_claimed(session, claim.proposal_id, claim.token, decided_values):
            journal = journal_detail(None, decision.redoes)
            session.add(claims.decided_entry(at=engine.now(), actor=decision.actor,
                                             proposal=proposal, action=decision.action,
                                             journal=journal, after=after,
                                             redoes=decision.redoes))  # fmt: skip
            bump_generation(session)
        session.commit()
        decided_row = session.get(tables.ProposalRow, decision.proposal_id)
        assert decided_row is not None
        if decided_row.state != state or decided_row.resolution != resolution:
            raise claims.lapsed(decided_row, resolution if state != "rejected" else None)
        decided = public_proposal(decided_row)
    return result or decided


def _rewrite_workbench(
    engine: MemoryEngine, row: tables.FactRow, updates: dict[str, Any | None]
) -> None:
    """Set (or, with None, drop) keys under the fact's `workbench:` in its file, where files
    are canonical, before the caller changes the row (engine/storage/fact_sink.py)."""
    engine.fact_sink.rewrite_workbench(engine, row, updates)


def retire(
    engine: MemoryEngine,
    *,
    ref: str,
    actor: str,
    reason: str,
    undoes: int | None = None,
    redoes: int | None = None,
    extra: dict[str, Any] | None = None,
    undo_of: str = "restore",
) -> None:
    """A person takes a current fact out of recall and candidates; the file stays.
    `extra` adds to the logged detail (engine/curation/duplicates.py: which fact it duplicates).

    `undoes` / `redoes` (decision ids) mark the retire as an undo (of a restore, or of what
    `undo_of` names: a review add) or a redo of an undone retire, so the log keeps the journal
    (engine/curation/undo.py)."""
    if not reason.strip():
        raise MemoryFailure("MEMORY_DECISION_INVALID", "Say why the fact is retired.")
    now = engine.now()
    with engine.write_lock(), engine.session(expire_on_commit=False) as session:
        row = queries.current_fact(session, ref)
        _rewrite_workbench(
            engine, row, {"retired": {"at": iso_utc(now), "by": actor, "reason": reason.strip()}}
        )
        row.retired_at, row.retired_by, row.retired_reason = now, actor, reason.strip()
        row.workbench = {
            **row.workbench,
            "retired": {"at": iso_utc(now), "by": actor, "reason": reason.strip()},
        }
        session.add(
            tables.DecisionRow(
                at=now,
                actor=actor,
                action=journal_action("retire", undoes=undoes, redoes=redoes, undo_of=undo_of),
                target=row.uri,
                detail={
                    "reason": reason.strip(),
                    **(extra or {}),
                    **journal_detail(undoes, redoes),
                },
            )
        )
        bump_generation(session)
        session.commit()


def restore(
    engine: MemoryEngine,
    *,
    ref: str,
    actor: str,
    undoes: int | None = None,
    redoes: int | None = None,
    extra: dict[str, Any] | None = None,
    journal_as: str = "restore",
) -> None:
    """A retired fact comes back; the log keeps the reason it had, so an undo can retire it
    again with the same reason. `extra` adds to the logged detail; `journal_as` names the
    decision a redo does again (a review add whose undo retired its fact)."""
    now = engine.now()
    with engine.write_lock(), engine.session(expire_on_commit=False) as session:
        row = get_fact(session, ref=ref)
        if row is None or row.retired_at is None:
            raise MemoryFailure("MEMORY_NOT_FOUND", f"No retired fact {ref}.")
        detail: dict[str, Any] = {
            "reason": row.retired_reason,
            **(extra or {}),
            **journal_detail(undoes, redoes),
        }
        _rewrite_workbench(engine, row, {"retired": None})
        row.retired_at = row.retired_by = row.retired_reason = None
        row.workbench = {k: v for k, v in row.workbench.items() if k != "retired"}
        session.add(
            tables.DecisionRow(
                at=now,
                actor=actor,
                action=journal_action(journal_as, undoes=undoes, redoes=redoes, undo_of="retire"),
                target=row.uri,
                detail=detail,
            )
        )
        bump_generation(session)
        session.commit()


def decision_log(engine: MemoryEngine, *, limit: int = 200) -> list[dict[str, Any]]:
    with engine.session(expire_on_commit=False) as session:
        rows = queries.latest_decisions(session, limit)
        return [
            {
                "id": r.id,
                "at": iso_utc(r.at) if r.at else None,
                "actor": r.actor,
                "action": r.action,
                "target": r.target,
                "detail": r.detail,
            }
            for r in rows
        ]
