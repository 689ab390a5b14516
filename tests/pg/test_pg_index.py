"""PostgresIndex (engine/retrieval/postgres.py) against the in-memory index on one store.

What is compared, and why: both backends answer from the same rows, with the same fusion
formula and constants, so on this fixture (words the tiny model knows, no stopword or
stemming corner) they must agree on the order of every match, on the tiers and members of
candidates and duplicate pairs, and on scores to the int8 rows' error (pgvector computes
float32 cosines, the in-memory index integer products of int8 rows: INT8_COSINE). On real
text they need not agree exactly: PostgreSQL's english stemmer and stopwords differ from the
engine's, and it has no fuzzy widening of misspelt words; benchmarks/locomo_recall.py
--backend postgres compares recall@10 there instead."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import text

from engine.contract.errors import MemoryFailure
from engine.curation.review import retire
from engine.retrieval import backend, pg_lexical
from engine.retrieval.embeddings import EmbedderStatus, StaticModelEmbedder
from engine.retrieval.in_memory import InMemoryIndex
from engine.retrieval.pg_lexical import best_bm25, query_terms
from engine.retrieval.pg_support import visible_share
from engine.retrieval.postgres import PostgresIndex
from engine.retrieval.registry import IN_MEMORY, REGISTRY, Place
from engine.retrieval.seam import (
    BATCH_CANDIDATES,
    LEXICAL,
    RETRIEVAL_ENV,
    SEMANTIC,
    RetrievalIndex,
    Visibility,
    candidates_for,
)
from engine.storage.store import MemoryEngine

FACTS = [
    ("alice drinks green tea", ("s",), "memory"),
    ("alice drinks black coffee", ("s", "t"), "memory"),
    ("bob likes water", ("s",), "memory"),
    ("alice lives in paris. alice moved to lyon.", ("s",), "memory"),
    ("carol prefers black tea", ("s",), "work"),
    ("the project deadline is on friday", ("s",), "work"),
    ("the project deadline is friday", ("s",), "work"),
    ("zebra stripes savanna", ("other",), "memory"),
    ("alice drinks green tea", ("t",), "memory"),
]
# The in-memory index scores with its int8 rows, pgvector with float32 (the cosines differ by
# at most this: tests/engine/test_quantized_rows.py); the lexical parts are the same numbers.
INT8_COSINE = 0.006

QUERIES = [
    "what does alice drink",
    "black tea",
    "project deadline friday",
    "who moved to lyon",
    "coffee or water",
    "zebra savanna",
    "quiet note",
]
NO_MODEL = EmbedderStatus(None, "no model in this test (lexical mode)")


@pytest.fixture(autouse=True)
def lexical_leg_from_postings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lexical leg reads its candidates from the impact-ordered postings here, as it does
    in a big store (this one's holders are few enough to be scored directly otherwise): the
    postings must follow every change as the in-memory index does. tests/pg/test_pg_lexical.py
    compares the two paths with each other."""
    monkeypatch.setattr(pg_lexical, "FULL_SCORING_HOLDERS", 0)


@pytest.fixture(params=["lexical", "hybrid"])
def store(
    request: pytest.FixtureRequest,
    pg_url: str,
    open_pg: Callable[..., MemoryEngine],
    tiny_embedder: StaticModelEmbedder,
    client_over: Callable[[MemoryEngine], Any],
) -> MemoryEngine:
    status = EmbedderStatus(tiny_embedder) if request.param == "hybrid" else NO_MODEL
    engine = open_pg(pg_url, status)
    engine.add_collection("work", policy="local_only", policy_source="explicit")
    client = client_over(engine)
    for fact_text, scopes, collection in FACTS:
        client.add(fact_text, *scopes, collection=collection)
    return engine


def both(engine: MemoryEngine) -> tuple[RetrievalIndex, RetrievalIndex]:
    server = engine.retrieval()
    assert isinstance(server, PostgresIndex)
    return server, InMemoryIndex(
        engine.snapshot(), engine.embedder_status.embedder, backend=IN_MEMORY
    )


def everywhere(engine: MemoryEngine, **fields: Any) -> Visibility:
    return Visibility(
        fields.pop("scopes", None), fields.pop("collections", None), engine.now(), **fields
    )


def test_the_server_backend_is_chosen_and_declares_its_legs(store: MemoryEngine) -> None:
    assert store.retrieval_backend == "postgres"
    server, memory = both(store)
    legs = {LEXICAL, SEMANTIC}
    assert server.capabilities & legs == memory.capabilities & legs


