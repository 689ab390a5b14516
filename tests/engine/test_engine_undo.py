"""Undo: a person's latest decision is taken back through the review path, step by step, in
the file and the index alike, and the log keeps both the decision and its undo."""

from __future__ import annotations

import pytest

from engine.contract.errors import MemoryFailure
from engine.curation import duplicates, review
from engine.curation.chain_edits import ChainEdit, edit_chain
from engine.curation.journal import batch
from engine.curation.undo import redo_last, undo_last
from engine.memory import browse
from engine.memory.receipts import delete_receipts
from engine.storage import proposals

PERSON = "tui:alice"


def workbench(engine, uri):
    return browse.fact_row(engine, uri).workbench


def steps(step, engine, uri, *expected):
    """Call `step` (undo_last or redo_last) for PERSON once per (action, workbench): each takes
    back (or does again) that action, and leaves the fact with that workbench."""
    for action, after in expected:
        assert step(engine, actor=PERSON).action == action
        assert workbench(engine, uri) == after


def refused(step, engine, code):
    """`step` (undo_last or redo_last) for PERSON must be refused with `code`: the failure."""
    with pytest.raises(MemoryFailure) as caught:
        step(engine, actor=PERSON)
    assert caught.value.code == code
    return caught.value


def test_curation_is_undone_one_step_at_a_time_back_to_what_it_was(client, engine, memory):
    uri = client.add("Alice drinks green tea", "user:alice")["record"]["uri"]
    original = workbench(engine, uri)
    review.confirm(engine, ref=uri, actor=PERSON)
    confirmed = workbench(engine, uri)
    review.mark_stale(engine, ref=uri, actor=PERSON)
    assert workbench(engine, uri)["freshness"]["staleAfter"] is not None

    steps(undo_last, engine, uri, ("mark-stale", confirmed), ("confirm", original))
    # The files say the same as the index: a reindex changes nothing.
    assert memory.reindex()["changed"] == 0
    refused(undo_last, engine, "MEMORY_NOTHING_TO_UNDO")
    actions = [entry["action"] for entry in review.decision_log(engine)]
    assert actions == ["undo:confirm", "undo:mark-stale", "mark-stale", "confirm"]


def test_retire_and_restore_are_undone(client, engine, memory):
    uri = client.add("Bob lives in Lyon", "user:bob")["record"]["uri"]
    review.retire(engine, ref=uri, actor=PERSON, reason="moved")
    undo_last(engine, actor=PERSON)
    assert browse.fact_row(engine, uri).retired_at is None
    assert [f["uri"] for f in client.recall("Lyon", ["user:bob"])["facts"]] == [uri]
    # Restore, then undo it: retired again, with the reason it had.
    review.retire(engine, ref=uri, actor=PERSON, reason="moved to Paris")
    review.restore(engine, ref=uri, actor=PERSON)
    assert undo_last(engine, actor=PERSON).action == "restore"
    row = browse.fact_row(engine, uri)
    assert (row.retired_at is not None, row.retired_reason) == (True, "moved to Paris")
    assert memory.reindex()["changed"] == 0


def test_only_the_persons_own_decisions_are_undone(client, engine):
    uri = client.add("Carol moved to Berlin", "user:carol")["record"]["uri"]
    review.confirm(engine, ref=uri, actor="tui:bob")
    refused(undo_last, engine, "MEMORY_NOTHING_TO_UNDO")
    assert workbench(engine, uri)["provenance"]["status"] == "user_confirmed"


def propose(client, text, scopes=("user:alice",)):
    client.remember(text, list(scopes), hold_writes=True, origin="mcp")
    return proposals.list_proposals(client.engine)[-1]["id"]


def state_of(engine, proposal_id):
    return {p["id"]: p for p in proposals.list_proposals(engine, state=None)}[proposal_id]


def test_keep_both_is_withdrawn_and_given_again(client, engine, memory):
    a = client.add("Alice drinks green tea", "s")["record"]
    b = client.add("Alice drinks green tea daily", "s")["record"]
    duplicates.keep_both(engine, left=a["uri"], right=b["uri"], actor=PERSON)
    pair = frozenset((a["uri"], b["uri"]))
    assert pair in browse.kept_pairs(engine)
    assert undo_last(engine, actor=PERSON).action == "keep-both"
    assert pair not in browse.kept_pairs(engine)  # offered again
    assert redo_last(engine, actor=PERSON).action == "keep-both"
    assert pair in browse.kept_pairs(engine)
    assert memory.reindex()["changed"] == 0


