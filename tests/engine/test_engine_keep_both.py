"""keep_both: a person keeps a near-duplicate pair; the pair is logged and not offered again."""

from __future__ import annotations

from typing import Any

import pytest

from engine.contract.errors import MemoryFailure
from engine.curation import duplicates, review
from engine.memory import browse


def test_keep_both_logs_the_pair_and_duplicate_pairs_skips_it(engine: Any, client: Any) -> None:
    a = client.add("Alice prefers green tea in the morning", "user:alice")["record"]
    b = client.add("Alice prefers green tea in the mornings", "user:alice")["record"]
    c = client.add("Alice prefers green tea in the morning daily", "user:alice")["record"]
    before = browse.duplicate_pairs(engine, scope="user:alice")
    assert len(before) == 3
    duplicates.keep_both(engine, left=b["uri"], right=a["uri"], actor="tui:tester")
    after = browse.duplicate_pairs(engine, scope="user:alice")
    assert len(after) == 2
    assert all({p.left.uri, p.right.uri} != {a["uri"], b["uri"]} for p in after)
    assert browse.kept_pairs(engine) == {frozenset((a["uri"], b["uri"]))}
    entry = review.decision_log(engine)[0]
    assert entry["action"] == "keep-both" and entry["actor"] == "tui:tester"
    assert entry["target"] == f"{b['uri']}|{a['uri']}"
    # Both facts stay current; nothing else changed.
    assert browse.status_counts(engine)["current"] == 3
    assert {c["uri"]} <= {p.left.uri for p in after} | {p.right.uri for p in after}


def test_keep_both_needs_two_current_facts(engine: Any, client: Any) -> None:
    a = client.add("Bob lives in Lyon", "user:bob")["record"]
    b = client.add("Bob lives in Lyon now", "user:bob")["record"]
    review.retire(engine, ref=b["uri"], actor="tui:tester", reason="duplicate")
    with pytest.raises(MemoryFailure) as failure:
        duplicates.keep_both(engine, left=a["uri"], right=b["uri"], actor="tui:tester")
    assert failure.value.code == "MEMORY_SUPERSEDE_CONFLICT"
    assert browse.kept_pairs(engine) == set()
