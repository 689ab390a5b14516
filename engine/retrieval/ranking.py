"""Hybrid ranking over the in-memory index: the lexical leg (BM25 over its ceiling) fused with
the semantic leg (the cosine of the fact's best row, plus word alignment), with one round of
pseudo-relevance feedback. On LoCoMo this calibrated blend beat reciprocal rank fusion, which
let the weaker semantic leg pull good lexical hits down (docs/retrieval.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.retrieval.snapshot import Snapshot

# Weight of the cosine against ceiling-normalised BM25 in the hybrid score: the best of
# 0.5 / 1 / 1.5 / 2 on both LoCoMo turns and observations (docs/retrieval.md).
SEMANTIC_WEIGHT = 1.0
# Weight of the word alignment (engine/retrieval/word_alignment.py), the semantic leg's second part.
ALIGNMENT_WEIGHT = 0.5
# Pseudo-relevance feedback: the first pass's best facts, and how far the query moves to them
# (docs/retrieval.md: +1.1 R@10 on LoCoMo turns, +0.6 R@1 on observations).
FEEDBACK_FACTS = 3
FEEDBACK_WEIGHT = 0.6
# Ranked matches considered for the budget; beyond this a match is not even counted as omitted.
MATCH_WINDOW = 256
# A fact sharing no word with the query is a match when its word coverage (the mean over the
# query's words of the closest fact word's similarity, engine/retrieval/word_alignment.py) or
# its cosine reaches these floors. Each admits about 1 % of unrelated facts on LoCoMo pairs,
# for keyword queries and for whole questions alike; the cosine floor of 0.30 used alone
# before admitted 13 % for whole questions (a sentence is close to any sentence) and missed
# one-word queries ("drinks" for a fact about tea: cosine 0.24, coverage 0.39).
# docs/retrieval.md, "When a fact is a match", has the figures.
WORD_MATCH_FLOOR = 0.28
SEMANTIC_MATCH_FLOOR = 0.45


@dataclass(frozen=True)
class ScoreParts:
    """What a match's score is made of. Hybrid: score = lexical + SEMANTIC_WEIGHT x cosine +
    ALIGNMENT_WEIGHT x alignment, with lexical as BM25 over the query's ceiling. Lexical
    mode: the score is the BM25 itself, and the semantic parts are None."""

    lexical: float
    cosine: float | None = None
    alignment: float | None = None


@dataclass
class RankedMatches:
    positions: list[int]
    scores: list[float]
    mode: str
    parts: list[ScoreParts]


def rank(snapshot: Snapshot, query: str, mask: np.ndarray, embedder: Any) -> RankedMatches:
    """Visible matches, best first. A lexical match shares a (stemmed or fuzzily close) word
    with the query; a semantic match has a word coverage or a cosine at or above its floor.

    Hybrid score = BM25 / the query's BM25 ceiling (every term matched at saturation)
    + SEMANTIC_WEIGHT x cosine (the best of the fact's whole text and its sentences)
    + ALIGNMENT_WEIGHT x word alignment (each query word to the fact's closest word).
    Against the ceiling, a fact that only shares a common word stays a weak lexical match;
    normalising by the best hit instead would promote it to 1. docs/retrieval.md compares
    the fusions."""
    lexical = snapshot.lexical.scores(query, len(mask))
    if embedder is None or not snapshot.semantic:
        hits = np.flatnonzero(mask & (lexical > 0))
        top = hits[best_first(snapshot, hits, lexical[hits], MATCH_WINDOW)]
        return RankedMatches(
            [int(i) for i in top],
            [float(lexical[i]) for i in top],
            "lexical",
            [ScoreParts(float(lexical[i])) for i in top],
        )
    ceiling = snapshot.lexical.ceiling(query)
    normalised = lexical / ceiling if ceiling > 0 else np.zeros_like(lexical)
    # Word alignment does not depend on the query vector: computed once, before feedback.
    if snapshot.alignment is not None:
        aligned, coverage = snapshot.alignment.scores_and_coverage(query, len(mask))
    else:
        aligned, coverage = np.zeros_like(lexical), np.zeros_like(lexical)
    evidence = normalised + ALIGNMENT_WEIGHT * aligned
    # Whether a fact is a match before the cosine is known: it shares a word or its words
    # cover the query's.
    matched = mask & ((lexical > 0) | (coverage >= WORD_MATCH_FLOOR))
    query_vector = embedder.embed([query])[0]
    hits, cosine = _semantic_hits(snapshot, query_vector, matched, mask)
    fused = evidence[hits] + SEMANTIC_WEIGHT * cosine
    if len(hits):
        # Pseudo-relevance feedback (Rocchio): move the query towards its best first-pass
        # facts, then rank again; a static model's query vector alone misses paraphrases.
        first = hits[best_first(snapshot, hits, fused, FEEDBACK_FACTS)]
        query_vector = query_vector + FEEDBACK_WEIGHT * snapshot.whole_vectors(first).mean(axis=0)
        query_vector /= max(float(np.linalg.norm(query_vector)), 1e-12)
        hits, cosine = _semantic_hits(snapshot, query_vector, matched, mask)
        fused = evidence[hits] + SEMANTIC_WEIGHT * cosine
    order = best_first(snapshot, hits, fused, MATCH_WINDOW)
    return RankedMatches(
        [int(hits[i]) for i in order],
        [float(fused[i]) for i in order],
        "hybrid",
        [
            ScoreParts(float(normalised[hits[i]]), float(cosine[i]), float(aligned[hits[i]]))
            for i in order
        ],
    )


def best_first(
    snapshot: Snapshot, positions: np.ndarray, scores: np.ndarray, limit: int
) -> np.ndarray:
    """Indices into `scores` (those of the facts at `positions`), best first, at most `limit`.
    Scores equal to six decimals tie, and ties go to the older fact (created_at, then record
    id): never to a position, which depends on the order the index learnt of the facts."""
    if not len(scores):
        return np.zeros(0, dtype=np.int64)
    rounded = np.round(scores.astype(np.float64), 6)
    if len(scores) > limit:
        kth = np.partition(rounded, len(scores) - limit)[len(scores) - limit]
        candidates = np.flatnonzero(rounded >= kth)  # the best `limit`, and all tied with them
    else:
        candidates = np.arange(len(scores))
    created, ids = snapshot.order_keys(positions[candidates])
    order = np.lexsort((ids, created, -rounded[candidates]))
    return candidates[order][:limit]


def _semantic_hits(
    snapshot: Snapshot, query_vector: np.ndarray, matched: np.ndarray, mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The visible matches (`matched`: a shared word or the word coverage, or a cosine at
    the floor) and their cosines."""
    cosine = np.clip(snapshot.best_cosine(query_vector), 0.0, 1.0)
    hits = np.flatnonzero(matched | (mask & (cosine >= SEMANTIC_MATCH_FLOOR)))
    return hits, cosine[hits]
