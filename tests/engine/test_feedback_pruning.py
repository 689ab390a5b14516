"""Recall's second pass (after pseudo-relevance feedback) scores only the facts that can still
be among the best (engine/retrieval/ranking.py `feedback_candidates`), and ranks exactly as a
pass over every fact does: the same facts, order, scores and score parts."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

import engine.retrieval.ranking as ranking
from engine.retrieval.embeddings import embed_facts, load_embedder
from engine.retrieval.snapshot import IndexedFact, Snapshot
from engine.retrieval.word_alignment import WordVectors

SUBJECTS = ["I", "My sister", "My dog", "Our neighbour", "My boss", "My son"]
VERBS = ["likes", "hates", "plays", "collects", "drinks", "grows", "paints", "visits", "cooks"]
THINGS = ["tea", "coffee", "chess", "guitar", "stamps", "tomatoes", "roses", "paris", "pasta"]
THINGS += ["novels", "jazz", "football", "mountains", "sushi", "poetry", "bicycles"]
START = datetime(2026, 1, 1, tzinfo=UTC)


def sentence(rng: random.Random) -> str:
    return f"{rng.choice(SUBJECTS)} {rng.choice(VERBS)} {rng.choice(THINGS)}."


@pytest.fixture(scope="module")
def index() -> tuple[Snapshot, object]:
    embedder = load_embedder().embedder
    assert embedder is not None
    rng = random.Random(5)
    texts = [" ".join(sentence(rng) for _ in range(rng.choice((1, 2, 3)))) for _ in range(1500)]
    snapshot = Snapshot(1, 0, embedder.dims, WordVectors(embedder), semantic=True)
    facts = [
        IndexedFact(
            record_id=f"mem-{n:016x}",
            docid=f"#{n:08x}",
            uri=f"gno://memory/facts/2026-01-01/mem-{n:016x}.md",
            collection="memory",
            text=text,
            content_hash=f"{n:064x}",
            scopes=(f"s{n % 3}",),
            caller="c",
            session="s",
            created_at=START + timedelta(seconds=n % 400),  # ties broken by record id
            source=None,
            supersedes=(),
            expires_at=None,
        )
        for n, text in enumerate(texts)
    ]
    snapshot.add_many(facts, embed_facts(embedder, texts))
    return snapshot, embedder


QUERIES = [
    "what does my sister drink",
    "chess",
    "who paints roses",
    "favourite food",
    "my dog likes football and sushi",
    "music",
    "travel to paris mountains",
    "reads novels poetry",
]


@pytest.mark.parametrize("query", QUERIES)
def test_the_pruned_second_pass_ranks_as_a_full_one(index, query, monkeypatch):
    snapshot, embedder = index
    for scopes in (["s0", "s1", "s2"], ["s1"]):
        mask = snapshot.visible(scopes=scopes, collections=None, now=START)
        sizes: list[tuple[int, int]] = []
        pruned = ranking.feedback_candidates

        def measured(*args, pruned=pruned, sizes=sizes):
            kept = pruned(*args)
            sizes.append((len(kept), int(args[4].sum())))
            return kept

        monkeypatch.setattr(ranking, "feedback_candidates", measured)
        fast = ranking.rank(snapshot, query, mask, embedder)

        def everything(first, moved, cosines, matched, visible, evidence):
            return np.flatnonzero(visible)

        monkeypatch.setattr(ranking, "feedback_candidates", everything)
        full = ranking.rank(snapshot, query, mask, embedder)
        monkeypatch.undo()
        assert fast.positions == full.positions
        assert fast.scores == full.scores
        assert fast.parts == full.parts
        assert len(fast.positions) == min(ranking.MATCH_WINDOW, len(full.positions)) > 0
        if scopes == ["s0", "s1", "s2"]:
            ((kept, visible),) = sizes
            assert kept < visible  # it pruned: fewer facts scored than are visible


@pytest.mark.parametrize("batch", [1, 7, 64, 100_000])
def test_scoring_some_facts_in_bounded_batches_gives_their_full_scan_scores(
    index, batch, monkeypatch
):
    """A broad query's second pass can score most of the store: its rows are read a bounded
    batch at a time, not copied all at once, and every fact scores the bits of a full scan."""
    import engine.retrieval.snapshot as snapshot_module

    snapshot, embedder = index
    monkeypatch.setattr(snapshot_module, "GATHER_ROWS", batch)
    query = embedder.embed(["my son collects stamps"])[0]
    query = query / np.linalg.norm(query)
    every = snapshot.best_cosine(query)
    rng = np.random.default_rng(3)
    for size in (1, 2, 50, 900, len(every)):
        positions = np.sort(rng.choice(len(every), size=size, replace=False))
        assert np.array_equal(snapshot.best_cosine_at(query, positions), every[positions])
