"""Releasing the claims of review decisions whose process is gone (engine/curation/claims.py).

`recover` looks at the proposals left deciding and takes back each claim whose holder is gone
(claims.judge) or, where that cannot be told, that is older than claims.CLAIM_LEASE:

- if the decision had written its fact, the proposal is completed as decided with it: state
  and resolution set, and the decision log's `review:<action>` row written as the decision
  would have written it (its person, action, redo and batch), with `recovered` in its detail
  (when, why, the claim); a confirm the decision asked for and did not reach is applied;
- else the proposal is pending again, back in the queue. Nothing was written, so deciding it
  again writes its fact once.

The fact is found from what the claim recorded: created at or after the claim, by the
proposal's agent (caller and session), reviewed by the claim's person (`reviewedBy`), with the
content hash of the text the decision meant to write (a held keyed write: its key), and not
the resolution of another proposal. The search runs under the write lock: in the embedded
mode its first hold settles what a killed write left in the journal (engine/storage/
reindex.py), so a fact whose file was written is indexed before it is looked for; in the
server mode a killed write's transaction rolled back.

Each release is one conditional update on the claim's exact text, in the transaction of its
log row: two processes recovering at once, or a late holder finishing, settle it once.
It runs where the queue is listed (review_queue; the façade's `proposals`, `proposal` and the
proposals resource), before a claim is refused because of a stale one (review._claim), and in
the background compaction."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import content_hash, iso_utc
from engine.curation.claims import CLAIM_LEASE, CLAIM_PREFIX, Claim, decided_entry
from engine.curation.fields import CONFIRMED, confirm
from engine.curation.journal import batch_of, journal_detail
from engine.keyed.requests import namespace_scope
from engine.storage.queries import review as queries
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

log = logging.getLogger("engine.curation")

KEYED_DECISION = "keyed"  # ProposalRow.decision of a held keyed write (keyed/service.py)
_ROW = tables.ProposalRow


def recover(engine: MemoryEngine, *, only: int | None = None, wait: float | None = None) -> int:
    """Release the stale claims (of proposal `only`, else all); how many were. Nothing on a
    read-only home. `wait`: how long to wait for the write lock (the engine's, by default);
    MEMORY_WRITE_LEASE_BUSY when it stays taken."""
    if getattr(engine, "read_only", None) is not None:
        return 0
    stale = _stale(engine, only)
    if not stale:
        return 0
    released = 0
    with engine.write_lock(timeout=wait):
        for claim, why in stale:
            released += _settle(engine, claim, why, announce=True)
    return released


def recover_quietly(
    engine: MemoryEngine, *, only: int | None = None, wait: float | None = None
) -> int:
    """`recover`, for the paths that list the queue: a failure is logged, never raised (the
    listing answers as it is; the next one tries again)."""
    try:
        return recover(engine, only=only, wait=wait)
    except Exception as exc:  # noqa: BLE001 - recovery never fails the read it precedes
        log.debug("gno-tui: stale review claims not recovered now: %s", exc)
        return 0


def settle_failed(engine: MemoryEngine, claim: Claim, *, may_have_written: bool) -> None:
    """The claim of a decision that failed in this process: pending again when it wrote
    nothing; settled as a recovery settles it when it may have written its fact. If even that
    fails the claim stays, for a recovery (its decision no longer counts as running)."""
    try:
        if may_have_written:
            with engine.write_lock():
                _settle(engine, claim, "its decision failed", announce=False)
        else:
            _release(engine, claim)
    except Exception as exc:  # noqa: BLE001 - the decision's own failure is the one raised
        log.warning(
            "gno-tui: proposal #%d stays claimed until it is recovered: %s", claim.proposal_id, exc
        )


def _release(engine: MemoryEngine, claim: Claim) -> None:
    with engine.session() as session:
        queries.update_held(session, claim.proposal_id, claim.token, _PENDING)
        session.commit()


_PENDING: dict[str, Any] = {
    "state": "pending",
    "resolution": None,
    "decided_at": None,
    "decided_by": None,
}


def _stale(engine: MemoryEngine, only: int | None) -> list[tuple[Claim, str]]:
    """The claims to release, each with why. One indexed read when nothing is deciding."""
    with engine.session() as session:
        found = [Claim.parse(int(id_ or 0), token, at, actor)
                 for id_, token, at, actor in queries.deciding_claims(session, only)]  # fmt: skip
    now = engine.now()
    stale: list[tuple[Claim, str]] = []
    for claim in found:
        if claim.token is None or not claim.token.startswith(CLAIM_PREFIX):
            _stamp(engine, claim)  # its lease starts now
            continue
        liveness = claim.liveness()
        if liveness == "gone":
            stale.append((claim, "its process is gone"))
        elif liveness == "unknown" and claim.expired(now):
            stale.append((claim, f"held past the lease ({CLAIM_LEASE}), its process unchecked"))
    return stale


def _stamp(engine: MemoryEngine, claim: Claim) -> None:
    """A claim taken by a gno-tui that recorded none: from now on it has a lease, with no
    holder (so only the lease releases it) and no intent (its fact is looked for by the
    proposal's own text)."""
    token = CLAIM_PREFIX + '{"legacy":true}'
    with engine.session() as session:
        stamped = {"resolution": token, "decided_at": engine.now()}
        queries.update_held(session, claim.proposal_id, claim.token, stamped)
        session.commit()


def _settle(engine: MemoryEngine, claim: Claim, why: str, *, announce: bool) -> int:
    """Complete the claimed decision with the fact it wrote, or make the proposal pending
    again; 1 when this call did it, 0 when it was settled meanwhile. Under the write lock.
    `announce`: move the generation on a release too (the queue changed for every surface)."""
    with engine.session(expire_on_commit=False) as session:
        proposal = session.get(_ROW, claim.proposal_id)
        if proposal is None or (proposal.state, proposal.resolution) != ("deciding", claim.token):
            return 0
        session.expunge(proposal)
    fact = _written_fact(engine, proposal, claim)
    with batch_of(claim.batch):  # the killed decision's step, for undo
        confirmed = fact is not None and _confirm_if_asked(engine, claim, fact)
        journal = journal_detail(None, claim.redoes)
    after = _decided(claim, fact) if fact is not None else {}
    values = _PENDING if fact is None else {
        "state": after["state"], "resolution": fact.uri, "decided_at": engine.now(),
        "decided_by": _actor(claim, fact)}  # fmt: skip
    with engine.session() as session:
        if not queries.update_held(session, claim.proposal_id, claim.token, values):
            session.rollback()
            return 0
        if fact is not None:
            recovered: dict[str, Any] = {
                "at": iso_utc(engine.now()),
                "why": why,
                "claimedAt": iso_utc(claim.at) if claim.at else None,
                "holder": claim.holder.as_json() if claim.holder else None,
            }
            if claim.confirm:
                recovered["confirmed"] = confirmed
            session.add(decided_entry(at=engine.now(), actor=_actor(claim, fact),
                                      proposal=proposal, action=_action(claim, fact),
                                      journal=journal, after=after, redoes=claim.redoes,
                                      recovered=recovered))  # fmt: skip
        if fact is not None or announce:
            bump_generation(session)
        session.commit()
    log.info("gno-tui: proposal #%d recovered (%s): %s", claim.proposal_id, why,
             values["state"])  # fmt: skip
    return 1


def _written_fact(
    engine: MemoryEngine, proposal: tables.ProposalRow, claim: Claim
) -> tables.FactRow | None:
    """The fact the claimed decision wrote, if it wrote one (the module's note)."""
    legacy = claim.holder is None  # no intent recorded: the proposal's own text, any person
    since = proposal.created_at if legacy else claim.at
    keyed: tuple[str, Any] | None = None
    wanted: str | None = None
    if proposal.decision == KEYED_DECISION:
        held = (proposal.matching or {}).get("keyed") or {}
        try:
            namespace = namespace_scope(held.get("namespace"))[0]
        except MemoryFailure:
            return None
        keyed = (namespace, held.get("key"))
    else:
        wanted = content_hash(proposal.text) if legacy else claim.text_hash
        if wanted is None:
            return None  # a rejection, or a text remember refuses: nothing was written
    with engine.session(expire_on_commit=False) as session:
        written = queries.facts_written_since(session, caller=proposal.caller,
                                              agent_session=proposal.session, since=since,
                                              keyed=keyed, content_hash=wanted)  # fmt: skip
        for fact in written:
            reviewer = fact.workbench.get("reviewedBy")
            if reviewer is None or (not legacy and reviewer != claim.actor):
                continue  # written by another path, or another person's decision
            if not queries.resolved_by_another(session, fact.uri, proposal.id):
                return fact
    return None


def _decided(claim: Claim, fact: tables.FactRow) -> dict[str, Any]:
    """The decision log's `after`, as the decision would have logged it."""
    if not fact.supersedes:
        state = "added"
    else:
        state = "merged" if claim.action == "merge" else "superseded"
    rewrote = claim.action in ("edit", "merge")
    return {"state": state, "resolution": fact.uri, "text": fact.text if rewrote else None}


def _action(claim: Claim, fact: tables.FactRow) -> str:
    return claim.action or ("supersede" if fact.supersedes else "add")


def _actor(claim: Claim, fact: tables.FactRow) -> str:
    return claim.actor or str(fact.workbench.get("reviewedBy"))


def _confirm_if_asked(engine: MemoryEngine, claim: Claim, fact: tables.FactRow) -> bool:
    """Confirm the fact when the decision asked to and did not get that far; whether the fact
    is confirmed now. A failure leaves it unconfirmed (logged): the decision is still done."""
    if not claim.confirm:
        return False
    if (fact.workbench.get("provenance") or {}).get("status") == CONFIRMED:
        return True
    try:
        confirm(engine, ref=fact.uri, actor=_actor(claim, fact))
    except MemoryFailure as failure:
        log.warning("gno-tui: recovered proposal #%d left unconfirmed: %s",
                    claim.proposal_id, failure.message)  # fmt: skip
        return False
    return True
