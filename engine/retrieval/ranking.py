"""Hybrid ranking over the in-memory index: the lexical leg (BM25 over its ceiling) fused with
the semantic leg (the cosine of the fact's best row, plus word alignment), with one round of
pseudo-relevance feedback. On LoCoMo this calibrated blend beat reciprocal rank fusion, which
let the weaker semantic leg pull good lexical hits down (docs/retrieval.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from engine.retrieval.quantized import quantize
from engine.retrieval.results import ScoreParts as ScoreParts  # the seam's; kept here too
from engine.retrieval.semantic_graph import SemanticGraph
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
# Texts asked of the graph per pass (engine/retrieval/semantic_graph.py): the window's worth.
GRAPH_POOL = MATCH_WINDOW
# A fact sharing no word with the query is a match when its word coverage (the mean over the
# query's words of the closest fact word's similarity, engine/retrieval/word_alignment.py) or
# its cosine reaches these floors. Each admits about 1 % of unrelated facts on LoCoMo pairs,
# for keyword queries and for whole questions alike; the cosine floor of 0.30 used alone
# before admitted 13 % for whole questions (a sentence is close to any sentence) and missed
# one-word queries ("drinks" for a fact about tea: cosine 0.24, coverage 0.39).
# docs/retrieval.md, "When a fact is a match", has the figures.
WORD_MATCH_FLOOR = 0.28
SEMANTIC_MATCH_FLOOR = 0.45


@dataclass
class RankedMatches:
    """Positions best first with their scores; each one's ScoreParts made when asked for (a
    recall reads the parts of the few it returns, not of all MATCH_WINDOW ranked)."""

    positions: list[int]
    scores: list[float]
    mode: str
    lexical: list[float]
    cosine: list[float] | None = None
    alignment: list[float] | None = None

    def part(self, index: int) -> ScoreParts:
        if self.cosine is None or self.alignment is None:
            return ScoreParts(self.lexical[index])
        return ScoreParts(self.lexical[index], self.cosine[index], self.alignment[index])

    @property
    def parts(self) -> list[ScoreParts]:
        return [self.part(index) for index in range(len(self.positions))]


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
        scores = lexical[top].astype(np.float64).tolist()
        return RankedMatches(top.tolist(), scores, "lexical", scores)
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
    # A large store asks its approximate-neighbour graph for the closest texts instead of
    # scanning every row (engine/retrieval/semantic_graph.py); a small one, or a narrow
    # filter, scans.
    graph = snapshot.graph_for(mask)
    if graph is None:
        first_cosines = np.clip(snapshot.best_cosine(query_vector), 0.0, 1.0)
        hits = _hits(matched, mask, first_cosines)
        cosine = first_cosines[hits]
    else:
        hits, cosine = graph_shortlist(snapshot, graph, query_vector, mask, matched, evidence)
    fused = evidence[hits] + SEMANTIC_WEIGHT * cosine
    if len(hits):
        # Pseudo-relevance feedback (Rocchio): move the query towards its best first-pass
        # facts, then rank again; a static model's query vector alone misses paraphrases.
        first = hits[best_first(snapshot, hits, fused, FEEDBACK_FACTS)]
        moved = query_vector + FEEDBACK_WEIGHT * snapshot.whole_vectors(first).mean(axis=0)
        moved /= max(float(np.linalg.norm(moved)), 1e-12)
        if graph is None:
            hits = feedback_candidates(query_vector, moved, first_cosines, matched, mask, evidence)
            cosine = np.clip(snapshot.best_cosine_at(moved, hits), 0.0, 1.0)
            hits, cosine = _kept(hits, cosine, matched)
        else:
            hits, cosine = graph_shortlist(snapshot, graph, moved, mask, matched, evidence)
        fused = evidence[hits] + SEMANTIC_WEIGHT * cosine
    order = best_first(snapshot, hits, fused, MATCH_WINDOW)
    top = hits[order]
    return RankedMatches(
        top.tolist(),
        fused[order].astype(np.float64).tolist(),
        "hybrid",
        normalised[top].astype(np.float64).tolist(),
        cosine[order].astype(np.float64).tolist(),
        aligned[top].astype(np.float64).tolist(),
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


def graph_shortlist(
    snapshot: Snapshot,
    graph: SemanticGraph,
    query: np.ndarray,
    mask: np.ndarray,
    matched: np.ndarray,
    evidence: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The visible matches that can be among the MATCH_WINDOW best for `query`, with their
    exact cosines, found through the graph: the facts holding its GRAPH_POOL closest texts,
    then every other fact whose score could still reach the window. A fact the graph did not
    return has a cosine of at most the pool's last (`bound`), so its score is at most its
    evidence plus that; a match's score is at least its evidence. Exact when the graph
    returns the closest texts; what it can miss is measured (benchmarks/results/ann_scale.md)."""
    held, bound = graph.nearest(
        query,
        GRAPH_POOL,
        starts=snapshot.starts,
        reachable=snapshot.reachable(mask),
        share=snapshot.text_share(mask),
    )
    found = snapshot.copies(held, mask)
    cosine = np.clip(snapshot.best_cosine_at(query, found), 0.0, 1.0)
    found, cosine = _kept(found, cosine, matched)
    fused = evidence[found].astype(np.float64) + SEMANTIC_WEIGHT * cosine
    unseen = matched.copy()
    unseen[found] = False
    lows = np.concatenate([fused, evidence[unseen].astype(np.float64)])
    least = (
        np.partition(lows, len(lows) - MATCH_WINDOW)[len(lows) - MATCH_WINDOW]
        if len(lows) >= MATCH_WINDOW
        else -np.inf
    )
    reach = SEMANTIC_WEIGHT * max(bound, 0.0)
    possible = (mask if bound >= SEMANTIC_MATCH_FLOOR else matched) & (
        evidence + reach >= least - _SCORE_SLACK
    )
    possible[found] = False
    others = np.flatnonzero(possible)
    if not len(others):
        return found, cosine
    more = np.clip(snapshot.best_cosine_at(query, others), 0.0, 1.0)
    others, more = _kept(others, more, matched)
    positions = np.concatenate([found, others])
    order = np.argsort(positions, kind="stable")
    return positions[order], np.concatenate([cosine, more])[order]


