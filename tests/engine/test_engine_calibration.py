"""Threshold calibration: a person's review decisions become labelled pairs, and precision and
recall at a threshold are counted from them."""

from __future__ import annotations

import pytest

from engine.curation import duplicates, review
from engine.curation.calibration import JudgedPair, check_threshold, judged_pairs
from engine.curation.review import Decision, decide
from engine.curation.undo import undo_last
from engine.storage.proposals import list_proposals

PERSON = "tui:alice"


def hold(client, text, scope="user:alice"):
    held = client.remember(text, [scope], decision="add", hold_writes=True, origin="mcp")
    assert held["outcome"] == "candidates"
    return list_proposals(client.engine)[-1]


def test_precision_and_recall_count_the_persons_verdicts_at_the_threshold():
    pairs = [
        JudgedPair("proposal:1", "gno://m/a", 0.90, True, "lexical"),
        JudgedPair("proposal:2", "gno://m/b", 0.85, False, "lexical"),
        JudgedPair("decision:3", "gno://m/c", 0.70, True, "lexical"),
        JudgedPair("proposal:4", "gno://m/d", 0.97, False, "semantic"),  # another method
    ]
    check = check_threshold(pairs, mode="lexical", threshold=0.82)
    assert (check.judged, check.same, check.flagged) == (3, 2, 2)
    assert check.precision == pytest.approx(0.5)
    assert check.recall == pytest.approx(0.5)
    # A stricter threshold trades recall for precision.
    strict = check_threshold(pairs, mode="lexical", threshold=0.88)
    assert (strict.precision, strict.recall) == (1.0, 0.5)
    nothing = check_threshold(pairs, mode="lexical", threshold=0.99)
    assert (nothing.flagged, nothing.precision) == (0, None)
    assert check_threshold([], mode="semantic", threshold=0.86).recall is None


def test_decided_proposals_become_labelled_pairs(client, engine):
    tea = client.add("Alice drinks green tea every morning", "user:alice")["record"]
    city = client.add("Bob lives in Lyon", "user:bob")["record"]

    same = hold(client, "Alice drinks green tea each morning")
    assert [c["uri"] for c in same["candidates"]] == [tea["uri"]]
    decide(engine, Decision(same["id"], "supersede", PERSON, target=tea["uri"]))

    new = hold(client, "Alice drinks green tea each evening")
    assert new["candidates"], "the successor above is a candidate"
    decide(engine, Decision(new["id"], "add", PERSON))

    rejected = hold(client, "Bob lives in Lyon, France", "user:bob")
    assert [c["uri"] for c in rejected["candidates"]] == [city["uri"]]
    decide(engine, Decision(rejected["id"], "reject", PERSON, reason="not what Bob said"))

    pairs = judged_pairs(engine)
    # Superseding says "the same"; adding says "not the same" of every candidate; a
    # rejection is not about duplication and gives no pair.
    assert [(p.source, p.same) for p in pairs] == [(f"proposal:{same['id']}", True)] + [
        (f"proposal:{new['id']}", False) for _ in new["candidates"]
    ]
    assert pairs[0].similarity == same["candidates"][0]["similarity"]
    assert {p.mode for p in pairs} == {"lexical"}
    check = check_threshold(pairs, mode="lexical", threshold=0.0)
    assert (check.judged, check.same, check.recall) == (len(pairs), 1, 1.0)


def test_a_merge_labels_its_target_and_leaves_the_other_candidates_unlabelled(client, engine):
    first = client.add("Alice drinks green tea every morning", "user:alice")["record"]
    second = client.add("Alice drinks green tea every day", "user:alice")["record"]
    proposal = hold(client, "Alice drinks green tea every morning without sugar")
    assert {c["uri"] for c in proposal["candidates"]} == {first["uri"], second["uri"]}
    decide(
        engine,
        Decision(
            proposal["id"],
            "merge",
            PERSON,
            target=first["uri"],
            text="Alice drinks green tea every morning, without sugar",
        ),
    )
    assert [(p.candidate, p.same) for p in judged_pairs(engine)] == [(first["uri"], True)]


def test_duplicate_tab_verdicts_count_and_an_undone_one_does_not(client, engine):
    a = client.add("Alice drinks green tea every morning", "user:alice")["record"]
    b = client.add("Alice drinks green tea each morning", "user:alice")["record"]
    c = client.add("Alice drinks black tea every evening", "user:alice")["record"]
    duplicates.keep_both(
        engine, left=a["uri"], right=c["uri"], actor=PERSON, similarity=0.7, method="lexical"
    )
    duplicates.retire_duplicate(
        engine, gone=b["uri"], kept=a["uri"], actor=PERSON, similarity=0.95, method="lexical"
    )
    # A plain retire (no pair behind it) is no verdict.
    review.retire(engine, ref=c["uri"], actor=PERSON, reason="Alice stopped")
    verdicts = [(p.candidate, p.similarity, p.same) for p in judged_pairs(engine)]
    assert verdicts == [(c["uri"], 0.7, False), (a["uri"], 0.95, True)]
    check = check_threshold(judged_pairs(engine), mode="lexical", threshold=0.82)
    assert (check.precision, check.recall) == (1.0, 1.0)
    # Undoing the plain retire, then the duplicate retire, takes that verdict back.
    undo_last(engine, actor=PERSON)
    undo_last(engine, actor=PERSON)
    assert [p.same for p in judged_pairs(engine)] == [False]
