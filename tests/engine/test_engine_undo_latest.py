"""Undo takes back the person's latest decision or says why it cannot, and then changes
nothing: never an older decision instead. A policy change is undone like any decision (a
step that relaxes a policy waits for a yes). An undone add leaves the store as it was before
the add: no retired fact, no file, no row (embedded and server mode alike)."""

from __future__ import annotations

import pytest

from engine.contract.errors import MemoryFailure
from engine.curation import review
from engine.curation.journal import batch
from engine.curation.undo import NeedsYes, redo_last, undo_last
from engine.memory import browse
from engine.memory.receipts import delete_receipts
from engine.storage import proposals

PERSON = "tui:alice"


def propose(client, text):
    client.remember(text, ["user:alice"], hold_writes=True, origin="mcp")
    return proposals.list_proposals(client.engine)[-1]["id"]


def state_of(engine, pid):
    return {p["id"]: p["state"] for p in proposals.list_proposals(engine, state=None)}[pid]


def policy_of(engine, name):
    row = engine.collections_by_name()[name]
    return row.policy, row.policy_source, row.policy_revision


def refused(engine, **options):
    with pytest.raises(MemoryFailure) as caught:
        undo_last(engine, actor=PERSON, **options)
    assert caught.value.code == "MEMORY_UNDO_UNSUPPORTED"
    return caught.value


def confirmed(engine, uri):
    return browse.fact_row(engine, uri).workbench["provenance"]["status"] == "user_confirmed"


def test_a_relaxed_policy_is_undone_before_the_older_decisions(client, engine):
    pid = propose(client, "Carol moved to Berlin")
    review.decide(engine, review.Decision(pid, "add", PERSON))  # older: stays until its turn
    engine.set_policy("memory", "lan", actor=PERSON)

    step = undo_last(engine, actor=PERSON)
    # Tightening back applies at once; the source and a new revision are the engine's record.
    assert (step.action, step.target) == ("set-policy", "memory")
    assert policy_of(engine, "memory") == ("local_only", "config_default", 3)
    assert state_of(engine, pid) == "added"
    # Redo relaxes it again: asked first, like any relaxation.
    with pytest.raises(NeedsYes) as asked:
        redo_last(engine, actor=PERSON)
    assert "relaxes memory from local_only back to lan" in asked.value.question
    assert policy_of(engine, "memory")[0] == "local_only"
    redo_last(engine, actor=PERSON, yes=asked.value.decision)
    assert policy_of(engine, "memory") == ("lan", "explicit", 4)
    if engine.store.keeps_fact_files:  # collections.yaml, canonical there, says so too
        assert "policy: lan" in engine.collections_file.read_text(encoding="utf-8")
    # And the next two steps: the redo, then the review add.
    assert undo_last(engine, actor=PERSON).action == "set-policy"
    assert undo_last(engine, actor=PERSON).action == "review:add"
    assert state_of(engine, pid) == "pending"


def test_undoing_a_tightening_relaxes_only_after_a_yes_to_that_step(client, engine):
    uri = client.add("Alice drinks green tea", "user:alice")["record"]["uri"]
    review.confirm(engine, ref=uri, actor=PERSON)
    engine.add_collection("team", policy="lan")
    engine.set_policy("team", "local_only", actor=PERSON)

    with pytest.raises(NeedsYes) as asked:
        undo_last(engine, actor=PERSON)
    assert "relaxes team from local_only back to lan (revision 2)" in asked.value.question
    # Asking changed nothing, and a yes to another step is no yes to this one.
    assert policy_of(engine, "team") == ("local_only", "explicit", 2)
    assert confirmed(engine, uri)
    assert "since you said yes" in refused(engine, yes=asked.value.decision + 1).message
    assert policy_of(engine, "team") == ("local_only", "explicit", 2)
    step = undo_last(engine, actor=PERSON, yes=asked.value.decision)
    assert (step.action, step.target) == ("set-policy", "team")
    assert policy_of(engine, "team") == ("lan", "explicit", 3)
    assert confirmed(engine, uri)


def test_a_policy_changed_since_by_someone_else_stops_z(client, engine):
    uri = client.add("Alice drinks green tea", "user:alice")["record"]["uri"]
    review.confirm(engine, ref=uri, actor=PERSON)
    engine.set_policy("memory", "lan", actor=PERSON)
    engine.set_policy("memory", "remote", actor="tui:bob")

    failure = refused(engine)
    assert "Cannot undo your latest decision, set-policy on memory" in failure.message
    assert "policy changed since (now remote, revision 3)" in failure.message
    assert policy_of(engine, "memory")[0] == "remote"
    assert confirmed(engine, uri)  # the older decision is not taken back instead


