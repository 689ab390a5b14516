"""An import's dedup scores its items against the store in blocks of facts
(engine/retrieval/matching.py `semantic_candidates_many`): each item gets the candidates it
gets with the whole store in one block, in the same order and tiers."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

import engine.retrieval.matching as matching
from engine.retrieval.embeddings import embed_facts, load_embedder
from engine.retrieval.snapshot import IndexedFact, Snapshot

PEOPLE = ["I", "My sister", "My dog", "Our neighbour", "My son"]
LIKES = ["like", "love", "enjoy", "hate"]
THINGS = ["green tea", "black coffee", "chess", "the guitar", "old stamps", "red roses"]
START = datetime(2026, 2, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def store() -> tuple[Snapshot, object]:
    embedder = load_embedder().embedder
    assert embedder is not None
    rng = random.Random(11)
    texts = [
        f"{rng.choice(PEOPLE)} {rng.choice(LIKES)} {rng.choice(THINGS)} on day {n % 9}."
        for n in range(900)
    ]
    snapshot = Snapshot(1, 0, embedder.dims, None, semantic=True)
    facts = [
        IndexedFact(
            record_id=f"mem-{n:016x}",
            docid=f"#{n:06x}",
            uri=f"gno://memory/facts/{n}.md",
            collection="memory",
            text=text,
            content_hash=f"{n:064x}",
            scopes=(f"s{n % 2}",),
            caller="c",
            session="s",
            created_at=START + timedelta(seconds=n % 50),
            source=None,
            supersedes=(),
            expires_at=None,
        )
        for n, text in enumerate(texts)
    ]
    snapshot.add_many(facts, embed_facts(embedder, texts))
    return snapshot, embedder


@pytest.mark.parametrize("chunk", [1, 97, 500])
def test_items_get_the_same_candidates_whatever_the_store_block(store, chunk, monkeypatch):
    snapshot, embedder = store
    items = ["I love green tea on day 3.", "My dog hates chess", "Nothing like any fact here"]
    items += ["Our neighbour enjoys red roses on day 8."]
    vectors = np.asarray(embedder.embed(items), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1)[:, None]
    mask = snapshot.visible(scopes=["s0", "s1"], collections=None, now=START)
    mask[::7] = False  # some facts out of sight
    whole = matching.semantic_candidates_many(snapshot, mask=mask, queries=vectors)
    monkeypatch.setattr(matching, "STORE_CHUNK", chunk)
    blocked = matching.semantic_candidates_many(snapshot, mask=mask, queries=vectors)
    assert any(whole) and not all(whole)  # some items have candidates, one has none
    for one, other in zip(whole, blocked, strict=True):
        assert [(c.fact.record_id, c.tier) for c in one] == [
            (c.fact.record_id, c.tier) for c in other
        ]
        assert [c.similarity for c in one] == pytest.approx([c.similarity for c in other], abs=1e-4)
        hidden = {f"mem-{n:016x}" for n in range(0, 900, 7)}
        assert not hidden & {c.fact.record_id for c in other}


def test_a_batch_asked_for_the_likely_tier_gets_the_likely_and_exact_candidates(store):
    """What an import decides by: `least="likely"` leaves out the weak tier and nothing else
    (the same facts, scores and order as the likely and exact candidates of a full answer)."""
    snapshot, embedder = store
    items = ["I love green tea on day 3.", "My dog hates chess on day 4.", "Nothing like it"]
    items += ["Our neighbour enjoys red roses on day 8.", "My son likes the guitar on day 1."]
    vectors = np.asarray(embedder.embed(items), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1)[:, None]
    mask = snapshot.visible(scopes=["s0"], collections=None, now=START)
    full = matching.semantic_candidates_many(snapshot, mask=mask, queries=vectors)
    likely = matching.semantic_candidates_many(snapshot, mask=mask, queries=vectors, least="likely")
    tiers = [c.tier for found in full for c in found]
    assert "weak" in tiers and {"likely", "exact"} & set(tiers)  # both kinds are there
    for one, other in zip(full, likely, strict=True):
        kept = [(c.fact.record_id, c.similarity, c.tier) for c in one if c.tier != "weak"]
        assert [(c.fact.record_id, c.similarity, c.tier) for c in other] == kept
