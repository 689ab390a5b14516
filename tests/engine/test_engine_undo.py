"""Undo: a person's latest decision is taken back through the review path, step by step, in
the file and the index alike, and the log keeps both the decision and its undo."""

from __future__ import annotations

import pytest

from engine.contract.errors import MemoryFailure
from engine.curation import duplicates, review
from engine.curation.undo import redo_last, undo_last
from engine.memory import browse

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


def test_a_decision_that_wrote_or_judged_facts_is_not_undone(client, engine, probe):
    a = client.add("Alice drinks green tea", "s")["record"]
    b = client.add("Alice drinks green tea daily", "s")["record"]
    duplicates.keep_both(engine, left=a["uri"], right=b["uri"], actor=PERSON)
    before = probe.state()
    failure = refused(undo_last, engine, "MEMORY_UNDO_UNSUPPORTED")
    assert "Supersede or retire the fact instead" in failure.message
    probe.assert_nothing_written(before)


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
