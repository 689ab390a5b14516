"""Recall on a small store with the bundled model: a word that means what a fact says finds it
though they share no word (the README's "drinks" for a fact about tea), and a query about
nothing in the store returns nothing. The match floors behind it (engine/retrieval/ranking.py)
were measured by benchmarks/small_store_recall.py on LoCoMo, not fitted to these examples."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest
from engine.retrieval.embeddings import load_embedder

ALICE = [
    "Alice prefers green tea",
    "Alice lives in Lyon with her two cats",
    "Alice's deploy runs every Friday at noon",
    "Alice plays the cello in a quartet",
    "Alice is allergic to peanuts",
]


@pytest.fixture
def bundled(home: Path) -> Iterator[MemoryService]:
    status = load_embedder()
    assert status.embedder is not None, status.unavailable_reason
    service = MemoryService(open_engine(home=home, embedder_status=status))
    yield service
    service.close()


def remember(service: MemoryService, *texts: str) -> None:
    for text in texts:
        service.remember(
            RememberRequest(
                text=text, scopes=["user:alice"], caller="t", session="s", decision="add"
            )
        )


def recalled(service: MemoryService, query: str) -> list[str]:
    result = service.recall(
        RecallRequest(query=query, scopes=["user:alice"], caller="t", session="s")
    )
    return [fact["text"] for fact in result["facts"]]


def test_the_readme_example_finds_the_tea_fact(bundled):
    # README: remember "Alice prefers green tea" --add, then recall "drinks": no shared word.
    remember(bundled, "Alice prefers green tea")
    assert recalled(bundled, "drinks") == ["Alice prefers green tea"]


@pytest.mark.parametrize(
    ("query", "fact"),
    [
        ("drinks", "Alice prefers green tea"),
        ("beverage", "Alice prefers green tea"),
        ("pets", "Alice lives in Lyon with her two cats"),
        ("music", "Alice plays the cello in a quartet"),
        ("food allergy", "Alice is allergic to peanuts"),
    ],
)
def test_a_word_for_what_a_fact_says_finds_only_that_fact(bundled, query, fact):
    remember(bundled, *ALICE)
    assert recalled(bundled, query) == [fact]


@pytest.mark.parametrize(
    "query", ["quantum chromodynamics", "stock market prices", "who won the football match"]
)
def test_a_query_about_nothing_in_a_small_store_returns_nothing(bundled, query):
    remember(bundled, *ALICE)
    assert recalled(bundled, query) == []
    assert recalled(bundled, "volcano eruption") == []
