"""A person's review decision killed between claiming its proposal and recording it decided
(engine/curation/claims.py, claim_recovery.py): the claim records its holder, and a claim whose
holder is gone is released. The proposal comes back to the queue when nothing was written, or
is completed as decided with the fact the decision wrote (exactly one fact); a claim held by
a running process is never taken; a holder that cannot be checked (another machine) keeps its
claim for claims.CLAIM_LEASE, by the engine's clock.

The decider is a real child process (the façade, in `python -c`) that stops itself with
SIGSTOP at an exact point of the decision (engine/storage/crash_hook.py `stop_here`:
`review-claimed`, `review-written`); this test sees it stop (waitpid WUNTRACED), then SIGKILLs
it, or lets it go on (SIGCONT). Nothing waits on time: the lease is crossed by the engine's
injected clock, and GUARD_S only bounds how long a broken run can hang."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.orm import Session
from sqlmodel import col
from stopped_processes import wait_until_stopped

from engine.contract.errors import MemoryFailure
from engine.curation.review import Decision, decide
from engine.storage.compaction import compact
from engine.storage.crash_hook import STOP_HOOK_ENV
from engine.storage.proposals import list_proposals
from engine.storage.schema import tables

# engine.curation.claims and claim_recovery are imported where they are used, so that this
# module loads on a gno-tui from before them: its tests then fail on what they check.
ROOT = Path(__file__).resolve().parents[2]
GUARD_S = 120.0  # only a broken run waits this long
PERSON = "person:reviewer"
HELD = "Alice drinks green tea every morning"
EDITED = "Alice drinks green tea every single morning"

# The decider: opens the home as any surface does and decides one proposal.
CHILD = """
import json, sys
from engine.facade import Decision, MemoryFailure, open_service
service = open_service(home=sys.argv[1])
try:
    result = service.curation.decide(Decision(**json.loads(sys.argv[2])))
except MemoryFailure as failure:
    result = {"error": failure.code, "message": failure.message}
