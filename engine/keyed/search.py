"""search of the keyed API (engine/keyed/service.py, docs/keyed-api.md): BM25
(engine.retrieval.lexical) over the live keyed heads of a namespace, a corpus kept per index
generation in the engine's own cache (engine.derived), with optional synonym and caller-given
expansion; a page is filled while its JSON stays within `max_bytes`."""

from __future__ import annotations

import copy
import math
import re
import unicodedata
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from engine.contract import visibility
from engine.contract.errors import MemoryFailure
from engine.contract.validation import ensure_valid
from engine.keyed import cursor as keyed_cursor
from engine.keyed.heads import COLLECTION, hit_from_row
from engine.keyed.query import (
    MAX_QUERY_TERMS,
    bad_position,
    check_query_size,
    cursor_secret,
    parse_filters,
)
from engine.keyed.requests import has_control, validate_request
from engine.keyed.synonyms import synonyms
from engine.retrieval.lexical import STOPWORDS, Bm25Index, stem
from engine.storage.queries import keyed as keyed_queries

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

MAX_EXPANSION_TERMS = 8
MAX_EXPANSION_TERM_BYTES = 64
EXPANSION_WEIGHT = 0.5  # an expansion word counts half as much as a query word
_WORD = re.compile(r"[^\W_]+", re.UNICODE)  # the words engine.lexical.tokenize sees


@dataclass(frozen=True)
class _Entry:
    record_id: str
    occurred_at_ms: int
    expires_at: datetime | None
    topic: str | None
    tags: tuple[str, ...]
    hit: dict[str, Any]


@dataclass(frozen=True)
class _Corpus:
    """The live keyed heads of one namespace at one index generation, with BM25 over them.
    Expiry is applied per query, so the scores of a generation do not drift with time."""

    generation: int
    entries: list[_Entry]
    index: Bm25Index


def _corpus(engine: MemoryEngine, namespace: str) -> _Corpus:
    """The namespace's corpus at the current generation, kept in the engine's own cache."""

    def build(generation: int) -> _Corpus:
        entries = _load_entries(engine, namespace)
        return _Corpus(
            generation, entries, Bm25Index([e.hit["memory"]["content"] for e in entries])
        )

    corpus = engine.derived.get(("keyed.search", namespace), engine.generation, build)
    if corpus is None:
        raise MemoryFailure(
            "MEMORY_QUERY_FAILED",
            "The store kept changing while the search read it (five attempts); run it again.",
        )
    return corpus


def _load_entries(engine: MemoryEngine, namespace: str) -> list[_Entry]:
    with engine.session(expire_on_commit=False) as db:
        # Expired heads included: expiry is checked at query time.
        rows = keyed_queries.live_keyed_heads(db, COLLECTION, namespace)
    entries = []
    for row in rows:
        hit = hit_from_row(row)
        entries.append(
            _Entry(
                row.record_id,
                hit["memory"]["occurred_at_ms"],
                row.expires_at,
                row.kv_topic,
                tuple(hit["memory"]["tags"]),
                hit,
            )
        )
    return entries


def _words(text: str) -> list[str]:
    return _WORD.findall(unicodedata.normalize("NFKC", text).lower())


def _select_terms(query: str) -> tuple[list[str], list[str], bool]:
    """The first 64 distinct indexed terms (words, stems, truncated?)."""
    words: list[str] = []
    stems: list[str] = []
    for word in _words(query):
        if word in STOPWORDS:
            continue
        root = stem(word)
        if root in stems:
            continue
        if len(stems) == MAX_QUERY_TERMS:
            return words, stems, True
        words.append(word)
        stems.append(root)
    return words, stems, False


def _expansion(
    words: list[str], stems: list[str], expand: bool, extra: list[str]
) -> tuple[list[str], list[str]]:
    if len(extra) > MAX_EXPANSION_TERMS:
        raise MemoryFailure(
            "MEMORY_EXPANSION_INVALID",
            f"{len(extra)} expansion_terms given; at most {MAX_EXPANSION_TERMS} are allowed.",
        )
    for term in extra:
        size = len(term.encode("utf-8"))
        if not term.strip() or size > MAX_EXPANSION_TERM_BYTES or has_control(term):
            raise MemoryFailure(
                "MEMORY_EXPANSION_INVALID",
                f"The expansion term {term[:80]!r} is {size} bytes; each term has 1 to "
                f"{MAX_EXPANSION_TERM_BYTES} bytes of UTF-8 and no control characters.",
            )
    candidates = [synonym for word in words for synonym in synonyms(word)] if expand else []
    candidates += [word for term in extra for word in _words(term)]
    seen = set(stems)
    added_words: list[str] = []
    added_stems: list[str] = []
    for candidate in candidates:
        for word in _words(candidate):
            root = stem(word)
            if word in STOPWORDS or root in seen:
                continue
            seen.add(root)
            added_words.append(word)
            added_stems.append(root)
    return added_words, added_stems


