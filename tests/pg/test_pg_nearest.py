"""The server's semantic leg under a visibility filter (engine/retrieval/postgres.py
`_nearest`). pgvector 0.6 filters HNSW's candidates after taking them, so a scope of a few
facts in a big store would get few or none of them from HNSW: the leg scans a scope that small
exactly, and asks HNSW for as many candidates as the scope's share calls for otherwise (never
a scan of a large scope)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import event

from engine.retrieval import postgres
from engine.retrieval.embeddings import EmbedderStatus, StaticModelEmbedder
from engine.retrieval.pg_support import visible_share
from engine.retrieval.postgres import PostgresIndex
from engine.retrieval.seam import Visibility
from engine.storage.bulk import BulkFact, add_many
from engine.storage.store import MemoryEngine

# Words the tiny model (tests/conftest.py) knows.
WORDS = [
    "alice",
    "bob",
    "carol",
    "drinks",
    "likes",
    "prefers",
    "green",
    "black",
    "tea",
    "coffee",
    "water",
    "lives",
    "paris",
]
FEW = ["alice drinks green tea", "bob moved to berlin on monday", "carol prefers water"]


@pytest.fixture(scope="module")
def store(
    pg_server: str, tmp_path_factory: pytest.TempPathFactory, tiny_model: Any
) -> Iterator[MemoryEngine]:
    """3,000 facts of random words in scope `many` (more whole-text rows than HNSW returns at
    its most) and three in scope `few`."""
    from benchmarks.common import fresh_database
    from engine.facade.factory import open_engine

    pick = random.Random(5)
    many = [f"fact {n} " + " ".join(pick.sample(WORDS, 5)) for n in range(3000)]
    with fresh_database(pg_server, prefix="gno_near_") as url:
        engine = open_engine(
            home=tmp_path_factory.mktemp("nearest"),
            db_url=url,
            embedder_status=EmbedderStatus(StaticModelEmbedder(tiny_model, "tiny-test")),
        )
        add_many(
            engine,
            [BulkFact(text=t, scopes=["many"], caller="t", session="s") for t in many]
            + [BulkFact(text=t, scopes=["few"], caller="t", session="s") for t in FEW],
        )
        index = engine.retrieval()
        assert isinstance(index, PostgresIndex)
        index.rank("warm up", Visibility(None, None, engine.now()))
        yield engine
        engine.db.dispose()


def nearest_in_few(store: MemoryEngine, statements: list[str]) -> dict[str, float]:
    index = store.retrieval()
    assert isinstance(index, PostgresIndex)
    embedder = store.embedder_status.embedder
    assert embedder is not None
    vector = embedder.embed(["the project deadline is friday"])[0]

    def seen(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    event.listen(store.db, "before_cursor_execute", seen)
    try:
        with store.db.connect() as connection:
            few = Visibility(("few",), None, store.now())
            share = visible_share(connection, few)
            return index._nearest(connection, vector, few, share, 8, whole=True)
    finally:
        event.remove(store.db, "before_cursor_execute", seen)


def texts(store: MemoryEngine, ids: Any) -> set[str]:
    from engine.storage.reads.snapshot_rows import fetch_facts

    with store.db.connect() as connection:
        return {fact.text for fact in fetch_facts(connection, ids).values()}


def test_a_small_scope_in_a_big_store_gets_all_its_facts(store: MemoryEngine) -> None:
    """(PostgreSQL's planner may scan so selective a filter's rows itself, without HNSW;
    either way every fact of the scope is found.)"""
    statements: list[str] = []
    found = nearest_in_few(store, statements)
    assert texts(store, found) == set(FEW)
    assert list(found.values()) == sorted(found.values(), reverse=True)


def test_a_large_scope_keeps_hnsw_rows_instead_of_scanning_them_all(
    store: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(postgres, "FEW_VISIBLE_FACTS", 2)  # scope `few` counts as large now
    monkeypatch.setattr(postgres, "EXACT_SCAN_FACTS", 2)
    # (a thousandth of the store: HNSW is asked for its most candidates, 1000)
    statements: list[str] = []
    found = nearest_in_few(store, statements)
    assert texts(store, found) <= set(FEW)
    assert not any("+ 0" in statement for statement in statements), "no exact scan"
    assert any("ef_search = 1000" in statement for statement in statements)