def _hits(matched: np.ndarray, mask: np.ndarray, cosine: np.ndarray) -> np.ndarray:
    """The visible matches: `matched` (a shared word or the word coverage), or a cosine at
    the floor."""
    return np.flatnonzero(matched | (mask & (cosine >= SEMANTIC_MATCH_FLOOR)))


def _kept(
    positions: np.ndarray, cosine: np.ndarray, matched: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Of `positions` (visible) and their cosines, the matches."""
    keep = matched[positions] | (cosine >= SEMANTIC_MATCH_FLOOR)
    return positions[keep], cosine[keep]


# What float32 sums and the six-decimal rounding of best_first can move a score by, with room.
_SCORE_SLACK = 1e-4


def feedback_candidates(
    first_query: np.ndarray,
    moved_query: np.ndarray,
    first_cosines: np.ndarray,
    matched: np.ndarray,
    mask: np.ndarray,
    evidence: np.ndarray,
) -> np.ndarray:
    """The visible positions that can be among the MATCH_WINDOW best after feedback: the
    second pass scores these alone, not every row again (at 1M facts a scan of all rows was
    half of a recall), and ranks exactly as a full second pass would.

    Why it is exact: the products compare the int8 directions of the query and of each row
    (engine/retrieval/quantized.py), both unit vectors, so moving the query's direction by
    `shift` moves every row's cosine, hence each fact's best row, by at most `shift`. A fact
    whose second-pass score cannot reach what MATCH_WINDOW sure matches score at least is
    beaten by all of them, and is left out."""
    shift = float(np.linalg.norm(_direction(moved_query) - _direction(first_query)))
    shift += _SCORE_SLACK
    low = np.clip(first_cosines - shift, 0.0, 1.0)
    high = np.clip(first_cosines + shift, 0.0, 1.0)
    surely = np.flatnonzero(matched | (mask & (low >= SEMANTIC_MATCH_FLOOR)))
    maybe = np.flatnonzero(matched | (mask & (high >= SEMANTIC_MATCH_FLOOR)))
    if len(surely) < MATCH_WINDOW:
        return maybe
    floor = evidence[surely].astype(np.float64) + SEMANTIC_WEIGHT * low[surely]
    # The MATCH_WINDOW-th best lower bound among the sure matches.
    least = np.partition(floor, len(floor) - MATCH_WINDOW)[len(floor) - MATCH_WINDOW]
    ceiling = evidence[maybe].astype(np.float64) + SEMANTIC_WEIGHT * high[maybe]
    return cast(np.ndarray, maybe[ceiling >= least - _SCORE_SLACK])


def _direction(vector: np.ndarray) -> np.ndarray:
    """The unit vector the int8 products see for `vector` (its quantized direction)."""
    return cast(np.ndarray, quantize(vector).floats()[0].astype(np.float64))
