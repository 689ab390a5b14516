"""Near-duplicate pairs across every scope (Review's Duplicates tab): the same fact stored in
two scopes is a pair, a scope narrows the list to pairs with both facts in it, a pair kept both
of stays out, and a limit or a cap on the facts compared is said (total, compared, visible),
never hidden. In lexical and semantic mode; on the server too under scripts/with_pgserver.py."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from engine.curation import duplicates, review
from engine.facade.service import MemoryService
from engine.memory import browse
from engine.retrieval import pair_blocks
from engine.retrieval.seam import LEXICAL, SEMANTIC, Visibility

# Words the tiny test model knows (tests/conftest.py TINY_VOCAB), so both modes see them.
TEA = "Alice prefers green tea"
LYON = "Bob lives in Lyon"


@pytest.fixture(params=["lexical", "semantic"])
def curator(request: pytest.FixtureRequest) -> Any:
    """A Client (tests/conftest.py) in each matching mode."""
    return request.getfixturevalue("client" if request.param == "lexical" else "semantic_client")


def uris(found: Any) -> list[tuple[str, str]]:
    return [(pair.left.uri, pair.right.uri) for pair in found.pairs]


def test_a_fact_in_two_scopes_is_a_pair_across_all_scopes(curator: Any) -> None:
    alice = curator.add(TEA, "user:alice")["record"]
    project = curator.add(TEA, "project:x")["record"]
    curator.add(LYON, "user:bob")
    found = MemoryService(curator.engine).curation.duplicates()  # no scope: every scope
    assert found.scope is None
    assert uris(found) == [(alice["uri"], project["uri"])]  # older first
    pair = found.pairs[0]
    assert pair.tier == "exact" and pair.similarity == 1.0
    assert pair.left.scopes == ("user:alice",) and pair.right.scopes == ("project:x",)
    assert (found.total, found.compared, found.visible) == (1, 3, 3)
    # One scope: pairs with both facts in it; neither scope holds both.
    for scope in ("user:alice", "project:x"):
        narrowed = duplicates.find_pairs(curator.engine, scope=scope)
        assert (narrowed.scope, narrowed.pairs, narrowed.total) == (scope, [], 0)
        assert narrowed.visible == 1
    # A fact in both scopes is a same-scope pair of each.
    both = curator.add(TEA + " daily", "user:alice", "project:x")["record"]
    narrowed = duplicates.find_pairs(curator.engine, scope="project:x")
    assert uris(narrowed) == [(project["uri"], both["uri"])]


def test_a_cross_scope_pair_kept_both_stays_out_and_one_retired_keeps_the_other(
    curator: Any,
) -> None:
    alice = curator.add(TEA, "user:alice")["record"]
    project = curator.add(TEA, "project:x")["record"]
    team = curator.add(TEA, "team:infra")["record"]
    engine = curator.engine
    assert duplicates.find_pairs(engine).total == 3
    duplicates.keep_both(engine, left=project["uri"], right=alice["uri"], actor="tui:tester")
    found = duplicates.find_pairs(engine)
    assert found.total == 2
    assert (alice["uri"], project["uri"]) not in uris(found)
    # Retiring the older of a cross-scope pair: the newer stays current in its own scope.
    duplicates.retire_duplicate(engine, gone=alice["uri"], kept=team["uri"], actor="tui:tester")
    assert browse.fact_row(engine, alice["uri"]).retired_at is not None
    assert uris(duplicates.find_pairs(engine)) == [(project["uri"], team["uri"])]
    assert review.decision_log(engine)[0]["detail"]["duplicateOf"] == team["uri"]


def test_a_limit_lists_the_best_pairs_first_and_counts_them_all(curator: Any) -> None:
    # Ties at 1.0 (one text in four scopes) are broken by age, with or without a limit.
    for scope in ("user:alice", "user:bob", "project:x", "team:infra"):
        curator.add(TEA, scope)
    curator.add(TEA + " daily", "user:alice")
    curator.add(LYON, "user:bob")
    curator.add(LYON + " now", "team:infra")
    index = curator.engine.retrieval()
    visibility = Visibility(None, None, curator.engine.now())
    every = index.duplicate_pairs(visibility)
    assert every.total == len(every) >= 7
    for limit in range(len(every) + 2):
        listed = index.duplicate_pairs(visibility, limit=limit)
        assert [(p.left, p.right, p.tier) for p in listed] == [
            (p.left, p.right, p.tier) for p in every[:limit]
        ]
        assert listed.total == every.total and listed.visible == listed.compared == 7
    found = duplicates.find_pairs(curator.engine, limit=2)
    assert len(found.pairs) == 2 and found.total == every.total


def test_a_big_view_compares_its_newest_facts_and_says_so(
    curator: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(duplicates, "FACTS_COMPARED", {LEXICAL: 2, SEMANTIC: 2})
    curator.add(TEA, "user:alice")
    project = curator.add(TEA, "project:x")["record"]
    team = curator.add(TEA, "team:infra")["record"]
    found = duplicates.find_pairs(curator.engine)
    assert uris(found) == [(project["uri"], team["uri"])]
    assert (found.total, found.compared, found.visible) == (1, 2, 3)


def test_band_by_band_products_find_what_the_whole_product_finds(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rng = np.random.default_rng(3)
    block = rng.standard_normal((23, 4)).astype(np.float32)
    block[7] = block[2]  # a cosine of 1 (clipped), across bands
    block /= np.linalg.norm(block, axis=1, keepdims=True)
    groups = rng.integers(0, 2, 23)
    whole = np.triu(np.clip(block @ block.T, 0, 1), k=1)
    wanted = {
        (int(i), int(j))
        for i, j in zip(*np.nonzero(whole >= 0.5), strict=True)
        if groups[i] == groups[j]
    }
    monkeypatch.setattr(pair_blocks, "BAND_ROWS", 5)
    i, j, scores = pair_blocks.close_vectors(block, groups, 0.5)
    assert set(zip(i.tolist(), j.tolist(), strict=True)) == wanted and len(i) == len(wanted)
    assert scores.tolist() == pytest.approx(whole[i, j].tolist(), abs=1e-6)
    assert float(scores.max()) <= 1.0
