"""Claims on proposals being decided: who holds one, since when, and what it will write.

A person's decision first claims its proposal (pending -> deciding, one conditional update) so
that two people cannot both apply it (docs/contract.md section 7). The claim is kept in the
proposal's own columns, which nothing else uses while it is deciding (so no migration):

- `decided_by`: the person deciding;
- `decided_at`: when the claim was taken (the engine's clock);
- `resolution`: CLAIM_PREFIX + JSON: the holder (host, boot id, pid namespace, pid and the
  process's start time), a nonce, and the decision's intent (action, the content hash of the
  text it will write, confirm, the undo it redoes, its batch).

The decision's last commit replaces the three with the decided values, on condition that the
claim is still the one it took (engine/storage/queries/review.py `decide_claimed`). A process
killed in between leaves the claim behind; engine/curation/claim_recovery.py releases a claim
whose holder is gone (`judge`): the same boot of the same machine and pid namespace, a holder
process that no longer runs (its pid gone, a zombie, or reused by a process that started at
another time); anywhere else, or when the holder cannot be checked, a claim older than
CLAIM_LEASE."""

from __future__ import annotations

import json
import os
import socket
import threading
import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import content_hash, iso_utc
from engine.curation.journal import current_batch, journal_action
from engine.storage.queries.review import claim_pending
from engine.storage.schema import tables

if TYPE_CHECKING:
    from engine.curation.decision import Decision
    from engine.storage.store import MemoryEngine

# A claim whose holder cannot be checked (another machine, another boot or container, no
# /proc) is released once it is this old. A decision holds its claim for the time of one
# remember (seconds at most: the write lock gives up after 10 s), so ten minutes is generous;
# it also absorbs clock skew between machines sharing a server database.
CLAIM_LEASE = timedelta(minutes=10)
CLAIM_PREFIX = "claim:"

Liveness = Literal["alive", "gone", "unknown"]

# The claims this process holds now (their tokens): a claim of this process that is not here
# belongs to a decision that ended without settling it (its last commit failed).
_HELD: set[str] = set()
_HELD_GUARD = threading.Lock()


@dataclass(frozen=True)
class Holder:
    """The process holding a claim, told apart from any other process that ever ran."""

    host: str  # for people reading the row; machines are told apart by `boot`
    boot: str | None  # /proc/sys/kernel/random/boot_id: one boot of one machine
    pidns: str | None  # the pid namespace: containers of one machine share its boot id
    pid: int
    start: int | None  # /proc/<pid>/stat starttime: a reused pid has another one

    def as_json(self) -> dict[str, Any]:
        return {"host": self.host, "boot": self.boot, "pidns": self.pidns, "pid": self.pid,
                "start": self.start}  # fmt: skip

    @classmethod
    def from_json(cls, value: Any) -> Holder | None:
        if not isinstance(value, dict) or not isinstance(value.get("pid"), int):
            return None
        start = value.get("start")
        return cls(str(value.get("host", "")), _text_or_none(value.get("boot")),
                   _text_or_none(value.get("pidns")), int(value["pid"]),
                   start if isinstance(start, int) else None)  # fmt: skip


