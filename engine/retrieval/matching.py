"""Dedup candidates for remember: who in scope says nearly the same thing, scored and tiered.

The thresholds are calibrated on STS-B dev and reported on STS-B test by
benchmarks/calibrate_tiers.py; docs/matching.md records the figures they came from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.retrieval.embeddings import Embedder
from engine.retrieval.lexical import similarity as lexical_similarity
from engine.retrieval.quantized import cosines_many
from engine.retrieval.ranking import best_first
from engine.retrieval.results import ScoredCandidate as ScoredCandidate  # the seam's
from engine.retrieval.semantic_graph import CANDIDATE_EXPANSION
from engine.retrieval.snapshot import Snapshot


@dataclass(frozen=True)
class Tiers:
    exact: float  # at or above: the same fact in other words (or identical)
    likely: float  # at or above: a likely duplicate; this is `matching.threshold`
    weak: float  # the floor: below it a fact is not a candidate at all


SEMANTIC_TIERS = Tiers(exact=0.95, likely=0.86, weak=0.66)
LEXICAL_TIERS = Tiers(exact=0.94, likely=0.82, weak=0.58)
MAX_CANDIDATES = 8
# In lexical mode rapidfuzz runs on the BM25 shortlist only (it is too slow for a whole store).
LEXICAL_SHORTLIST = 64


def tier_of(score: float, tiers: Tiers) -> str | None:
    if score >= tiers.exact:
        return "exact"
    if score >= tiers.likely:
        return "likely"
    if score >= tiers.weak:
        return "weak"
    return None


def matching_block(embedder: Embedder | None, reason: str | None) -> dict[str, Any]:
    if embedder is not None:
        return {"mode": "semantic", "threshold": SEMANTIC_TIERS.likely}
    return {
        "mode": "lexical",
        "semanticUnavailable": reason or "no embedding model loaded",
        "threshold": LEXICAL_TIERS.likely,
    }


def find_candidates(
    snapshot: Snapshot, *, text: str, mask: np.ndarray, embedder: Embedder | None
) -> list[ScoredCandidate]:
    """Among the facts `mask` lets through, those that say nearly what `text` says."""
    if not mask.any():
        return []
    if embedder is not None and snapshot.semantic:
        query = embedder.embed([text])[0]
        # Only the visible rows are scored when they are a small part of the store (a scope
        # usually is): the product is the cost of a propose. A large store's graph names the
        # few worth scoring.
        visible = _closest_visible(snapshot, mask, query)
        similarity = np.clip(snapshot.whole_cosines(query, visible), 0.0, 1.0)
        tiers = SEMANTIC_TIERS
        order = best_first(snapshot, visible, similarity, MAX_CANDIDATES * 4)
        scored = [
            (int(visible[i]), float(similarity[i])) for i in order if similarity[i] >= tiers.weak
        ]
    else:
        tiers = LEXICAL_TIERS
        bm25 = snapshot.lexical.scores(text, len(mask))
        hits = np.flatnonzero(mask & (bm25 > 0))
        shortlist = [
            int(hits[i]) for i in best_first(snapshot, hits, bm25[hits], LEXICAL_SHORTLIST)
        ]
        scored = [(i, lexical_similarity(text, snapshot.facts.text(i))) for i in shortlist]
    if not scored:
        return []
    positions = np.asarray([position for position, _ in scored], dtype=np.int64)
    scores = np.asarray([score for _, score in scored], dtype=np.float64)
    results = []
    for index in best_first(snapshot, positions, scores, len(scored)):
        position, score = scored[int(index)]
        tier = tier_of(score, tiers)
        if tier is not None:
            results.append(ScoredCandidate(snapshot.facts[position], round(score, 4), tier))
    return results[:MAX_CANDIDATES]


# Texts scored against the store per product in semantic_candidates_many, and the store's
# whole-text rows gathered at a time (memory: STORE_CHUNK x dims int8, 16 MiB at 256
# dimensions, and a QUERY_CHUNK x STORE_CHUNK block of float64 products, 64 MiB).
QUERY_CHUNK = 128
STORE_CHUNK = 65_536
# A batch asking for likely-tier candidates only walks this many rows first: at 976k facts (a
# scope's 122k visible), of 8,192 held-out texts, walks of 64 found all 341 of the exact
# scan's likely candidates, at 3.5 times the scan's speed; walks of 32 were 15 % faster but
# missed 3, each within 0.012 of the tier (benchmarks/results/import_dedup_1m.md).
BATCH_EXPANSION = 64


def semantic_candidates_many(
    snapshot: Snapshot, *, mask: np.ndarray, queries: np.ndarray, least: str = "weak"
) -> list[list[ScoredCandidate]]:
    """`find_candidates` for many texts that may see the same facts (`mask`), given their
    unit vectors (`queries`, one row each): one matrix product per chunk of texts and of the
    store instead of one scan of the store per text (an import's dedup). `least`: the lowest
    tier wanted; "likely" (what an import decides by) lets a graph walk end much sooner."""
    assert snapshot.semantic
    floor = SEMANTIC_TIERS.likely if least == "likely" else SEMANTIC_TIERS.weak
    # The batch's own crossover was measured for likely-tier walks; the full tiers (the
    # candidates of the few held items) keep a single query's.
    graph = snapshot.graph_for(mask, batch=least == "likely")
    if graph is not None:
        # Through the graph: each text asks for the few texts closest to it (the graph walked
        # for the whole batch at once), where the product below scores the whole store.
        reachable, share = snapshot.reachable_texts(mask)
        held = graph.nearest_many(
            queries,
            MAX_CANDIDATES,
            starts=snapshot.starts,
            reachable=reachable,
            share=share,
            whole_only=True,
            expansion=BATCH_EXPANSION if least == "likely" else CANDIDATE_EXPANSION,
            floor=floor,
        )
        return [
            _candidates_of(snapshot, snapshot.copies(texts, mask), query, floor)
            for texts, query in zip(held, queries, strict=True)
        ]
    visible = np.flatnonzero(mask)
    if not len(visible):
        return [[] for _ in range(len(queries))]
    # The int8 products of every text with a chunk of the visible whole-text rows at once,
    # each the bits a propose of that text computes (quantized.cosines_many). Each text keeps
    # the facts at the weak tier or above, chunk by chunk.
    kept_at: list[list[np.ndarray]] = [[] for _ in range(len(queries))]
    kept_score: list[list[np.ndarray]] = [[] for _ in range(len(queries))]
    for begin in range(0, len(visible), STORE_CHUNK):
        block = snapshot.whole_rows(visible[begin : begin + STORE_CHUNK])
        for start in range(0, len(queries), QUERY_CHUNK):
            similarity = np.clip(
                cosines_many(block, queries[start : start + QUERY_CHUNK]), 0.0, 1.0
            )
            for offset, row in enumerate(similarity):
                hits = np.flatnonzero(row >= floor)
                if len(hits):
                    kept_at[start + offset].append(hits + begin)
                    kept_score[start + offset].append(row[hits])
    found: list[list[ScoredCandidate]] = []
    for at_parts, score_parts in zip(kept_at, kept_score, strict=True):
        if not at_parts:
            found.append([])
            continue
        at, scores = np.concatenate(at_parts), np.concatenate(score_parts)
        ordered = best_first(snapshot, visible[at], scores, MAX_CANDIDATES)
        found.append(
            [
                ScoredCandidate(
                    snapshot.facts[int(visible[at[i]])],
                    round(float(scores[i]), 4),
                    tier_of(float(scores[i]), SEMANTIC_TIERS) or "weak",
                )
                for i in ordered
            ]
        )
    return found


def _closest_visible(snapshot: Snapshot, mask: np.ndarray, query: np.ndarray) -> np.ndarray:
    """The visible positions a propose scores: all of them, or through the graph (when the
    store keeps one and the mask is wide) those holding the texts closest to `query`."""
    graph = snapshot.graph_for(mask)
    if graph is None:
        return np.flatnonzero(mask)
    held, _ = graph.nearest(
        query,
        MAX_CANDIDATES,  # texts: each of their visible copies is a candidate too
        starts=snapshot.starts,
        reachable=snapshot.reachable(mask),
        share=snapshot.text_share(mask),
        whole_only=True,
        expansion=CANDIDATE_EXPANSION,
        floor=SEMANTIC_TIERS.weak,  # a candidate is at the weak tier or above
    )
    return snapshot.copies(held, mask)


def _candidates_of(
    snapshot: Snapshot, visible: np.ndarray, query: np.ndarray, floor: float
) -> list[ScoredCandidate]:
    """One text's semantic candidates among `visible`, scored as find_candidates scores them
    (the whole texts' int8 cosines), the best MAX_CANDIDATES at `floor` or above."""
    similarity = np.clip(snapshot.whole_cosines(query, visible), 0.0, 1.0)
    order = best_first(snapshot, visible, similarity, MAX_CANDIDATES)
    return [
        ScoredCandidate(
            snapshot.facts[int(visible[i])],
            round(float(similarity[i]), 4),
            tier_of(float(similarity[i]), SEMANTIC_TIERS) or "weak",
        )
        for i in order
        if similarity[i] >= floor
    ]