def test_a_review_add_is_undone_by_withdrawing_its_fact_and_reopening_the_proposal(
    client, engine, memory
):
    pid = propose(client, "Carol moved to Berlin")
    written = review.decide(engine, review.Decision(pid, "add", PERSON, confirm=True))
    uri = written["record"]["uri"]
    step = undo_last(engine, actor=PERSON)
    # The add and its confirm are one decision: one step.
    assert (step.action, step.count) == ("review:add", 2)
    # The fact leaves the store (tests/engine/test_engine_undo_latest.py: as before the add).
    assert browse.list_facts(engine, text="Berlin").total == 0
    assert state_of(engine, pid)["state"] == "pending"
    assert memory.reindex()["changed"] == 0
    # Redo decides the proposal again: the fact is written anew, confirmed, and added.
    assert redo_last(engine, actor=PERSON).action == "review:add"
    assert state_of(engine, pid)["state"] == "added"
    back = browse.fact_row(engine, state_of(engine, pid)["resolution"])
    assert (back.text, back.retired_at) == ("Carol moved to Berlin", None)
    assert back.uri != uri  # a new fact: the withdrawn one is gone for good
    assert back.workbench["provenance"]["status"] == "user_confirmed"
    assert memory.reindex()["changed"] == 0
    # And undone again, one step.
    assert undo_last(engine, actor=PERSON).count == 2
    assert browse.list_facts(engine, text="Berlin").total == 0
    redo_last(engine, actor=PERSON)
    assert [f["text"] for f in client.recall("Berlin", ["user:alice"])["facts"]] == [
        "Carol moved to Berlin"
    ]


def test_a_review_supersede_is_undone_by_reverting_the_chain(client, engine, memory):
    old = client.add("Alice drinks green tea in the morning", "user:alice")["record"]
    pid = propose(client, "Alice drinks black tea in the morning")
    review.decide(engine, review.Decision(pid, "supersede", PERSON, target=old["uri"]))
    assert undo_last(engine, actor=PERSON).action == "review:supersede"
    chain = browse.chain(engine, old["uri"])
    assert [row.text for row in chain] == [
        "Alice drinks green tea in the morning",
        "Alice drinks black tea in the morning",
        "Alice drinks green tea in the morning",
    ]
    assert chain[-1].superseded_by is None and chain[-1].retired_at is None
    assert state_of(engine, pid)["state"] == "pending"
    # Redo supersedes the chain's head now (the old target is superseded).
    redo_last(engine, actor=PERSON)
    assert browse.chain(engine, old["uri"])[-1].text == "Alice drinks black tea in the morning"
    assert memory.reindex()["changed"] == 0


def test_a_rejection_is_undone(client, engine):
    pid = propose(client, "The moon is made of cheese")
    review.decide(engine, review.Decision(pid, "reject", PERSON, reason="not true"))
    assert undo_last(engine, actor=PERSON).action == "review:reject"
    assert state_of(engine, pid)["state"] == "pending"
    redo_last(engine, actor=PERSON)
    assert (state_of(engine, pid)["state"], state_of(engine, pid)["resolution"]) == (
        "rejected",
        "not true",
    )


def test_a_chain_edit_is_logged_and_undone(client, engine, memory):
    first = client.add("The API runs on port 8080", "project:x")["record"]
    edit = ChainEdit(first["uri"], first["contentHash"], "The API runs on port 9090", PERSON, "s")
    edit_chain(engine, edit)
    assert review.decision_log(engine)[0]["action"] == "chain:supersede"
    assert undo_last(engine, actor=PERSON).action == "chain:supersede"
    assert browse.chain(engine, first["uri"])[-1].text == "The API runs on port 8080"
    assert redo_last(engine, actor=PERSON).action == "chain:supersede"
    assert browse.chain(engine, first["uri"])[-1].text == "The API runs on port 9090"
    assert memory.reindex()["changed"] == 0


