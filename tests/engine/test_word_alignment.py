"""The semantic leg's word alignment: a query word finds the fact that says it in other words.

A hand-made embedder with chosen word vectors makes the similarities exact, so each test can
say which fact must win and why; the sentence vector is the mean of the word vectors, as in a
static model.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pytest

import engine.retrieval.ranking as ranking_module
from engine.facade.factory import open_engine
from engine.memory.recall import RecallRequest
from engine.retrieval.embeddings import EmbedderStatus
from engine.retrieval.word_alignment import WordAlignment, WordVectors
from engine.storage.store import MemoryEngine

if TYPE_CHECKING:
    from conftest import Client


def _unit(*components: float) -> np.ndarray:
    vector = np.zeros(6, dtype=np.float32)
    vector[: len(components)] = components
    return vector / np.linalg.norm(vector)


# "relax" is a paraphrase of "destress" (cosine 0.5). "unwind" and "music" are each below the
# alignment floor (0.39), but their mean is closer to "destress" than "relax" is (0.51).
WORDS = {
    "destress": _unit(1),
    "relax": _unit(0.5, 0, 0, 0.866),
    "unwind": _unit(0.39, 0.92),
    "music": _unit(0.39, 0, 0.92),
    "melanie": _unit(0, 0, 0, 0, 1),
    "pottery": _unit(0, 0, 0, 0, 0, 1),
}


class HandEmbedder:
    model_id = "hand-made-test"
    dims = 6

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in texts:
            known = [WORDS[w] for w in text.lower().replace("?", " ").split() if w in WORDS]
            mean = np.mean(known, axis=0) if known else np.zeros(self.dims, dtype=np.float32)
            rows.append(mean / max(float(np.linalg.norm(mean)), 1e-12))
        return np.asarray(rows, dtype=np.float32).reshape(len(texts), self.dims)


def test_a_close_word_aligns_and_a_far_one_does_not():
    alignment = WordAlignment(["relax", "unwind music", "pottery"], WordVectors(HandEmbedder()))
    scores = alignment.scores("destress")
    assert scores[0] == pytest.approx(0.5, abs=1e-3)  # relax: its similarity to destress
    assert scores[1] == 0.0  # each word under the floor, however close their mean is
    assert scores[2] == 0.0


def test_the_same_word_aligns_fully_and_stop_words_do_not_count():
    alignment = WordAlignment(["Melanie likes pottery"], WordVectors(HandEmbedder()))
    assert alignment.scores("what is the pottery")[0] == pytest.approx(1.0, abs=1e-3)
    assert alignment.scores("what is the")[0] == 0.0


def test_a_rare_query_word_weighs_more_than_a_common_one():
    facts = ["melanie pottery", "melanie relax", "melanie music", "melanie unwind"]
    scores = WordAlignment(facts, WordVectors(HandEmbedder())).scores("melanie pottery")
    # Every fact has "melanie"; only the first has "pottery": that match is worth more.
    assert scores[0] == pytest.approx(1.0, abs=1e-3)
    assert 0 < scores[1] < 0.5
    assert scores[1] == pytest.approx(scores[2]) == pytest.approx(scores[3])


def test_word_vectors_embed_each_word_once_across_snapshots():
    calls: list[list[str]] = []

    class Counting(HandEmbedder):
        def embed(self, texts: Sequence[str]) -> np.ndarray:
            calls.append(list(texts))
            return super().embed(texts)

    vectors = WordVectors(Counting())
    WordAlignment(["melanie relax"], vectors)
    WordAlignment(["melanie relax", "melanie pottery"], vectors)
    assert calls == [["melanie", "relax"], ["pottery"]]


@pytest.mark.parametrize("rebuild_after", [None, 1])
def test_facts_added_after_a_query_align_exactly_as_in_a_fresh_index(
    monkeypatch: pytest.MonkeyPatch, rebuild_after: int | None
) -> None:
    """The first query lays the postings out in one array; facts that arrive later wait
    beside it until a rebuild. Either way a query scores every fact exactly as an index built
    from all of them at once."""
    import engine.retrieval.word_alignment as module

    if rebuild_after is not None:  # the later postings folded in at the next query
        monkeypatch.setattr(module.FlatPostings, "stale", lambda self: True)
    first = ["melanie relax", "unwind music", "pottery"]
    later = ["melanie destress", "relax pottery music", "melanie"]
    grown = WordAlignment(first, WordVectors(HandEmbedder()))
    for query in ("destress", "melanie pottery"):
        grown.scores_and_coverage(query)
    grown.add_many(list(enumerate(later, start=len(first))))
    fresh = WordAlignment(first + later, WordVectors(HandEmbedder()))
    for query in ("destress", "melanie pottery", "relax music"):
        got, want = grown.scores_and_coverage(query), fresh.scores_and_coverage(query)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), query
    assert grown.scores("destress")[3] == pytest.approx(1.0, abs=1e-3)  # a later fact found
    for query in ("destress", "melanie pottery", "relax music"):
        assert np.array_equal(grown.scores(query), _word_by_word(grown, query)), query


def _word_by_word(alignment: WordAlignment, query: str) -> np.ndarray:
    """The alignment as it was first written: each close word's postings read one by one."""
    from engine.retrieval.lexical import content_words
    from engine.retrieval.word_alignment import COVERAGE_MIN_SIMILARITY, MIN_WORD_SIMILARITY

    words = content_words(query)
    size = alignment.positions_seen
    total = np.zeros(size, np.float32)
    similarities = np.einsum(
        "ij,kj->ik", alignment._embedder.embed(words), alignment._matrix.view()
    )
    weights = [alignment._idf(word) for word in words]
    for row, weight in zip(similarities, weights, strict=True):
        best = np.zeros(size, dtype=np.float32)
        for column in np.flatnonzero(row >= COVERAGE_MIN_SIMILARITY):
            positions = alignment._postings[column].arrays()[0]
            best[positions] = np.maximum(best[positions], row[column])
        best = np.minimum(best, 1.0)
        total += weight * np.where(best >= MIN_WORD_SIMILARITY, best, 0.0)
    return total / sum(weights)


