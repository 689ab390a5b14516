"""The review queue: writes held on a propose-only surface, decided by a person."""

from __future__ import annotations

import pytest

from engine.contract.errors import MemoryFailure
from engine.curation.review import Decision, decide, decision_log
from engine.storage.proposals import list_proposals


def test_held_add_becomes_a_proposal_and_a_decision_adds_it(client, engine, probe, valid):
    client.add("Alice drinks green tea every morning", "user:alice")
    before = probe.state()
    held = client.remember(
        "Alice drinks green tea each morning",
        ["user:alice"],
        decision="add",
        hold_writes=True,
        origin="mcp",
    )
    assert held["outcome"] == "candidates"
    assert [c["text"] for c in held["candidates"]] == ["Alice drinks green tea every morning"]
    probe.assert_nothing_written(before, "Alice drinks green tea each morning")

    (proposal,) = list_proposals(engine)
    assert proposal["state"] == "pending"
    assert (proposal["origin"], proposal["decision"]) == ("mcp", "add")
    assert proposal["text"] == "Alice drinks green tea each morning"
    assert proposal["scopes"] == ["user:alice"]
    assert (proposal["caller"], proposal["session"]) == ("test:agent", "test-session")
    assert proposal["candidates"] == held["candidates"]

    result = decide(engine, Decision(proposal["id"], "add", actor="person:tester"))
    valid("remember", result)
    assert result["outcome"] == "added"
    assert result["record"]["text"] == "Alice drinks green tea each morning"
    assert result["record"]["caller"] == "test:agent"  # the agent's identity is kept
    assert probe.state() == (before[0] + 1, before[1] + 1)
    assert list_proposals(engine) == []
    (decided,) = list_proposals(engine, state=None)
    assert (decided["state"], decided["decidedBy"]) == ("added", "person:tester")
    assert decided["resolution"] == result["record"]["uri"]

    entry = decision_log(engine)[0]
    assert entry["actor"] == "person:tester"
    assert entry["action"] == "review:add"
    assert entry["target"] == f"proposal:{proposal['id']}"
    assert entry["at"]

    with pytest.raises(MemoryFailure) as caught:
        decide(engine, Decision(proposal["id"], "add", actor="person:tester"))
    assert caught.value.code == "MEMORY_PROPOSAL_DECIDED"


def test_a_plain_propose_queues_nothing(client, engine):
    result = client.remember(
        "Bob likes coffee", ["user:bob"], decision="propose", hold_writes=True, origin="mcp"
    )
    assert result["outcome"] == "candidates"
    assert list_proposals(engine) == []


def test_held_supersede_then_decided_supersedes(client, engine, probe):
    old = client.add("Bob lives in Paris", "user:bob")
    before = probe.state()
    held = client.supersede(old, "Bob lives in Berlin", hold_writes=True, origin="mcp")
    assert held["outcome"] == "candidates"
    assert probe.state() == before
    (proposal,) = list_proposals(engine)
    assert proposal["decision"] == "supersede"
    assert proposal["predecessor"] == old["record"]["uri"]
    result = decide(engine, Decision(proposal["id"], "supersede", actor="person:tester"))
    assert result["outcome"] == "superseded"
    assert result["record"]["supersedes"] == [old["record"]["uri"]]
    assert [f["text"] for f in client.recall("bob lives", ["user:bob"])["facts"]] == [
        "Bob lives in Berlin"
    ]


def test_a_rejection_needs_a_reason_and_writes_nothing(client, engine, probe):
    client.remember("Bob likes tea", ["user:bob"], decision="add", hold_writes=True, origin="mcp")
    (proposal,) = list_proposals(engine)
    with pytest.raises(MemoryFailure) as caught:
        decide(engine, Decision(proposal["id"], "reject", actor="person:tester"))
    assert caught.value.code == "MEMORY_DECISION_INVALID"
    decided = decide(
        engine,
        Decision(proposal["id"], "reject", actor="person:tester", reason="Bob never said so"),
    )
    assert (decided["state"], decided["resolution"]) == ("rejected", "Bob never said so")
    assert probe.state() == (0, 0)
    assert list_proposals(engine) == []
    assert decision_log(engine)[0]["action"] == "review:reject"


def test_a_retired_fact_leaves_recall_and_candidates_and_can_be_restored(
    client, engine, memory, probe
):
    from engine.curation.review import restore, retire

    fact = client.add("Alice drinks green tea", "user:alice")["record"]
    retire(engine, ref=fact["uri"], actor="person:tester", reason="Alice said it is wrong")
    assert client.recall("green tea", ["user:alice"])["facts"] == []
    proposed = client.remember("Alice drinks green tea daily", ["user:alice"], decision="propose")
    assert proposed["candidates"] == []
    # Not current any more: it cannot be superseded.
    with pytest.raises(MemoryFailure) as caught:
        client.supersede(fact, "Alice drinks black tea")
    assert caught.value.code == "MEMORY_SUPERSEDE_CONFLICT"
    assert probe.state() == (1, 1)  # the file stays
    assert "Alice said it is wrong" in probe.file_texts()
    entry = decision_log(engine)[0]
    assert (entry["action"], entry["actor"], entry["target"]) == (
        "retire",
        "person:tester",
        fact["uri"],
    )
    # Reindex keeps the retirement (it is in the file) and finds nothing out of line.
    report = memory.reindex()
    assert (report["added"], report["changed"], report["removed"]) == (0, 0, 0)
    assert client.recall("green tea", ["user:alice"])["facts"] == []

    restore(engine, ref=fact["uri"], actor="person:tester")
    assert [f["recordId"] for f in client.recall("green tea", ["user:alice"])["facts"]] == [
        fact["recordId"]
    ]
    assert memory.reindex()["changed"] == 0
