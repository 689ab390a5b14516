"""Properties of keyed pagination: while nothing is written, following next_cursor returns
every matching memory exactly once, in order, and no page is larger than max_bytes."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engine.contract.validation import schema_errors
from engine.facade.factory import open_engine
from engine.keyed import service as keyed
from engine.keyed.cursor import size_of
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.store import MemoryEngine

WORDS = ("apple", "banana", "cherry", "delta", "echo", "falcon", "garden", "harbor")
TAGS = ("red", "green", "blue")
TOPICS = ("work", "home")
EVENT_TIMES = (100, 200, 300, 400)  # few, so that many memories share an event time
MAX_PAGES = 200


class Clock:
    def __init__(self) -> None:
        self.moment = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.moment += timedelta(milliseconds=1)
        return self.moment


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MemoryEngine, list[Any]]]:
    """~45 live memories (plus superseded and expired ones that must never show up)."""
    clock = Clock()
    engine = open_engine(
        home=tmp_path_factory.mktemp("keyed-props") / "home",
        embedder_status=EmbedderStatus(None, "no model"),
        clock=clock,
    )
    rng = random.Random(20261130)
    live: dict[str, dict[str, Any]] = {}
    for index in range(60):
        memory: dict[str, Any] = {
            "content": " ".join(rng.sample(WORDS, rng.randint(1, 4))) + f" m{index}",
            "tags": rng.sample(TAGS, rng.randint(0, 2)),
            "metadata": {"i": index},
        }
        if rng.random() < 0.7:
            memory["topic"] = rng.choice(TOPICS).upper()
        if rng.random() < 0.8:
            memory["occurred_at_ms"] = rng.choice(EVENT_TIMES)
        request: dict[str, Any] = {"key": f"k{index % 50}", "memory": memory}
        if f"k{index % 50}" in live:  # the second round updates: the first revision is history
            request["if_revision"] = live[f"k{index % 50}"]["revision"]
        if index % 7 == 3:
            request["ttl_seconds"] = 30  # expires below
        live[request["key"]] = keyed.remember(engine, request)
    clock.moment += timedelta(seconds=60)
    now_ms = int(clock.moment.timestamp() * 1000)
    current = [
        hit
        for hit in live.values()
        if hit["expires_at_ms"] is None or hit["expires_at_ms"] > now_ms
    ]
    assert 35 <= len(current) < 50
    yield engine, current
    engine.db.dispose()


def matches(hit: dict[str, Any], request: dict[str, Any]) -> bool:
    memory = hit["memory"]
    terms = (request.get("query") or "").split()
    return (
        all(term.casefold() in memory["content"].casefold() for term in terms)
        and (request.get("tag") is None or request["tag"] in memory["tags"])
        and (request.get("topic") is None or request["topic"] == memory["topic"])
        and (request.get("since_ms") is None or memory["occurred_at_ms"] >= request["since_ms"])
        and (request.get("until_ms") is None or memory["occurred_at_ms"] <= request["until_ms"])
    )


def pages(call: Any, request: dict[str, Any]) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    cursor = None
    for _ in range(MAX_PAGES):
        page = call({**request, "cursor": cursor})
        assert size_of(page) <= request["max_bytes"], (size_of(page), request)
        found.append(page)
        cursor = page["next_cursor"]
        if cursor is None:
            return found
    raise AssertionError("pagination did not end")


filters = st.fixed_dictionaries(
    {},
    optional={
        "tag": st.sampled_from(TAGS),
        "topic": st.sampled_from(TOPICS),
        "since_ms": st.sampled_from((0, 150, 300)),
        "until_ms": st.sampled_from((250, 400, 10**13)),
    },
)
budgets = st.fixed_dictionaries({"limit": st.integers(1, 7), "max_bytes": st.integers(700, 3000)})
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@PROPERTY
@given(
    words=st.lists(st.sampled_from(WORDS), max_size=2),
    upper=st.booleans(),
    chosen=filters,
    budget=budgets,
)
def test_recall_pages_return_every_match_exactly_once(store, words, upper, chosen, budget):
    engine, current = store
    query = " ".join(word.upper() if upper else word for word in words) or None
    request = {"query": query, **chosen, **budget}
    if request.get("since_ms", 0) > request.get("until_ms", 10**13):
        return
    result = pages(lambda r: keyed.recall(engine, r), request)
    items = [item for page in result for item in page["items"]]
    for page in result:
        assert not schema_errors("keyed_recall", page)
    seen = [(item["key"], item["revision"]) for item in items]
    assert len(seen) == len(set(seen)), "an item came back twice"
    expected = {(hit["key"], hit["revision"]) for hit in current if matches(hit, request)}
    assert set(seen) == expected
    order = [(item["memory"]["occurred_at_ms"], item["written_at_ms"]) for item in items]
    assert order == sorted(order, reverse=True), "not newest event first across pages"


@PROPERTY
@given(
    words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=3),
    expand=st.booleans(),
    chosen=filters,
    budget=budgets,
)
def test_search_pages_return_the_ranking_exactly_once(store, words, expand, chosen, budget):
    engine, current = store
    request = {"query": " ".join(words), "expand": expand, **chosen, **budget}
    if request.get("since_ms", 0) > request.get("until_ms", 10**13):
        return
    whole = keyed.search(engine, {**request, "limit": 100, "max_bytes": 1 << 20})
    assert whole["next_cursor"] is None
    result = pages(lambda r: keyed.search(engine, r), request)
    for page in result:
        assert not schema_errors("keyed_search", page)
    items = [item for page in result for item in page["items"]]
    assert items == whole["items"]
    # Every memory holding a query word is ranked (BM25 needs only one term to match).
    expected = {
        (hit["key"], hit["revision"])
        for hit in current
        if matches(hit, {**request, "query": None})
        and set(words) & set(hit["memory"]["content"].split())
    }
    assert {(item["key"], item["revision"]) for item in items} == expected