def test_what_cannot_be_undone_stops_undo_with_the_reason(client, engine):
    # Never passed over to an older decision: tests/engine/test_engine_undo_latest.py has the rest.
    uri = client.add("Alice drinks green tea", "user:alice")["record"]["uri"]
    review.confirm(engine, ref=uri, actor=PERSON)
    confirmed = workbench(engine, uri)
    digest = client.recall("green tea", ["user:alice"])["receipt"]["digest"]
    delete_receipts(engine, digests=[digest], actor=PERSON)
    failure = refused(undo_last, engine, "MEMORY_UNDO_UNSUPPORTED")
    assert "deleted receipts are gone" in failure.message
    assert workbench(engine, uri) == confirmed


def test_a_batch_is_one_step_each_way(client, engine):
    uris = [client.add(f"Fact number {n}", "s")["record"]["uri"] for n in range(3)]
    originals = [workbench(engine, uri) for uri in uris]
    review.confirm(engine, ref=uris[0], actor=PERSON)  # before the batch: its own step
    with batch():
        for uri in uris[1:]:
            review.mark_stale(engine, ref=uri, actor=PERSON)
    step = undo_last(engine, actor=PERSON)
    assert (step.action, step.count) == ("mark-stale", 2)
    assert [workbench(engine, uri) for uri in uris[1:]] == originals[1:]
    assert workbench(engine, uris[0])["provenance"]["status"] == "user_confirmed"
    assert redo_last(engine, actor=PERSON).count == 2
    assert all(workbench(engine, uri)["freshness"]["staleAfter"] for uri in uris[1:])


def test_redo_does_again_what_each_undo_took_back_newest_undo_first(client, engine, memory):
    uri = client.add("Alice drinks green tea", "user:alice")["record"]["uri"]
    review.confirm(engine, ref=uri, actor=PERSON)
    confirmed = workbench(engine, uri)
    review.mark_stale(engine, ref=uri, actor=PERSON)
    stale = workbench(engine, uri)
    undo_last(engine, actor=PERSON)
    undo_last(engine, actor=PERSON)

    steps(redo_last, engine, uri, ("confirm", confirmed), ("mark-stale", stale))
    assert memory.reindex()["changed"] == 0
    refused(redo_last, engine, "MEMORY_NOTHING_TO_REDO")
    log = review.decision_log(engine)
    assert [entry["action"] for entry in log[:2]] == ["redo:mark-stale", "redo:confirm"]
    # Each redo names the undo it takes back.
    undo_ids = [e["id"] for e in log if e["action"].startswith("undo:")]
    assert sorted(e["detail"]["redoes"] for e in log[:2]) == sorted(undo_ids)


def test_a_redo_can_be_undone_and_redone_again(client, engine, memory):
    uri = client.add("Bob lives in Lyon", "user:bob")["record"]["uri"]
    review.retire(engine, ref=uri, actor=PERSON, reason="moved")
    undo_last(engine, actor=PERSON)
    assert redo_last(engine, actor=PERSON).action == "retire"
    row = browse.fact_row(engine, uri)
    assert (row.retired_at is not None, row.retired_reason) == (True, "moved")
    assert client.recall("Lyon", ["user:bob"])["facts"] == []

    assert undo_last(engine, actor=PERSON).action == "retire"
    assert browse.fact_row(engine, uri).retired_at is None
    assert redo_last(engine, actor=PERSON).action == "retire"
    assert browse.fact_row(engine, uri).retired_reason == "moved"
    assert memory.reindex()["changed"] == 0


def test_a_new_decision_ends_the_redo_trail(client, engine, probe):
    uri = client.add("Carol moved to Berlin", "user:carol")["record"]["uri"]
    review.confirm(engine, ref=uri, actor=PERSON)
    undo_last(engine, actor=PERSON)
    review.mark_stale(engine, ref=uri, actor=PERSON)
    before = probe.state()
    failure = refused(redo_last, engine, "MEMORY_NOTHING_TO_REDO")
    assert "a new decision since the last undo ends the trail" in failure.message
    probe.assert_nothing_written(before)
    assert workbench(engine, uri)["provenance"]["status"] != "user_confirmed"


def test_only_the_persons_own_undos_are_redone(client, engine):
    uri = client.add("Dan plays chess", "user:dan")["record"]["uri"]
    review.confirm(engine, ref=uri, actor="tui:bob")
    undo_last(engine, actor="tui:bob")
    refused(redo_last, engine, "MEMORY_NOTHING_TO_REDO")
