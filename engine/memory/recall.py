"""recall (docs/contract.md section 6): rank current facts in scope, fill the budget, issue a
receipt.

Hybrid ranking fuses the lexical (BM25) and semantic (cosine + word alignment) legs by a
calibrated blend: BM25 normalised by the query's BM25 ceiling, plus weighted semantic scores.
On LoCoMo it beat reciprocal rank fusion, which let the weaker semantic leg pull good lexical
hits down (docs/retrieval.md)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import (
    POLICIES,
    POLICY_STRICTNESS,
    check_identity,
    digest_of,
    estimate_tokens,
    normalize_scopes,
)
from engine.contract.validation import ensure_valid
from engine.memory.receipts import issue_receipt, receipt_row
from engine.retrieval.snapshot import Snapshot
from engine.storage.records import public_fact

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

DEFAULT_MAX_FACTS = 8
DEFAULT_MAX_TOKENS = 512
MAX_FACTS_LIMIT = 256
MAX_TOKENS_LIMIT = 65_536
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
# Below this cosine the semantic leg does not count a fact as a match on its own.
SEMANTIC_MATCH_FLOOR = 0.30
# Egress ceiling -> the collection policies allowed to leave under it.
EGRESS_ALLOWS = {
    "local_only": {"local_only", "lan", "remote"},
    "lan": {"lan", "remote"},
    "remote": {"remote"},
}
EMPTY_HINT = (
    'No memory matched in these scopes. Store one with: gno-tui remember "<fact>" '
    "--scope <scope> --add"
)


@dataclass
class RecallRequest:
    query: str | None
    scopes: list[str] | None
    caller: str | None
    session: str | None
    max_facts: Any = DEFAULT_MAX_FACTS
    max_tokens: Any = DEFAULT_MAX_TOKENS
    collection: str | None = None
    egress: str | None = None


def _budget_value(value: Any, name: str, limit: int) -> int:
    if isinstance(value, str) and value.strip().lstrip("+").isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        raise MemoryFailure(
            "MEMORY_BUDGET_INVALID",
            f"{name} must be a whole number from 1 to {limit}, not {value!r} "
            f"(defaults: maxFacts {DEFAULT_MAX_FACTS}, maxTokens {DEFAULT_MAX_TOKENS}).",
        )
    return value


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
    with the query; a semantic match has a cosine at or above the floor.

    Hybrid score = BM25 / the query's BM25 ceiling (every term matched at saturation)
    + SEMANTIC_WEIGHT x cosine (the best of the fact's whole text and its sentences)
    + ALIGNMENT_WEIGHT x word alignment (each query word to the fact's closest word).
    Against the ceiling, a fact that only shares a common word stays a weak lexical match;
    normalising by the best hit instead would promote it to 1. docs/retrieval.md compares
    the fusions."""
    lexical = snapshot.lexical.scores(query)
    if embedder is None or snapshot.rows is None:
        hits = np.flatnonzero(mask & (lexical > 0))
        top = hits[np.argsort(-lexical[hits], kind="stable")][:MATCH_WINDOW]
        return RankedMatches(
            [int(i) for i in top],
            [float(lexical[i]) for i in top],
            "lexical",
            [ScoreParts(float(lexical[i])) for i in top],
        )
    ceiling = snapshot.lexical.ceiling(query)
    normalised = lexical / ceiling if ceiling > 0 else np.zeros_like(lexical)
    # Word alignment does not depend on the query vector: computed once, before feedback.
    aligned = (
        snapshot.alignment.scores(query)
        if snapshot.alignment is not None
        else np.zeros_like(lexical)
    )
    evidence = normalised + ALIGNMENT_WEIGHT * aligned
    query_vector = embedder.embed([query])[0]
    hits, cosine = _semantic_hits(snapshot, query_vector, lexical, mask)
    fused = evidence[hits] + SEMANTIC_WEIGHT * cosine
    if len(hits) and snapshot.vectors is not None:
        # Pseudo-relevance feedback (Rocchio): move the query towards its best first-pass
        # facts, then rank again; a static model's query vector alone misses paraphrases.
        first = hits[np.argsort(-fused, kind="stable")[:FEEDBACK_FACTS]]
        query_vector = query_vector + FEEDBACK_WEIGHT * snapshot.vectors[first].mean(axis=0)
        query_vector /= max(float(np.linalg.norm(query_vector)), 1e-12)
        hits, cosine = _semantic_hits(snapshot, query_vector, lexical, mask)
        fused = evidence[hits] + SEMANTIC_WEIGHT * cosine
    order = np.argsort(-fused, kind="stable")[:MATCH_WINDOW]
    return RankedMatches(
        [int(hits[i]) for i in order],
        [float(fused[i]) for i in order],
        "hybrid",
        [
            ScoreParts(float(normalised[hits[i]]), float(cosine[i]), float(aligned[hits[i]]))
            for i in order
        ],
    )


