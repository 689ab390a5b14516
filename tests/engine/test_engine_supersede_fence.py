"""Supersede chains and compare-and-swap; the fence (replayed receipts, derived text)."""

from __future__ import annotations

import copy
from datetime import timedelta

import pytest
import yaml
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.memory.receipts import fence_exposure
from engine.storage.schema import tables


def _fail(call, code: str) -> MemoryFailure:
    with pytest.raises(MemoryFailure) as caught:
        call()
    assert caught.value.code == code, caught.value
    return caught.value


# -- supersede --------------------------------------------------------------------------------


def test_supersede_chain_returns_only_the_head(client, probe, engine):
    a = client.add("Carol lives in Paris", "user:carol", "team:x")
    b = client.supersede(a, "Carol lives in Lyon")
    assert b["outcome"] == "superseded"
    assert b["sync"] == {"status": "completed"}
    c = client.supersede(b, "Carol lives in Berlin")
    assert c["outcome"] == "superseded"

    assert a["record"]["supersedes"] == []
    assert b["record"]["supersedes"] == [a["record"]["uri"]]
    assert c["record"]["supersedes"] == [b["record"]["uri"]]
    # Scopes left out of a supersede are the predecessor's.
    assert b["record"]["scopes"] == c["record"]["scopes"] == ["user:carol", "team:x"]

    result = client.recall("where does carol live: paris lyon berlin", ["user:carol"])
    assert [f["recordId"] for f in result["facts"]] == [c["record"]["recordId"]]
    assert result["facts"][0]["supersedes"] == [b["record"]["uri"]]

    # Nothing is deleted: three files, three rows, the chain is in the relations.
    assert probe.state() == (3, 3)
    front = yaml.safe_load(
        probe.files()[0]
        .parent.joinpath(c["record"]["recordId"] + ".md")
        .read_text(encoding="utf-8")
        .split("---\n")[1]
    )
    assert front["relations"] == {"supersedes": [b["record"]["uri"]]}
    with Session(engine.db) as session:
        row_a = session.get(tables.FactRow, a["record"]["recordId"])
        row_b = session.get(tables.FactRow, b["record"]["recordId"])
        assert row_a is not None and row_b is not None
        assert row_a.superseded_by == b["record"]["recordId"]
        assert row_b.superseded_by == c["record"]["recordId"]

    before = probe.state()
    failure = _fail(lambda: client.supersede(a, "Carol lives in Rome"), "MEMORY_SUPERSEDE_CONFLICT")
    assert failure.exit_code == 4
    assert b["record"]["recordId"] in failure.message or "superseded" in failure.message
    probe.assert_nothing_written(before, "Carol lives in Rome")
    # Superseding the head works.
    d = client.supersede(c, "Carol lives in Rome")
    assert d["outcome"] == "superseded"


def test_supersede_with_new_scopes_and_by_record_id(client):
    a = client.add("Bob likes coffee", "user:bob")
    b = client.remember(
        "Bob likes tea",
        ["user:bob", "team:y"],
        decision="supersede",
        predecessor=a["record"]["recordId"],
        predecessor_hash=a["record"]["contentHash"],
    )
    assert b["outcome"] == "superseded"
    assert b["record"]["scopes"] == ["user:bob", "team:y"]
    assert b["record"]["supersedes"] == [a["record"]["uri"]]


def test_supersede_keeps_the_predecessors_collection(client, engine):
    engine.add_collection("work")
    a = client.add("The deadline is on friday", "p", collection="work")
    b = client.supersede(a, "The deadline is on monday")
    assert b["record"]["uri"].startswith("gno://work/")
    _fail(
        lambda: client.supersede(b, "The deadline is never", collection="memory"),
        "MEMORY_DECISION_INVALID",
    )


def test_supersede_checks_predecessor_before_the_exact_check(client):
    a = client.add("Bob lives in Paris", "user:bob")
    client.add("Bob lives in Lyon", "user:bob")
    # The successor's text already exists, but a stale hash is still reported first.
    _fail(
        lambda: client.remember(
            "Bob lives in Lyon",
            None,
            decision="supersede",
            predecessor=a["record"]["uri"],
            predecessor_hash="f" * 64,
        ),
        "MEMORY_PREDECESSOR_HASH_MISMATCH",
    )


# -- the fence --------------------------------------------------------------------------------


def test_replaying_a_recalled_text_with_its_receipt_is_fenced(client, probe):
    fact = client.add("Alice drinks green tea", "user:alice")["record"]
    recalled = client.recall("green tea", ["user:alice"])
    assert [f["recordId"] for f in recalled["facts"]] == [fact["recordId"]]
    before = probe.state()
    # The whole recall result, its receipt object, in another scope, by another caller:
    # all fenced, and the fence runs before the exact check (the text exists in user:alice).
    for receipt in (recalled, recalled["receipt"]):
        for scopes in (["user:alice"], ["elsewhere"]):
            failure = _fail(
                lambda r=receipt, s=scopes: client.remember(
                    "Alice  drinks green tea ", s, receipt=r, caller="someone:else"
                ),
                "MEMORY_FENCED_REPLAY",
            )
            assert "supersede" in failure.message
            assert failure.exit_code == 1
    # Even a propose is fenced rather than answered `existing`.
    _fail(
        lambda: client.remember(
            "Alice drinks green tea", ["user:alice"], decision="propose", receipt=recalled
        ),
        "MEMORY_FENCED_REPLAY",
    )
    probe.assert_nothing_written(before)
    # Without the receipt the same call is an ordinary exact match.
    assert client.remember("Alice drinks green tea", ["user:alice"])["outcome"] == "existing"