def test_deleted_receipts_stop_z_and_nothing_older_is_undone(client, engine, probe):
    uri = client.add("Alice drinks green tea", "user:alice")["record"]["uri"]
    review.confirm(engine, ref=uri, actor=PERSON)
    digest = client.recall("green tea", ["user:alice"])["receipt"]["digest"]
    delete_receipts(engine, digests=[digest], actor=PERSON)
    log = len(review.decision_log(engine))

    for _ in range(2):  # the same answer each time: it is a wall, not a skip
        failure = refused(engine)
        assert "delete-receipts on receipts: deleted receipts are gone" in failure.message
        assert "Nothing was undone" in failure.message
    assert confirmed(engine, uri)
    assert len(review.decision_log(engine)) == log


def test_a_fact_changed_since_stops_z_with_the_reason(client, engine):
    pid = propose(client, "Bob lives in Lyon")
    written = review.decide(engine, review.Decision(pid, "add", PERSON))
    client.supersede(written, "Bob lives in Paris")  # by an agent, since

    failure = refused(engine)
    assert "review:add on proposal:" in failure.message
    assert "was superseded or retired since" in failure.message
    assert state_of(engine, pid) == "added"


def test_an_undone_add_leaves_the_store_as_it_was(client, engine, memory, probe):
    client.add("Dan plays chess", "user:alice")
    before_counts = browse.status_counts(engine)
    before = (probe.files(), probe.rows())
    pid = propose(client, "Carol moved to Berlin")
    written = review.decide(engine, review.Decision(pid, "add", PERSON, confirm=True))
    uri = written["record"]["uri"]

    step = undo_last(engine, actor=PERSON)
    assert (step.action, step.target, step.count) == ("review:add", f"proposal:{pid}", 2)
    assert browse.status_counts(engine) == before_counts  # no retired fact, one fact fewer
    assert (probe.files(), probe.rows()) == before
    assert client.recall("Berlin", ["user:alice"])["facts"] == []
    assert state_of(engine, pid) == "pending"
    assert memory.reindex()["changed"] == 0
    entry = review.decision_log(engine)[1]  # the add's undo (the confirm's went with it)
    assert entry["action"] == "undo:review:add"
    assert (entry["detail"]["withdrew"]["uri"], entry["detail"]["withdrew"]["text"]) == (
        uri,
        "Carol moved to Berlin",
    )
    with pytest.raises(MemoryFailure) as caught:
        browse.fact_row(engine, uri)
    assert caught.value.code == "MEMORY_NOT_FOUND"

    # Redo decides the proposal again as it was (added, confirmed): the fact is written anew.
    assert redo_last(engine, actor=PERSON).action == "review:add"
    assert state_of(engine, pid) == "added"
    (fact,) = client.recall("Berlin", ["user:alice"])["facts"]
    assert fact["text"] == "Carol moved to Berlin"
    assert confirmed(engine, fact["uri"])
    # Undone again, in one step, and the store is as before once more.
    assert undo_last(engine, actor=PERSON).count == 2
    assert browse.status_counts(engine) == before_counts
    assert (probe.files(), probe.rows()) == before
    assert memory.reindex()["changed"] == 0


def test_a_batch_is_taken_back_as_far_as_it_can_be_and_the_rest_is_named(client, engine):
    pids = [propose(client, text) for text in ("Bob lives in Lyon", "Dave likes maps")]
    with batch():
        written = [review.decide(engine, review.Decision(pid, "add", PERSON)) for pid in pids]
    client.supersede(written[0], "Bob lives in Paris")  # by an agent, since

    step = undo_last(engine, actor=PERSON)
    assert (step.target, step.count) == (f"proposal:{pids[1]}", 1)
    (left,) = step.not_undone
    assert left.startswith(f"review:add on proposal:{pids[0]}") and "superseded" in left
    assert [state_of(engine, pid) for pid in pids] == ["added", "pending"]
    # What is left of the batch is the latest step now: it cannot be taken back, and says so.
    assert "was superseded or retired since" in refused(engine).message
    assert state_of(engine, pids[0]) == "added"