@pytest.mark.parametrize("query", QUERIES)
def test_recall_ranks_as_the_in_memory_index(store: MemoryEngine, query: str) -> None:
    server, memory = both(store)
    for visibility in (everywhere(store), everywhere(store, scopes=["s"], collections=["work"])):
        ours, theirs = server.rank(query, visibility), memory.rank(query, visibility)
        assert ours.mode == theirs.mode
        assert [m.fact.record_id for m in ours.matches] == [
            m.fact.record_id for m in theirs.matches
        ]
        for mine, other in zip(ours.matches, theirs.matches, strict=True):
            assert mine.fact == other.fact
            assert mine.score == pytest.approx(other.score, abs=INT8_COSINE)
            assert mine.parts.lexical == pytest.approx(other.parts.lexical, abs=1e-4)


@pytest.mark.parametrize("text_", ["alice drinks green tea", "project deadline friday", "tea"])
def test_candidates_match_the_in_memory_index(store: MemoryEngine, text_: str) -> None:
    server, memory = both(store)
    visibility = everywhere(store, scopes=["s", "t"], collections=["memory", "work"])
    ours, theirs = server.candidates(text_, visibility), memory.candidates(text_, visibility)
    assert [(c.fact.record_id, c.tier) for c in ours] == [
        (c.fact.record_id, c.tier) for c in theirs
    ]
    assert [c.similarity for c in ours] == pytest.approx(
        [c.similarity for c in theirs], abs=INT8_COSINE
    )


def test_candidates_for_many_texts_are_each_texts_own(store: MemoryEngine) -> None:
    # An import asks for many texts at once, on one connection, with the vectors it embedded.
    server, _ = both(store)
    texts = ["alice drinks green tea", "project deadline friday", "tea", "zebra stripes"]
    visibilities = [
        everywhere(store, scopes=["s", "t"], collections=["memory", "work"]),
        everywhere(store, scopes=["s"], collections=["work"]),
        everywhere(store, scopes=["t"]),
        everywhere(store),
    ]
    embedder = store.embedder_status.embedder
    vectors = embedder.embed(texts) if embedder is not None else None
    assert BATCH_CANDIDATES in server.capabilities
    many = candidates_for(server, texts, visibilities, vectors)
    one_by_one = [server.candidates(t, v) for t, v in zip(texts, visibilities, strict=True)]
    assert [[(c.fact.record_id, c.tier) for c in found] for found in many] == [
        [(c.fact.record_id, c.tier) for c in found] for found in one_by_one
    ]
    assert any(many)  # some text has candidates: the comparison compares something
    for batch, single in zip(many, one_by_one, strict=True):
        assert [c.similarity for c in batch] == pytest.approx(
            [c.similarity for c in single], abs=1e-4
        )


def test_exact_duplicate_and_pairs_match_the_in_memory_index(store: MemoryEngine) -> None:
    server, memory = both(store)
    digest = store.retrieval().rank("green tea", everywhere(store)).matches[0].fact.content_hash
    for scopes in (["s"], ["t"], ["other"], ["s", "t"]):
        visibility = everywhere(store, scopes=scopes)
        assert server.exact_duplicate(digest, visibility) == memory.exact_duplicate(
            digest, visibility
        )
        ours, theirs = server.duplicate_pairs(visibility), memory.duplicate_pairs(visibility)
        assert [(p.left, p.right, p.tier, p.method) for p in ours] == [
            (p.left, p.right, p.tier, p.method) for p in theirs
        ]
        assert [p.similarity for p in ours] == pytest.approx(
            [p.similarity for p in theirs], abs=INT8_COSINE
        )