print(json.dumps(result))
"""


class Decider:
    """A child process deciding a proposal, stopped by the decision's own hook at `point`."""

    def __init__(self, cli: Any, decision: dict[str, Any], point: str) -> None:
        self.log_path = cli.home.parent / f"decider-{point}.log"
        self._log = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(cli.home), json.dumps(decision)],
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=cli.env(home=cli.home, **{STOP_HOOK_ENV: point}),
            cwd=ROOT,
        )

    def wait_until_stopped(self) -> None:
        wait_until_stopped(self.process, GUARD_S, "the decider", self.log)

    def kill(self) -> None:
        """SIGKILL, and reaped: its pid is gone."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(GUARD_S)

    def resume(self) -> dict[str, Any]:
        """SIGCONT; what its decision answered."""
        self.process.send_signal(signal.SIGCONT)
        out, _ = self.process.communicate(timeout=GUARD_S)
        assert self.process.returncode == 0, self.log()
        answer: dict[str, Any] = json.loads(out)
        return answer

    def log(self) -> str:
        self._log.flush()
        return self.log_path.read_text(errors="replace")

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(GUARD_S)
        self._log.close()


@contextmanager
def stopped_decider(cli: Any, decision: dict[str, Any], point: str) -> Iterator[Decider]:
    decider = Decider(cli, decision, point)
    try:
        decider.wait_until_stopped()
        yield decider
    finally:
        decider.close()


def held(client: Any, text: str = HELD) -> int:
    """A write held for review, as a propose-only MCP server queues it: its proposal id."""
    client.remember(text, ["s"], decision="add", hold_writes=True, origin="mcp")
    (proposal,) = [p for p in list_proposals(client.engine) if p["text"] == text]
    return int(proposal["id"])


def row(engine: Any, proposal_id: int) -> tables.ProposalRow:
    with Session(engine.db, expire_on_commit=False) as session:
        found = session.get(tables.ProposalRow, proposal_id)
        assert found is not None
        session.expunge(found)
    return found


def facts_saying(probe: Any, text: str) -> list[str]:
    """Record ids of the fact rows with this text; their files are checked to match."""
    ids = [r[0] for r in probe.query("SELECT record_id FROM facts WHERE text = ?", text)]
    files = [p for p in probe.files() if p.read_text(encoding="utf-8").rstrip().endswith(text)]
    assert len(files) == len(ids), (files, ids)
    return ids


def queued(memory: Any) -> list[int]:
    """The queue a person sees (the workbench's), by id."""
    return [int(p["id"]) for p in memory.curation.queue().proposals]


def move_holder_elsewhere(engine: Any, proposal_id: int) -> None:
    """The claim's holder as a process on another machine would have recorded it."""
    from engine.curation.claims import CLAIM_PREFIX

    claimed = row(engine, proposal_id)
    assert claimed.resolution is not None and claimed.resolution.startswith(CLAIM_PREFIX)
    recorded = json.loads(claimed.resolution.removeprefix(CLAIM_PREFIX))
    recorded["holder"].update(host="elsewhere", boot="another-machine-boot-id")
    with Session(engine.db) as session:
        session.execute(
            update(tables.ProposalRow)
            .where(col(tables.ProposalRow.id) == proposal_id)
            .values(resolution=CLAIM_PREFIX + json.dumps(recorded))
        )
        session.commit()


def claimed_at(engine: Any, proposal_id: int) -> datetime:
    at = row(engine, proposal_id).decided_at
    assert at is not None
    return at


def review_entries(memory: Any, proposal_id: int) -> list[dict[str, Any]]:
    return [
        e
        for e in memory.curation.decision_log()
        if e["target"] == f"proposal:{proposal_id}" and e["action"].startswith("review:")
    ]


# -- killed: back to the queue, or decided with its fact ---------------------------------------


def _in_resource(memory: Any, proposal_id: int) -> bool:
    """The proposals resource: what an MCP agent reads, and what GET /memories/review lists."""
    from engine.facade import PROPOSALS_URI

    text, _ = memory.facts.read_resource(PROPOSALS_URI)
    return proposal_id in [p["id"] for p in json.loads(text)["proposals"]]


# Every way a person or an agent finds the queue, each looking first after the kill.
LOOKS = {
    "workbench queue": lambda memory, pid: pid in queued(memory),
    "review --list": lambda memory, pid: pid in [p["id"] for p in memory.curation.proposals()],
    "proposals resource": _in_resource,
    "one proposal": lambda memory, pid: memory.curation.proposal(pid)["state"] == "pending",
    "deciding it": lambda memory, pid: (
        memory.curation.decide(Decision(pid, "add", actor=PERSON))["outcome"] == "added"
    ),
}


@pytest.mark.parametrize("look", LOOKS)
def test_a_decision_killed_after_its_claim_comes_back_to_the_queue(
    cli, client, memory, probe, look
):
    proposal_id = held(client)
    with stopped_decider(cli, {"proposal_id": proposal_id, "action": "add",
                               "actor": PERSON}, "review-claimed") as decider:  # fmt: skip
        assert row(client.engine, proposal_id).state == "deciding"
        assert not _in_resource(memory, proposal_id)  # held by a running decision
        assert facts_saying(probe, HELD) == []
        decider.kill()

        assert LOOKS[look](memory, proposal_id)  # its holder is gone: pending again
    if look != "deciding it":
        again = row(client.engine, proposal_id)
        assert (again.state, again.resolution, again.decided_by) == ("pending", None, None)
        assert facts_saying(probe, HELD) == []
        decide(client.engine, Decision(proposal_id, "add", actor=PERSON))
    decided = memory.curation.proposal(proposal_id)
    (written,) = facts_saying(probe, HELD)  # deciding it again wrote its fact, once
    assert (decided["state"], decided["resolution"]) == ("added", memory.facts.get(written).uri)
    assert [e["action"] for e in review_entries(memory, proposal_id)] == ["review:add"]


@pytest.mark.parametrize(
    ("action", "text", "confirm", "state"),
    [("add", HELD, False, "added"), ("edit", EDITED, False, "added"),
     ("supersede", HELD, True, "superseded")],
)  # fmt: skip
def test_a_decision_killed_after_writing_is_completed_with_its_fact(
    cli, client, memory, probe, action, text, confirm, state
):
    old = None
    if action == "supersede":
        old = client.add("Alice drinks black tea every morning")
        client.supersede(old, HELD, hold_writes=True, origin="mcp")
        (proposal,) = list_proposals(client.engine)
        proposal_id = int(proposal["id"])
    else:
        proposal_id = held(client)
    decision = {"proposal_id": proposal_id, "action": action, "actor": PERSON,
                "confirm": confirm, "text": EDITED if action == "edit" else None}  # fmt: skip
    with stopped_decider(cli, decision, "review-written") as decider:
        (written,) = facts_saying(probe, text)  # the fact is in, the proposal not decided
        assert row(client.engine, proposal_id).state == "deciding"
        decider.kill()

        assert proposal_id not in queued(memory)
    decided = memory.curation.proposal(proposal_id)
    assert decided is not None
    fact = memory.facts.get(written)
    assert (decided["state"], decided["resolution"]) == (state, fact.uri)
    assert decided["decidedBy"] == PERSON
    assert facts_saying(probe, text) == [written]  # exactly one fact
    if old is not None:
        assert fact.supersedes == [old["record"]["uri"]]

    # Logged as the decision would have, and marked as recovered.
    (entry,) = review_entries(memory, proposal_id)
    assert (entry["action"], entry["actor"]) == (f"review:{action}", PERSON)
    assert entry["detail"]["after"] == {
        "state": state,
        "resolution": fact.uri,
        "text": EDITED if action == "edit" else None,
    }
    assert entry["detail"]["recovered"]["why"] == "its process is gone"
    if confirm:  # the confirm the killed decision made is one step with the recovered row
        confirmed = [e for e in memory.curation.decision_log() if e["action"] == "confirm"]
        assert [e["detail"]["batch"] for e in confirmed] == [entry["detail"]["batch"]]

    with pytest.raises(MemoryFailure) as refused:
        decide(client.engine, Decision(proposal_id, action, actor=PERSON, text=EDITED))
    assert refused.value.code == "MEMORY_PROPOSAL_DECIDED"
    assert facts_saying(probe, text) == [written]

    if action == "add":  # the recovered decision is undone as any decision is
        memory.curation.undo(actor=PERSON)
        assert facts_saying(probe, text) == []
        assert proposal_id in queued(memory)


def test_a_held_keyed_write_killed_after_writing_is_completed_with_its_revision(cli, memory, probe):
    """A held memory_remember accepted in review: its fact is found by its key."""
    content = "Tea at five, every day"
    queued_write = memory.keyed.propose({"key": "tea", "memory": {"content": content}},
                                        caller="test:agent", session="test-session")  # fmt: skip
    proposal_id = int(queued_write["proposal_id"])
    with stopped_decider(cli, {"proposal_id": proposal_id, "action": "add",
                               "actor": PERSON}, "review-written") as decider:  # fmt: skip
        (written,) = facts_saying(probe, content)
        decider.kill()
    assert proposal_id not in queued(memory)
    decided = memory.curation.proposal(proposal_id)
    assert decided is not None
    assert (decided["state"], decided["resolution"]) == ("added", memory.facts.get(written).uri)
    assert memory.keyed.get("tea")["revision"] == 1
    assert facts_saying(probe, content) == [written]


def test_the_background_compaction_recovers_a_killed_claim(cli, client, engine):
    proposal_id = held(client)
    with stopped_decider(cli, {"proposal_id": proposal_id, "action": "add",
                               "actor": PERSON}, "review-claimed") as decider:  # fmt: skip
        decider.kill()
    assert list_proposals(engine) == []  # nothing has looked yet
    assert compact(engine).claims == 1
    assert [p["id"] for p in list_proposals(engine)] == [proposal_id]
    assert compact(engine).claims == 0


def test_two_recoveries_of_one_claim_settle_it_once(cli, client, memory, probe, home):
    """Two engines recovering at once settle the claim once; and a recovery acting on what it
    read before the other settled it (its conditional update on the claim's exact text) changes
    nothing: one log row, one state change, one fact."""
    from engine.curation import claim_recovery
    from engine.curation.claims import Claim
    from engine.facade.factory import open_engine
    from engine.retrieval.embeddings import EmbedderStatus

    proposal_id = held(client)
    with stopped_decider(cli, {"proposal_id": proposal_id, "action": "add",
                               "actor": PERSON}, "review-written") as decider:  # fmt: skip
        decider.kill()
    seen_before = Claim.of(row(client.engine, proposal_id))
    assert seen_before.liveness() == "gone"

    other = open_engine(home=home, embedder_status=EmbedderStatus(None, "no model"))
    try:
        start = threading.Barrier(2)
        counts: list[int] = []

        def recover(engine: Any) -> None:
            start.wait(GUARD_S)
            counts.append(claim_recovery.recover(engine))

        both = [threading.Thread(target=recover, args=(e,)) for e in (client.engine, other)]
        for thread in both:
            thread.start()
        for thread in both:
            thread.join(GUARD_S)
        assert sorted(counts) == [0, 1]
    finally:
        other.db.dispose()

    with client.engine.write_lock():
        assert claim_recovery._settle(client.engine, seen_before, "late", announce=True) == 0
    assert row(client.engine, proposal_id).state == "added"
    assert len(review_entries(memory, proposal_id)) == 1
    assert len(facts_saying(probe, HELD)) == 1


def test_a_decision_that_fails_after_writing_keeps_its_fact_decided(
    client, memory, probe, monkeypatch
):
    """In process: a decision that wrote its fact and then failed (its confirm refused) does
    not put the proposal back in the queue beside its fact; its claim is settled at once."""
    from engine.curation import review

    proposal_id = held(client)

    def refused(*_: Any, **__: Any) -> None:
        raise MemoryFailure("MEMORY_WRITE_LEASE_BUSY", "the confirm could not take the lock")

    monkeypatch.setattr(review, "confirm", refused)
    with pytest.raises(MemoryFailure) as failed:
        decide(client.engine, Decision(proposal_id, "add", actor=PERSON, confirm=True))
    assert failed.value.code == "MEMORY_WRITE_LEASE_BUSY"
    (written,) = facts_saying(probe, HELD)
    decided = memory.curation.proposal(proposal_id)
    assert decided is not None
    assert (decided["state"], decided["resolution"]) == ("added", memory.facts.get(written).uri)
    (entry,) = review_entries(memory, proposal_id)
    assert entry["detail"]["recovered"]["why"] == "its decision failed"

    # A refusal before anything is written leaves it pending, as it always did.
    other = held(client, "Bob drinks coffee at noon")
    with pytest.raises(MemoryFailure):
        decide(client.engine, Decision(other, "reject", actor=PERSON, reason=" "))
    again = row(client.engine, other)
    assert (again.state, again.resolution, again.decided_at) == ("pending", None, None)


# -- held by a running process: never taken ----------------------------------------------------


def test_a_claim_held_by_a_running_process_is_not_taken(cli, client, memory, probe):
    proposal_id = held(client)
    with stopped_decider(cli, {"proposal_id": proposal_id, "action": "add",
                               "actor": PERSON}, "review-claimed") as decider:  # fmt: skip
        # SIGSTOPped on this machine, however long: still its claim, by any clock.
        much_later = claimed_at(client.engine, proposal_id) + timedelta(days=3)
        with memory.clock_override(lambda: much_later):
            assert proposal_id not in queued(memory)
            assert memory.curation.proposals() == []
            assert compact(client.engine).claims == 0
            with pytest.raises(MemoryFailure) as refused:
                decide(client.engine, Decision(proposal_id, "add", actor=PERSON))
            assert refused.value.code == "MEMORY_PROPOSAL_DECIDED"
            assert "being decided by person:reviewer" in refused.value.message
        assert row(client.engine, proposal_id).state == "deciding"
        assert facts_saying(probe, HELD) == []

        answer = decider.resume()
    assert answer["outcome"] == "added"
    assert memory.curation.proposal(proposal_id)["state"] == "added"
    assert facts_saying(probe, HELD) == [answer["record"]["recordId"]]
    assert len(review_entries(memory, proposal_id)) == 1


# -- held from another machine: the lease -----------------------------------------------------


@pytest.mark.parametrize("point", ["review-claimed", "review-written"])
def test_a_claim_from_another_machine_is_released_after_the_lease(
    cli, client, memory, probe, point
):
    """The holder cannot be checked from here, so its claim lasts CLAIM_LEASE. Released, it
    is pending again (nothing written) or decided with its fact; the holder, going on late,
    completes a pending one with its own fact, or finds its fact already recorded."""
    from engine.curation.claims import CLAIM_LEASE

    proposal_id = held(client)
    with stopped_decider(cli, {"proposal_id": proposal_id, "action": "add",
                               "actor": PERSON}, point) as decider:  # fmt: skip
        move_holder_elsewhere(client.engine, proposal_id)
        since = claimed_at(client.engine, proposal_id)
        with memory.clock_override(lambda: since + CLAIM_LEASE - timedelta(seconds=1)):
            assert proposal_id not in queued(memory)
            assert compact(client.engine).claims == 0
        with memory.clock_override(lambda: since + CLAIM_LEASE + timedelta(seconds=1)):
            if point == "review-claimed":
                assert proposal_id in queued(memory)  # back in the queue
                assert facts_saying(probe, HELD) == []
            else:
                assert proposal_id not in queued(memory)  # decided, with its fact
                (written,) = facts_saying(probe, HELD)
                decided = memory.curation.proposal(proposal_id)
                assert decided is not None
                uri = memory.facts.get(written).uri
                assert (decided["state"], decided["resolution"]) == ("added", uri)
                (entry,) = review_entries(memory, proposal_id)
                assert entry["detail"]["recovered"]["why"].startswith("held past the lease")

        answer = decider.resume()  # the late holder
    assert answer["outcome"] == "added", answer
    decided = memory.curation.proposal(proposal_id)
    assert decided is not None
    assert (decided["state"], decided["resolution"]) == ("added", answer["record"]["uri"])
    assert facts_saying(probe, HELD) == [answer["record"]["recordId"]]  # exactly one fact
    assert len(review_entries(memory, proposal_id)) == 1


def test_a_claim_left_by_an_older_gno_tui_gets_a_lease(client, memory, engine):
    """A proposal left deciding by a gno-tui that recorded no claim: its lease starts when it
    is first seen, and then it is pending again (no fact with its text was written)."""
    from engine.curation.claims import CLAIM_LEASE

    proposal_id = held(client)
    with Session(engine.db) as session:
        session.execute(
            update(tables.ProposalRow)
            .where(col(tables.ProposalRow.id) == proposal_id)
            .values(state="deciding")
        )
        session.commit()
    first_seen = memory.now()
    with memory.clock_override(lambda: first_seen):
        assert proposal_id not in queued(memory)
    with memory.clock_override(lambda: first_seen + CLAIM_LEASE + timedelta(seconds=1)):
        assert proposal_id in queued(memory)