def _text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _read(path: str) -> str | None:
    try:
        return Path(path).read_text(encoding="ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def _process_stat(pid: int) -> tuple[str, int] | None:
    """(state, starttime) of process `pid` from /proc, or None when there is no such entry."""
    raw = _read(f"/proc/{pid}/stat")
    if raw is None:
        return None
    # The command name (field 2) may hold spaces and parentheses: fields resume after the
    # last ")", at field 3 (state); starttime is field 22.
    fields = raw.rpartition(")")[2].split()
    try:
        return fields[0], int(fields[19])
    except (IndexError, ValueError):
        return None


_THIS: dict[int, Holder] = {}


def this_process() -> Holder:
    """This process as a holder (computed once per pid: a forked child is another holder)."""
    pid = os.getpid()
    found = _THIS.get(pid)
    if found is None:
        try:
            pidns: str | None = str(Path("/proc/self/ns/pid").readlink())
        except OSError:
            pidns = None
        stat = _process_stat(pid)
        found = Holder(socket.gethostname(), _read("/proc/sys/kernel/random/boot_id"), pidns,
                       pid, stat[1] if stat else None)  # fmt: skip
        _THIS[pid] = found
    return found


def judge(holder: Holder | None, token: str) -> Liveness:
    """Whether the holder of the claim `token` still runs: `unknown` when this process cannot
    tell (it is elsewhere, or /proc does not say), for the lease to decide."""
    here = this_process()
    if holder is None or holder.boot is None or holder.pidns is None:
        return "unknown"
    if (holder.boot, holder.pidns) != (here.boot, here.pidns):
        return "unknown"  # another machine, boot or container
    if holder.pid == here.pid:
        if holder.start != here.start:
            return "gone"  # an earlier process that had this pid
        with _HELD_GUARD:
            return "alive" if token in _HELD else "gone"
    stat = _process_stat(holder.pid)
    if stat is None:
        try:
            os.kill(holder.pid, 0)
        except ProcessLookupError:
            return "gone"
        except OSError:
            return "unknown"
        return "unknown"  # it runs, but /proc hides it (hidepid): its start cannot be read
    state, start = stat
    if state in ("Z", "X"):
        return "gone"  # killed, not yet reaped by its parent
    if holder.start is None:
        return "unknown"
    return "alive" if start == holder.start else "gone"


@dataclass(frozen=True)
class Claim:
    """A deciding proposal's claim as its row records it."""

    proposal_id: int
    token: str | None  # `resolution` as stored; None for a claim taken before claims were kept
    at: datetime | None
    actor: str | None
    holder: Holder | None = None
    action: str | None = None
    text_hash: str | None = None  # of the text the decision writes (None: it writes none)
    confirm: bool = False
    redoes: int | None = None
    batch: str | None = None

    @classmethod
    def of(cls, row: Any) -> Claim:
        """The claim of a row (a ProposalRow, or a row with its id and the three columns)."""
        return cls.parse(int(row.id), row.resolution, row.decided_at, row.decided_by)

    @classmethod
    def parse(
        cls, proposal_id: int, token: str | None, at: datetime | None, actor: str | None
    ) -> Claim:
        recorded: dict[str, Any] = {}
        if isinstance(token, str) and token.startswith(CLAIM_PREFIX):
            try:
                loaded = json.loads(token.removeprefix(CLAIM_PREFIX))
            except ValueError:
                loaded = None
            recorded = loaded if isinstance(loaded, dict) else {}
        redoes, batch = recorded.get("redoes"), recorded.get("batch")
        return cls(
            proposal_id, token, at, actor,
            Holder.from_json(recorded.get("holder")),
            _text_or_none(recorded.get("action")), _text_or_none(recorded.get("hash")),
            recorded.get("confirm") is True,
            redoes if isinstance(redoes, int) else None, _text_or_none(batch),
        )  # fmt: skip

    def liveness(self) -> Liveness:
        return judge(self.holder, self.token or "")

    def expired(self, now: datetime) -> bool:
        return self.at is None or now - self.at > CLAIM_LEASE


def new_claim(engine: MemoryEngine, proposal: tables.ProposalRow, decision: Decision) -> Claim:
    """The claim `decision` takes on `proposal`."""
    rewrites = decision.action in ("edit", "merge")
    text = decision.text if rewrites else proposal.text
    try:  # remember hashes the cleaned text; the same hash, as collapse_text is idempotent
        text_hash = content_hash(text) if text and decision.action != "reject" else None
    except (TypeError, ValueError):
        text_hash = None  # remember refuses such a text: nothing will be written
    recorded = {
        "holder": this_process().as_json(),
        "nonce": uuid.uuid4().hex[:12],
        "action": decision.action,
        "hash": text_hash,
        "confirm": bool(decision.confirm),
        "redoes": decision.redoes,
        "batch": current_batch(),
    }
    token = CLAIM_PREFIX + json.dumps(recorded, sort_keys=True, separators=(",", ":"))
    assert proposal.id is not None
    return Claim.parse(proposal.id, token, engine.now(), decision.actor)


def take(
    engine: MemoryEngine, proposal_id: int, decision: Decision
) -> tuple[tables.ProposalRow | None, Claim | None]:
    """Claim a pending proposal (pending -> deciding, recording the claim) in one conditional
    update. Returns the proposal (None: there is none) and the claim (None: the proposal was
    not pending; its state, read again after the update, says what it is)."""
    with engine.session(expire_on_commit=False) as session:
        proposal = session.get(tables.ProposalRow, proposal_id)
        if proposal is None:
            return None, None
        claim = new_claim(engine, proposal, decision)
        token = claim.token or ""
        with _HELD_GUARD:  # held before it is committed: no recovery here may think it gone
            _HELD.add(token)
        taken = claim_pending(session, proposal_id, token=token, actor=claim.actor, at=claim.at)
        session.commit()
        if not taken:
            forget(claim)
            session.refresh(proposal)
            session.expunge(proposal)
            return proposal, None
        session.refresh(proposal)
        session.expunge(proposal)
    return proposal, claim


def forget(claim: Claim) -> None:
    """The decision holding `claim` has ended in this process."""
    with _HELD_GUARD:
        _HELD.discard(claim.token or "")


def decided_entry(
    *,
    at: datetime,
    actor: str,
    proposal: tables.ProposalRow,
    action: str,
    journal: dict[str, Any],
    after: dict[str, Any],
    redoes: int | None,
    recovered: dict[str, Any] | None = None,
) -> tables.DecisionRow:
    """The decision log's row for a review decision (`review:<action>`), as a decision that
    completes writes it and as a recovery of a killed one does (with `recovered` in detail)."""
    detail = {
        **journal,
        "before": {"text": proposal.text, "decision": proposal.decision},
        "after": after,
    }
    if recovered is not None:
        detail["recovered"] = recovered
    return tables.DecisionRow(
        at=at,
        actor=actor,
        action=journal_action(f"review:{action}", undoes=None, redoes=redoes, undo_of=""),
        target=f"proposal:{proposal.id}",
        detail=detail,
    )


def lapsed(row: tables.ProposalRow, wrote: str | None) -> MemoryFailure:
    """The refusal of a decision that found, at its last commit, its claim passed on: held past
    CLAIM_LEASE where its process could not be checked, released, and decided since."""
    kept = f" The fact it wrote, {wrote}, stays in the store." if wrote else ""
    return MemoryFailure(
        "MEMORY_PROPOSAL_DECIDED",
        f"Proposal #{row.id} is {row.state} now: this decision held it longer than the claim "
        f"lease ({CLAIM_LEASE}) and it was released while it waited.{kept}",
    )


def describe(claim: Claim) -> str:
    """Who holds the claim since when, for a refusal."""
    where = f" ({claim.holder.host}, pid {claim.holder.pid})" if claim.holder else ""
    since = f" since {iso_utc(claim.at)}" if claim.at else ""
    return f"{claim.actor or 'someone'}{where}{since}"
