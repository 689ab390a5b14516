"""recall (docs/contract.md section 6): rank current facts in scope, fill the budget, issue a
receipt.

Hybrid ranking fuses the lexical (BM25) and semantic (cosine + word alignment) legs by a
calibrated blend: BM25 normalised by the query's BM25 ceiling, plus weighted semantic scores.
On LoCoMo it beat reciprocal rank fusion, which let the weaker semantic leg pull good lexical
hits down (docs/retrieval.md)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

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
from engine.memory.receipts import issue_receipt
from engine.retrieval.ranking import ScoreParts
from engine.retrieval.seam import Visibility
from engine.storage.reads.fact_shape import public_fact

if TYPE_CHECKING:
    from engine.storage.reads import RecallStore

DEFAULT_MAX_FACTS = 8
DEFAULT_MAX_TOKENS = 512
MAX_FACTS_LIMIT = 256
MAX_TOKENS_LIMIT = 65_536
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
    # ASCII digits only: "²" passes str.isdigit() and int() refuses it.
    if isinstance(value, str) and re.fullmatch(r"\s*\+?[0-9]+\s*", value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
        raise MemoryFailure(
            "MEMORY_BUDGET_INVALID",
            f"{name} must be a whole number from 1 to {limit}, not {value!r} "
            f"(defaults: maxFacts {DEFAULT_MAX_FACTS}, maxTokens {DEFAULT_MAX_TOKENS}).",
        )
    return int(value)


def lineage(collections: list[tuple[str, str, str]]) -> dict[str, Any]:
    """egressLineage over (collection, policy, source) triples: strictest policy, sorted sources."""
    sources = [
        {"collection": name, "policy": policy, "source": source}
        for name, policy, source in sorted(set(collections))
    ]
    strictest = min((s["policy"] for s in sources), key=lambda p: POLICY_STRICTNESS[p])
    return {"effectivePolicy": strictest, "digest": digest_of(sources), "sources": sources}


def recall(engine: RecallStore, request: RecallRequest) -> dict[str, Any]:
    return recall_explained(engine, request)[0]


def recall_explained(
    engine: RecallStore, request: RecallRequest
) -> tuple[dict[str, Any], dict[str, ScoreParts]]:
    """A recall, and what each returned fact's score is made of (recordId -> parts). The parts
    stay outside the result: seed 001 admits no extra fields. `engine`: a MemoryEngine, or the
    sqlite3 store of a cold CLI call (engine/storage/reads/__init__.py), answering alike."""
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
        ranking = engine.retrieval().rank(request.query, Visibility(scopes, allowed, now))
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
    for match in ranking.matches:
        if len(facts) == max_facts:
            break
        fact = match.fact
        cost = estimate_tokens(fact.text)
        if used + cost > max_tokens:
            continue  # skipped: a later, smaller fact may still fit
        collection = collections[fact.collection]
        facts.append(
            {
                **public_fact(fact),
                "score": round(max(match.score, 0.0), 6),
                "spanHash": fact.content_hash,
                "egressLineage": lineage(
                    [(collection.name, collection.policy, collection.policy_source)]
                ),
            }
        )
        parts[fact.record_id] = match.parts
        used += cost
    receipt = issue_receipt(
        caller=caller,
        session=session_id,
        issued_at=now,
        memory_ids=[f["recordId"] for f in facts],
        span_hashes=[f["spanHash"] for f in facts],
    )
    engine.reads.add_receipt(receipt, now)
    result: dict[str, Any] = {
        "facts": facts,
        "receipt": receipt,
        "budget": {
            "maxFacts": max_facts,
            "maxTokens": max_tokens,
            "usedTokens": used,
            "omitted": len(ranking.matches) - len(facts),
        },
        "retrieval": {"mode": ranking.mode},
    }
    if ranking.mode == "lexical":
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
