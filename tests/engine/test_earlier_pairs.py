"""The earlier items each item of an import file nearly repeats (engine/interop/earlier_pairs.py)
are what comparing every pair by hand gives: pairs sharing a collection and a scope, scored by
the cosine of their vectors rounded as remember rounds it, best first, each earlier item once."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.interop.earlier_pairs import earlier_pairs
from engine.retrieval.matching import SEMANTIC_TIERS


def _by_hand(vectors: np.ndarray, scopes: list[list[str]], targets: list[str]):
    found: dict[int, dict[int, float]] = {}
    for later in range(len(vectors)):
        for first in range(later):
            if targets[first] != targets[later] or not set(scopes[first]) & set(scopes[later]):
                continue
            score = round(min(float(np.float32(vectors[later] @ vectors[first])), 1.0), 4)
            if score >= SEMANTIC_TIERS.weak:
                found.setdefault(later, {})[first] = score
    return {
        later: sorted(((s, f) for f, s in pairs.items()), key=lambda p: (-p[0], p[1]))
        for later, pairs in found.items()
    }


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    size=st.integers(2, 40),
    spread=st.sampled_from([0.05, 0.2, 0.6]),
)
def test_likely_and_repeats_are_the_pairs_found_by_hand(seed: int, size: int, spread: float):
    rng = np.random.default_rng(seed)
    # A few themes, each item a noisy copy of one: near duplicates at every tier.
    themes = rng.normal(size=(4, 16))
    raw = themes[rng.integers(0, 4, size)] + spread * rng.normal(size=(size, 16))
    vectors = (raw / np.linalg.norm(raw, axis=1, keepdims=True)).astype(np.float32)
    scopes = [
        sorted({f"s{v}" for v in rng.integers(0, 3, rng.integers(1, 3))}) for _ in range(size)
    ]
    targets = [["memory", "team"][int(v)] for v in rng.integers(0, 2, size)]
    pairs = earlier_pairs([""] * size, scopes, targets, list(range(size)), vectors)
    expected = _by_hand(vectors, scopes, targets)
    everyone = np.ones(size, dtype=bool)
    for item in range(size):
        wanted = expected.get(item, [])
        got = [(e.similarity, e.item) for e in pairs.repeats(item, everyone)]
        # The same earlier items with the same scores (the last digit may round the other
        # way: one matrix product against one dot product), best first, then in file order.
        assert sorted(f for _, f in got) == sorted(f for _, f in wanted)
        scores = dict((f, s) for s, f in wanted)
        # One unit of the fourth place, which as a float difference is a hair over 1e-4.
        assert all(abs(s - scores[f]) <= 1e-4 + 1e-9 for s, f in got)
        assert got == sorted(got, key=lambda pair: (-pair[0], pair[1]))
        likely = [(e.similarity, e.item, e.tier) for e in pairs.likely(item)]
        assert [(s, f) for s, f, _ in likely] == [
            (s, f) for s, f in got if s >= SEMANTIC_TIERS.likely
        ]
        assert all(
            tier == ("exact" if s >= SEMANTIC_TIERS.exact else "likely") for s, _, tier in likely
        )