def search(engine: MemoryEngine, request: Any, *, namespace: str | None = None) -> dict[str, Any]:
    """SearchQuery -> `{items: [{score, ...hit}], next_cursor, truncated}`, ranked by BM25
    (engine.lexical) over the namespace's live keyed memories; any term may match. The
    cursor is bound to the query, filters and index generation: any write makes it stale.
    `truncated` says the query had more than 64 indexed terms and only the first 64 were
    used; results are otherwise complete (every match is ranked)."""
    validate_request("search", request)
    query = request.get("query", "")
    check_query_size(query)
    words, stems, truncated = _select_terms(query)
    extra_words, extra_stems = _expansion(
        words, stems, bool(request.get("expand", False)), list(request.get("expansion_terms") or [])
    )
    if not words and not extra_words:
        raise MemoryFailure(
            "MEMORY_QUERY_REQUIRED",
            "The search query has no searchable words (it is empty, or only stopwords and "
            "punctuation). Pass some words, or use recall to list memories by tag, topic or "
            "time.",
        )
    filters = parse_filters(request, namespace)
    binding = keyed_cursor.fingerprint(
        {
            "kind": "search",
            "terms": sorted(stems),
            "expand": bool(request.get("expand", False)),
            "expansion": sorted(extra_stems),
            **filters.binding(),
        }
    )
    secret = cursor_secret(engine)
    corpus = _corpus(engine, filters.namespace)
    after: tuple[float, int, str] | None = None
    if request.get("cursor") is not None:
        payload = keyed_cursor.decode(secret, request["cursor"], kind="search", bound_to=binding)
        if payload.get("g") != corpus.generation:
            raise MemoryFailure(
                "MEMORY_CURSOR_STALE",
                "Stale cursor: the store changed since this search page was cut (a write "
                "changes the ranking). Run the search again without a cursor.",
            )
        position = payload.get("p")
        if not (
            isinstance(position, list)
            and len(position) == 3
            and isinstance(position[0], int | float)
            and isinstance(position[1], int)
            and isinstance(position[2], str)
        ):
            raise bad_position()
        after = (float(position[0]), position[1], position[2])
    scores = np.zeros(len(corpus.entries), dtype=np.float32)
    if words:
        scores += corpus.index.scores(" ".join(words))
    if extra_words:
        scores += np.float32(EXPANSION_WEIGHT) * corpus.index.scores(" ".join(extra_words))
    now = engine.now()
    ranked: list[tuple[float, _Entry]] = []
    for position_ in np.flatnonzero(scores > 0):
        entry = corpus.entries[int(position_)]
        if visibility.is_expired(entry.expires_at, now):
            continue
        if not filters.admits(entry.topic, entry.tags, entry.occurred_at_ms):
            continue
        score = float(scores[position_])
        if after is not None and (-score, -entry.occurred_at_ms, entry.record_id) <= (
            -after[0],
            -after[1],
            after[2],
        ):
            continue
        ranked.append((score, entry))
    ranked.sort(key=lambda pair: (-pair[0], -pair[1].occurred_at_ms, pair[1].record_id))

    def cursor(score: float, entry: _Entry) -> str:
        return keyed_cursor.encode(
            secret,
            {
                "k": "search",
                "f": binding,
                "g": corpus.generation,
                "p": [score, entry.occurred_at_ms, entry.record_id],
            },
        )

    budget = keyed_cursor.PageBudget(filters.max_bytes)
    tail: dict[str, Any] = {"next_cursor": None, "truncated": truncated}
    for index, (score, entry) in enumerate(ranked[: filters.limit]):
        item = {"score": _score(score), **copy.deepcopy(entry.hit)}
        has_more = index + 1 < len(ranked)
        candidate = {
            "next_cursor": cursor(score, entry) if has_more else None,
            "truncated": truncated,
        }
        if not budget.try_add(item, candidate):
            if not budget.items:
                needed = budget.size(candidate, keyed_cursor.size_of(item))
                raise budget.too_large(needed, "a page with the best match")
            break
        tail = candidate
    if budget.size(tail) > filters.max_bytes:
        raise budget.too_large(budget.size(tail), "an empty page")
    return ensure_valid("keyed_search", budget.page(tail))


def _score(value: float) -> float:
    rounded = round(value, 6)
    return rounded if math.isfinite(rounded) else 0.0