def test_visibility_is_in_the_query_even_for_one_result(store: MemoryEngine) -> None:
    """The best match of "zebra savanna" is in scope `other`: asked for one result in scope
    `s`, each leg's query returns a fact of `s` or nothing, never the better one beside it."""
    server = store.retrieval()
    assert isinstance(server, PostgresIndex)
    in_s = everywhere(store, scopes=["s"])
    server.rank("zebra", in_s)  # brings the derived tables up to date
    with store.db.connect() as connection:
        terms = query_terms(connection, "zebra stripes savanna")
        assert terms, "the lexemes are known to the store"
        assert best_bm25(connection, terms, in_s, 1) == {}
        embedder = store.embedder_status.embedder
        if embedder is not None:
            vector = embedder.embed(["zebra stripes savanna"])[0]
            for whole in (False, True):
                share = visible_share(connection, in_s)
                nearest = server._nearest(connection, vector, in_s, share, 1, whole=whole)
                assert len(nearest) == 1
                scopes = connection.scalar(
                    text("SELECT scopes FROM fact_search WHERE record_id = :r"),
                    {"r": next(iter(nearest))},
                )
                assert "s" in scopes
    for visibility in (in_s, everywhere(store, collections=["work"])):
        ranked = server.rank("zebra stripes savanna", visibility).matches
        assert all("other" not in m.fact.scopes for m in ranked)
    zebra = server.rank("zebra stripes savanna", everywhere(store)).matches[0].fact
    assert zebra.scopes == ("other",)
    excluded = everywhere(store, exclude=[zebra.record_id])
    assert zebra.record_id not in {m.fact.record_id for m in server.rank("zebra", excluded).matches}


def test_expired_superseded_and_retired_facts_leave_the_server_index(
    store: MemoryEngine, client_over: Callable[[MemoryEngine], Any]
) -> None:
    client = client_over(store)
    server = store.retrieval()
    coffee = client.recall("coffee", ["s"])["facts"][0]
    assert coffee["text"] == "alice drinks black coffee"
    client.supersede(coffee, "alice drinks black tea now")
    water = client.recall("water", ["s"])["facts"][0]
    retire(store, ref=water["uri"], actor="person", reason="wrong")
    # A write by anyone, even plain SQL: the change log carries it to the derived tables.
    with store.db.begin() as connection:
        connection.execute(
            text("UPDATE facts SET expires_at = '2000-01-01T00:00:00.000Z' WHERE text = :t"),
            {"t": "bob likes water"},
        )
        connection.execute(
            text("UPDATE facts SET expires_at = '2000-01-01T00:00:00.000Z' WHERE text LIKE :t"),
            {"t": "carol%"},
        )
    texts = {m.fact.text for m in server.rank("coffee tea water", everywhere(store)).matches}
    assert "alice drinks black tea now" in texts
    assert texts.isdisjoint(
        {"alice drinks black coffee", "bob likes water", "carol prefers black tea"}
    )


def test_a_second_engines_write_is_seen_by_the_next_recall(
    pg_url: str,
    open_pg: Callable[..., MemoryEngine],
    tiny_embedder: StaticModelEmbedder,
    client_over: Callable[[MemoryEngine], Any],
) -> None:
    first = client_over(open_pg(pg_url, EmbedderStatus(tiny_embedder)))
    first.add("alice drinks green tea")
    assert [f["text"] for f in first.recall("coffee")["facts"]] == []
    second = client_over(open_pg(pg_url, EmbedderStatus(tiny_embedder)))
    assert second.engine.retrieval_backend == "postgres"
    second.add("bob drinks black coffee")
    assert [f["text"] for f in first.recall("coffee")["facts"]] == ["bob drinks black coffee"]
    assert first.remember("bob drinks black coffee", decision="propose")["outcome"] == "existing"


