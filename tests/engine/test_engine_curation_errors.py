"""Curation calls on things that do not exist, or names that cannot be, fail with their own codes
and change nothing."""

from __future__ import annotations

import pytest

from engine.contract.errors import MemoryFailure
from engine.curation import review


def test_collection_names_and_duplicates_are_refused(engine, probe):
    before = probe.state()
    for bad in ("Work Notes", "-dash-first", "x" * 65):
        with pytest.raises(MemoryFailure) as failure:
            engine.add_collection(bad)
        assert failure.value.code == "MEMORY_COLLECTION_INVALID"
        assert "lowercase letters" in failure.value.message
    with pytest.raises(MemoryFailure) as failure:
        engine.add_collection("memory")
    assert failure.value.code == "MEMORY_COLLECTION_INVALID"
    assert "already exists" in failure.value.message
    assert sorted(engine.collections_by_name()) == ["memory"]
    assert probe.state() == before


def test_unknown_facts_and_proposals(engine, client):
    client.add("Gus keeps bees", "user:gus")
    with pytest.raises(MemoryFailure) as failure:
        review.retire(
            engine,
            ref="gno://memory/facts/2026-01-01/mem-0000000000000000.md",
            actor="tui:test",
            reason="gone",
        )
    assert failure.value.code == "MEMORY_NOT_FOUND"
    with pytest.raises(MemoryFailure) as failure:
        review.restore(engine, ref="#00000000", actor="tui:test")
    assert failure.value.code == "MEMORY_NOT_FOUND"
    with pytest.raises(MemoryFailure) as failure:
        review.decide(engine, review.Decision(proposal_id=999, action="add", actor="tui:test"))
    assert failure.value.code == "MEMORY_PROPOSAL_NOT_FOUND"
    assert "review --list" in failure.value.message
    assert review.decision_log(engine) == []