def test_a_valid_receipt_does_not_fence_new_text(client):
    client.add("Alice drinks green tea", "user:alice")
    recalled = client.recall("green tea", ["user:alice"])
    assert (
        client.remember("Alice moved to Lyon", ["user:alice"], receipt=recalled)["outcome"]
        == "added"
    )


def test_fence_exposure_counts_the_receipts_that_returned_a_text(client, engine):
    client.add("Alice drinks green tea", "user:alice")
    client.add("Alice moved to Lyon", "user:alice")
    start = engine.now()
    engine._clock = lambda: start + timedelta(minutes=1)
    client.recall("green tea", ["user:alice"], caller="agent:one")
    engine._clock = lambda: start + timedelta(minutes=2)
    client.recall("alice tea", ["user:alice"], caller="agent:two", max_facts=1)
    # Whitespace does not matter: the contentHash is of the normalised text.
    exposure = fence_exposure(engine, "Alice  drinks green tea ")
    assert exposure.receipts == 2
    assert exposure.latest_caller == "agent:two"
    assert fence_exposure(engine, "Alice moved to Lyon").receipts == 0  # never returned
    assert fence_exposure(engine, "Bob drinks green tea").receipts == 0


def test_derived_from_a_stored_memory_is_fenced_before_the_exact_check(client, probe):
    fact = client.add("Bob likes coffee", "user:bob")["record"]
    before = probe.state()
    for text in ("Bob likes coffee", "Bob probably likes espresso"):
        failure = _fail(
            lambda t=text: client.remember(t, ["user:bob"], derived_from=fact["uri"]),
            "MEMORY_FENCED_DERIVED",
        )
        assert fact["uri"] in failure.message
    probe.assert_nothing_written(before)
    # Derived from something that is not a stored memory: fine.
    assert (
        client.remember(
            "Bob probably likes espresso", ["user:bob"], derived_from="https://example.org/chat"
        )["outcome"]
        == "added"
    )


@pytest.mark.parametrize("tamper", ["memory id", "span hash", "digest", "unissued", "shape"])
def test_a_tampered_receipt_is_invalid(client, probe, tamper):
    fact = client.add("Alice drinks green tea", "user:alice")["record"]
    other = client.add("Alice likes black tea", "user:alice")["record"]
    recalled = client.recall("green tea", ["user:alice"])
    receipt = copy.deepcopy(recalled["receipt"])
    if tamper == "memory id":
        receipt["memoryIds"][0] = other["recordId"]  # digest kept
    elif tamper == "span hash":
        receipt["spanHashes"][0] = "0" * 64
    elif tamper == "digest":
        receipt["digest"] = "0" * 64
    elif tamper == "unissued":
        from engine.memory.receipts import issue_receipt

        receipt = issue_receipt(
            caller="x",
            session="y",
            issued_at=client.engine.now(),
            memory_ids=[fact["recordId"]],
            span_hashes=[fact["contentHash"]],
        )
    else:
        del receipt["spanHashes"]
    before = probe.state()
    failure = _fail(
        lambda: client.remember("A fresh fact about Alice", ["user:alice"], receipt=receipt),
        "MEMORY_RECEIPT_INVALID",
    )
    assert "unmodified" in failure.message
    probe.assert_nothing_written(before, "A fresh fact about Alice")


def test_validation_runs_before_the_fence(client):
    client.add("Alice drinks green tea", "user:alice")
    recalled = client.recall("green tea", ["user:alice"])
    _fail(
        lambda: client.remember("Alice drinks green tea", None, receipt=recalled),
        "MEMORY_SCOPES_REQUIRED",
    )


def test_compare_and_swap_refuses_a_predecessor_that_moved_under_the_writer(
    client, engine, probe, monkeypatch
):
    """Past the predecessor check, another writer supersedes it before the index write: the
    index's compare-and-swap refuses, and the already written file is taken back."""
    from sqlalchemy import update

    from engine.storage.store import MemoryEngine

    old = client.add("Bob lives in Paris", "user:bob")["record"]
    real = MemoryEngine.index_new_fact

    def overtaken(self, row, predecessor):
        with Session(self.db) as session:
            session.execute(
                update(tables.FactRow)
                .where(tables.FactRow.record_id == old["recordId"])
                .values(superseded_by="mem-ffffffffffffffff")
            )
            session.commit()
        return real(self, row, predecessor)

    monkeypatch.setattr(MemoryEngine, "index_new_fact", overtaken)
    failure = _fail(
        lambda: client.supersede(old, "Bob lives in Berlin"), "MEMORY_SUPERSEDE_CONFLICT"
    )
    assert failure.exit_code == 4
    probe.assert_nothing_written((1, 1), "Bob lives in Berlin")