def test_changes_are_applied_once_however_many_processes_catch_up(
    store: MemoryEngine, pg_url: str, open_pg: Callable[..., MemoryEngine]
) -> None:
    """Three engines catch up at once (threads standing in for processes): the advisory lock
    lets one apply each change; the counts then equal a count from scratch."""
    import threading

    others = [open_pg(pg_url, store.embedder_status) for _ in range(3)]
    with store.db.begin() as connection:
        connection.execute(text("UPDATE facts SET caller = caller || '!'"))  # every fact changes
    threads = [
        threading.Thread(target=o.retrieval().rank, args=("tea", everywhere(o))) for o in others
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with store.db.connect() as connection:
        docs, total = connection.execute(
            text("SELECT docs, total_len FROM fact_search_state WHERE name = 'search'")
        ).one()
        assert (docs, total) == connection.execute(
            text("SELECT count(*), sum(doc_len) FROM fact_search")
        ).one()
        assert docs == connection.scalar(
            text("SELECT count(*) FROM facts WHERE superseded_by IS NULL AND retired_at IS NULL")
        )
        drift = connection.scalar(
            text(
                """SELECT count(*) FROM fact_terms t FULL JOIN (SELECT lexeme, count(*) AS n
                FROM fact_search, unnest(tsvector_to_array(tsv)) AS lexeme GROUP BY lexeme) c
                ON c.lexeme = t.term WHERE coalesce(t.df, 0) <> coalesce(c.n, 0)"""
            )
        )
        assert drift == 0


def test_asking_for_the_server_backend_where_it_cannot_be_had_says_how_to_get_it(
    store: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(RETRIEVAL_ENV, "postgres")
    monkeypatch.setattr(backend, "vector_problem", lambda db: "no pgvector here")
    with pytest.raises(MemoryFailure) as raised:
        REGISTRY.choose(Place("postgresql", store.db))
    assert raised.value.code == "MEMORY_QUERY_FAILED"
    assert "CREATE EXTENSION vector" in str(raised.value) and "pgvector" in str(raised.value)
    monkeypatch.setenv(RETRIEVAL_ENV, "auto")
    assert REGISTRY.choose(Place("postgresql", store.db)) is IN_MEMORY  # auto: in process
    monkeypatch.setenv(RETRIEVAL_ENV, "memory")
    assert REGISTRY.choose(Place("postgresql", store.db)) is IN_MEMORY


def _vector_indexes(engine: MemoryEngine) -> dict[str, int]:
    with engine.db.connect() as connection:
        rows = connection.execute(
            text(
                """SELECT c.relname, c.oid FROM pg_class c JOIN pg_index i ON i.indexrelid = c.oid
                WHERE i.indrelid = 'fact_vectors'::regclass"""
            )
        ).all()
    return {str(name): int(str(oid)) for name, oid in rows}


@pytest.mark.parametrize("many", [False, True])
def test_many_changes_rebuild_the_vector_indexes_and_rank_the_same(
    store: MemoryEngine, monkeypatch: pytest.MonkeyPatch, many: bool
) -> None:
    """Past a quarter of the current facts (and REBUILD_MIN_CHANGES), a sync inserts the changed
    facts' vectors without the HNSW indexes and builds them again after; either way both
    indexes are there afterwards and recall ranks as the in-memory index does."""
    if store.embedder_status.embedder is None:
        pytest.skip("no vectors without a model")
    from engine.retrieval import pg_derived

    both(store)[0].rank("tea", everywhere(store))  # the derived tables built, indexes made
    before = _vector_indexes(store)
    assert {"ix_fact_vectors_hnsw", "ix_fact_vectors_whole"} <= set(before)
    monkeypatch.setattr(pg_derived, "REBUILD_MIN_CHANGES", 1 if many else 10_000)
    with store.db.begin() as connection:  # every fact changes: far past a quarter of them
        connection.execute(text("UPDATE facts SET caller = caller || '!'"))
    server, memory = both(store)
    for query in QUERIES:
        ours, theirs = server.rank(query, everywhere(store)), memory.rank(query, everywhere(store))
        assert [m.fact.record_id for m in ours.matches] == [
            m.fact.record_id for m in theirs.matches
        ]
    after = _vector_indexes(store)
    assert set(after) == set(before)
    # Built again (new indexes) past the threshold, kept (the same ones) below it.
    assert (after != before) is many


def test_an_index_build_gets_room_for_its_graph_only_in_its_transaction(
    store: MemoryEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rebuilding the vector indexes raises maintenance_work_mem for that transaction alone
    (pgvector builds HNSW several times slower once the graph outgrows it): the server's own
    setting is what every other session still sees, during and after."""
    if store.embedder_status.embedder is None:
        pytest.skip("no vectors without a model")
    from engine.retrieval import pg_derived

    both(store)[0].rank("tea", everywhere(store))
    monkeypatch.setattr(pg_derived, "GRAPH_KIB_PER_ROW_AND_DIM", 1024.0)  # a big graph
    raised: list[str] = []
    real = pg_derived._room_for_graphs

    def watched(connection: Any, dims: int) -> None:
        real(connection, dims)
        raised.append(str(connection.scalar(text("SHOW maintenance_work_mem"))))

    monkeypatch.setattr(pg_derived, "_room_for_graphs", watched)
    monkeypatch.setattr(pg_derived, "REBUILD_MIN_CHANGES", 1)
    with store.db.connect() as connection:
        server_setting = str(connection.scalar(text("SHOW maintenance_work_mem")))
    with store.db.begin() as connection:
        connection.execute(text("UPDATE facts SET caller = caller || '!'"))
    both(store)[0].rank("tea", everywhere(store))
    assert raised and raised[0] != server_setting
    with store.db.connect() as connection:
        assert str(connection.scalar(text("SHOW maintenance_work_mem"))) == server_setting