@pytest.fixture
def hand_client(tmp_path: Path, client_over: Callable[[MemoryEngine], Client]) -> Iterator[Client]:
    store: MemoryEngine = open_engine(
        home=tmp_path / "home", embedder_status=EmbedderStatus(HandEmbedder())
    )
    yield client_over(store)
    store.db.dispose()


def test_hybrid_recall_ranks_the_fact_that_says_the_query_word_differently_first(
    hand_client, monkeypatch
):
    # No word in common with the question: only the semantic leg can find these.
    paraphrase = hand_client.add("A long walk helps her relax", "s")["record"]["recordId"]
    vague = hand_client.add("She plays unwind music", "s")["record"]["recordId"]
    recalled = hand_client.recall("how does she destress?", ["s"])
    assert recalled["retrieval"] == {"mode": "hybrid"}
    assert [f["recordId"] for f in recalled["facts"]] == [paraphrase, vague]
    # Without the alignment the whole-sentence cosine alone prefers the vaguer fact.
    monkeypatch.setattr(ranking_module, "ALIGNMENT_WEIGHT", 0.0)
    recalled = hand_client.recall("how does she destress?", ["s"])
    assert [f["recordId"] for f in recalled["facts"]] == [vague, paraphrase]


def test_each_hybrid_score_is_the_sum_of_its_parts(hand_client):
    hand_client.add("A long walk helps her relax", "s")
    hand_client.add("She plays unwind music", "s")
    explained = hand_client.memory.recall_explained(
        RecallRequest(query="how does she destress?", scopes=["s"], caller="c", session="t")
    )
    result, parts = explained.result, explained.parts
    assert len(parts) == len(result["facts"]) == 2
    for fact in result["facts"]:
        part = parts[fact["recordId"]]
        total = (
            part.lexical
            + ranking_module.SEMANTIC_WEIGHT * part.cosine
            + ranking_module.ALIGNMENT_WEIGHT * part.alignment
        )
        assert fact["score"] == pytest.approx(total, abs=1e-5)
    walk = next(f for f in result["facts"] if "walk" in f["text"])
    assert parts[walk["recordId"]].alignment == pytest.approx(0.5, abs=1e-3)
    assert parts[walk["recordId"]].lexical == 0.0  # no word in common with the question


def test_lexical_mode_explains_the_score_as_bm25_alone(client):
    client.add("Alice drinks green tea", "s")
    explained = client.memory.recall_explained(
        RecallRequest(query="green tea", scopes=["s"], caller="c", session="t")
    )
    result, parts = explained.result, explained.parts
    (fact,) = result["facts"]
    part = parts[fact["recordId"]]
    assert (part.cosine, part.alignment) == (None, None)
    assert fact["score"] == pytest.approx(part.lexical, abs=1e-5)