def _semantic_hits(
    snapshot: Snapshot, query_vector: np.ndarray, lexical: np.ndarray, mask: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The visible matches (a shared word, or a cosine at the floor) and their cosines."""
    cosine = np.clip(snapshot.best_cosine(query_vector), 0.0, 1.0)
    hits = np.flatnonzero(mask & ((lexical > 0) | (cosine >= SEMANTIC_MATCH_FLOOR)))
    return hits, cosine[hits]


def lineage(collections: list[tuple[str, str, str]]) -> dict[str, Any]:
    """egressLineage over (collection, policy, source) triples: strictest policy, sorted sources."""
    sources = [
        {"collection": name, "policy": policy, "source": source}
        for name, policy, source in sorted(set(collections))
    ]
    strictest = min((s["policy"] for s in sources), key=lambda p: POLICY_STRICTNESS[p])
    return {"effectivePolicy": strictest, "digest": digest_of(sources), "sources": sources}


def recall(engine: MemoryEngine, request: RecallRequest) -> dict[str, Any]:
    return recall_explained(engine, request)[0]


def recall_explained(
    engine: MemoryEngine, request: RecallRequest
) -> tuple[dict[str, Any], dict[str, ScoreParts]]:
    """A recall, and what each returned fact's score is made of (recordId -> parts). The parts
    stay outside the result: seed 001 admits no extra fields."""
    if request.query is None or not request.query.strip():
        raise MemoryFailure(
            "MEMORY_QUERY_REQUIRED",
            "The recall query is empty. Say what to look for, e.g. "
            "gno-tui recall 'what does alice drink' --scope user:alice.",
        )
    scopes = normalize_scopes(request.scopes)
    caller, session_id = check_identity(request.caller, request.session)
    max_facts = _budget_value(request.max_facts, "maxFacts", MAX_FACTS_LIMIT)
    max_tokens = _budget_value(request.max_tokens, "maxTokens", MAX_TOKENS_LIMIT)
    egress = request.egress or "local_only"
    if egress not in POLICIES:
        raise MemoryFailure(
            "MEMORY_POLICY_INVALID",
            f"Egress ceiling {egress!r} is unknown; use one of {', '.join(POLICIES)}.",
        )
    collections = engine.collections_by_name()
    if request.collection is not None:
        engine.require_collection(request.collection)
    allowed = [
        name
        for name, row in collections.items()
        if row.policy in EGRESS_ALLOWS[egress]
        and (request.collection is None or name == request.collection)
    ]
    now = engine.now()
    status = engine.embedder_status
    try:
        snapshot = engine.snapshot()
        mask = snapshot.visible(scopes=scopes, collections=allowed, now=now)
        ranked = rank(snapshot, request.query, mask, status.embedder)
    except MemoryFailure:
        raise
    except Exception as exc:
        raise MemoryFailure(
            "MEMORY_QUERY_FAILED",
            f"The index could not be searched: {type(exc).__name__}: {exc}. "
            "Run `gno-tui reindex` and retry.",
        ) from exc
    facts: list[dict[str, Any]] = []
    parts: dict[str, ScoreParts] = {}
    used = 0
    for position, score, part in zip(ranked.positions, ranked.scores, ranked.parts, strict=True):
        if len(facts) == max_facts:
            break
        fact = snapshot.facts[position]
        cost = estimate_tokens(fact.text)
        if used + cost > max_tokens:
            continue  # skipped: a later, smaller fact may still fit
        collection = collections[fact.collection]
        facts.append(
            {
                **public_fact(fact),
                "score": round(max(score, 0.0), 6),
                "spanHash": fact.content_hash,
                "egressLineage": lineage(
                    [(collection.name, collection.policy, collection.policy_source)]
                ),
            }
        )
        parts[fact.record_id] = part
        used += cost
    receipt = issue_receipt(
        caller=caller,
        session=session_id,
        issued_at=now,
        memory_ids=[f["recordId"] for f in facts],
        span_hashes=[f["spanHash"] for f in facts],
    )
    with Session(engine.db, expire_on_commit=False) as db_session:
        db_session.merge(receipt_row(receipt, now))
        db_session.commit()
    result: dict[str, Any] = {
        "facts": facts,
        "receipt": receipt,
        "budget": {
            "maxFacts": max_facts,
            "maxTokens": max_tokens,
            "usedTokens": used,
            "omitted": len(ranked.positions) - len(facts),
        },
        "retrieval": {"mode": ranked.mode},
    }
    if ranked.mode == "lexical":
        result["retrieval"]["semanticUnavailable"] = (
            status.unavailable_reason or "no embedding model loaded"
        )
    if facts:
        triples = [
            (s["collection"], s["policy"], s["source"])
            for f in facts
            for s in f["egressLineage"]["sources"]
        ]
        result["egressLineage"] = lineage(triples)
    else:
        result["hint"] = EMPTY_HINT
    return ensure_valid("recall", result), parts
