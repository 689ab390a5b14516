"""Merge: one fact that says what the proposal and the candidate say, superseding the
candidate, so the chain keeps the old wording; nothing is written when it cannot be done."""

from __future__ import annotations

import pytest

from engine.contract.errors import MemoryFailure
from engine.curation.merge import merged_text
from engine.curation.review import Decision, decide, decision_log
from engine.memory import browse
from engine.storage.proposals import list_proposals

PERSON = "tui:alice"


def hold(client, text):
    """An agent's add on a propose-only surface: held as a proposal for a person."""
    held = client.remember(text, ["user:alice"], decision="add", hold_writes=True, origin="mcp")
    assert held["outcome"] == "candidates"


def test_the_suggested_text_keeps_both_without_repeating_either():
    assert merged_text("Alice drinks tea", "She takes it without sugar.") == (
        "Alice drinks tea. She takes it without sugar."
    )
    # One already says the other: the longer one, as written.
    assert merged_text("Alice drinks green tea daily.", "alice drinks  green tea") == (
        "Alice drinks green tea daily."
    )
    assert merged_text("Bob lives in Lyon", "Bob lives in Lyon, near the river") == (
        "Bob lives in Lyon, near the river"
    )


def test_merge_supersedes_the_candidate_with_the_combined_text(client, engine):
    old = client.add("Alice drinks green tea", "user:alice")["record"]
    hold(client, "Alice takes her tea without sugar")
    proposal = list_proposals(engine)[0]
    text = "Alice drinks green tea without sugar"
    result = decide(engine, Decision(proposal["id"], "merge", PERSON, target=old["uri"], text=text))

    assert result["outcome"] == "superseded"
    new_uri = result["record"]["uri"]
    assert browse.fact_row(engine, old["uri"]).superseded_by == result["record"]["recordId"]
    recalled = client.recall("green tea sugar", ["user:alice"])["facts"]
    assert [(f["uri"], f["text"]) for f in recalled] == [(new_uri, text)]
    decided = list_proposals(engine, state=None)[0]
    assert (decided["state"], decided["resolution"]) == ("merged", new_uri)
    entry = decision_log(engine)[0]
    assert entry["action"] == "review:merge"
    assert entry["detail"]["after"]["text"] == text


def test_a_merge_without_text_or_target_writes_nothing_and_keeps_the_proposal(
    client, engine, probe
):
    client.add("Alice drinks green tea", "user:alice")
    hold(client, "Alice takes her tea without sugar")
    proposal = list_proposals(engine)[0]
    before = probe.state()
    with pytest.raises(MemoryFailure) as caught:
        decide(engine, Decision(proposal["id"], "merge", PERSON, text="  "))
    assert caught.value.code == "MEMORY_TEXT_REQUIRED"
    with pytest.raises(MemoryFailure) as caught:
        decide(engine, Decision(proposal["id"], "merge", PERSON, text="Alice drinks tea"))
    assert caught.value.code == "MEMORY_PREDECESSOR_REQUIRED"
    probe.assert_nothing_written(before)
    assert list_proposals(engine)[0]["state"] == "pending"


def test_merging_into_a_fact_superseded_meanwhile_is_a_conflict(client, engine, probe):
    old = client.add("Alice drinks green tea", "user:alice")["record"]
    hold(client, "Alice takes her tea without sugar")
    proposal = list_proposals(engine)[0]
    client.supersede(old, "Alice drinks black tea")
    before = probe.state()
    with pytest.raises(MemoryFailure) as caught:
        decide(
            engine,
            Decision(proposal["id"], "merge", PERSON, target=old["uri"], text="Alice: tea"),
        )
    assert caught.value.code == "MEMORY_SUPERSEDE_CONFLICT"
    probe.assert_nothing_written(before)
    assert list_proposals(engine)[0]["state"] == "pending"
