"""The server's lexical leg (engine/retrieval/pg_lexical.py) scores every holder of the query's
lexemes when they are few, else the best holders of each lexeme from the impact-ordered
postings (engine/retrieval/pg_postings.py). With lists that hold every holder the answer must
be scoring every holder's, for any query, limit and visibility; with short lists, its facts
are scored exactly and the best of them are still found; the postings follow every change."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import event, text

from engine.curation.review import retire
from engine.retrieval import pg_lexical
from engine.retrieval.embeddings import EmbedderStatus
from engine.retrieval.pg_lexical import _scored, best_bm25, query_terms
from engine.retrieval.postgres import PostgresIndex
from engine.retrieval.seam import Visibility
from engine.storage.bulk import BulkFact, add_many
from engine.storage.store import MemoryEngine

COMMON = ["like", "really", "enjoy"]
MIDDLING = ["tea", "coffee", "garden", "music", "running"]
RARE = ["zebra", "violin", "kayak"]
FILLER = ["weekend", "friends", "house", "city", "morning", "family", "work", "dog"]

QUERIES = [
    "like",
    "I really like zebra",
    "enjoy tea in the garden",
    "violin music like really",
    "kayak",
    "tea coffee garden music like zebra violin kayak running enjoy",
    "weekend with friends",
]


def fact_texts(count: int) -> list[tuple[str, str]]:
    """Facts of varied length where COMMON words are in most, RARE ones in a few, and about
    one in five is in scope `few`."""
    pick = random.Random(11)
    texts = []
    for n in range(count):
        words = [pick.choice(COMMON)] if pick.random() < 0.85 else []
        words += pick.sample(MIDDLING, pick.randint(0, 2))
        if pick.random() < 0.04:
            words.append(pick.choice(RARE))
        words += pick.sample(FILLER, pick.randint(1, 6))
        words += [pick.choice(COMMON)] * pick.randint(0, 2)  # repeated: term frequencies vary
        pick.shuffle(words)
        texts.append((f"fact {n}: " + " ".join(words), "few" if pick.random() < 0.2 else "many"))
    return texts


@pytest.fixture(scope="module")
def store(pg_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[MemoryEngine]:
    """One store for every case (they only read it), its derived tables brought up to date."""
    from benchmarks.common import fresh_database
    from engine.facade.factory import open_engine

    with fresh_database(pg_server, prefix="gno_lex_") as url:
        engine = open_engine(
            home=tmp_path_factory.mktemp("lexical"),
            db_url=url,
            embedder_status=EmbedderStatus(None, "lexical mode in this test"),
        )
        add_many(
            engine,
            [BulkFact(text=t, scopes=[s], caller="t", session="s") for t, s in fact_texts(1500)],
        )
        index = engine.retrieval()
        assert isinstance(index, PostgresIndex)
        index.rank("warm up", Visibility(None, None, engine.now()))
        yield engine
        engine.db.dispose()


def visibilities(engine: MemoryEngine) -> dict[str, Visibility]:
    return {
        "all": Visibility(None, None, engine.now()),
        "few": Visibility(("few",), None, engine.now()),
        "many": Visibility(("many",), None, engine.now()),
    }


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("limit", [1, 7, 64, 256])
@pytest.mark.parametrize("seen_by", ["all", "few", "many"])
def test_with_whole_lists_the_best_facts_are_those_scoring_every_holder_finds(
    store: MemoryEngine, query: str, limit: int, seen_by: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The postings path (forced here) with lists long enough to hold every holder: the same
    facts, in the same order, with the same scores as scoring every holder."""
    monkeypatch.setattr(pg_lexical, "FULL_SCORING_HOLDERS", 0)
    monkeypatch.setattr(pg_lexical, "LIST_FLOOR", 10_000)
    visibility = visibilities(store)[seen_by]
    with store.db.connect() as connection:
        terms = query_terms(connection, query)
        assert terms
        every = _scored(connection, terms, visibility, share=0.0, limit=limit)
        best = best_bm25(connection, terms, visibility, limit)
    assert len(best) == len(every)
    assert list(best.values()) == pytest.approx(list(every.values()), rel=1e-12)
    # The same facts in the same order (a tie at the last place is broken the same way: ties
    # go to the older fact in both queries).
    assert list(best) == list(every)


@pytest.mark.parametrize("query", QUERIES)
@pytest.mark.parametrize("seen_by", ["all", "few"])
def test_short_lists_still_find_the_best_facts(
    store: MemoryEngine, query: str, seen_by: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lists of 16 facts per lexeme (most hold several hundred here), 7 wanted: every fact
    returned is visible and scored exactly, and the 3 best are those of scoring every holder."""
    monkeypatch.setattr(pg_lexical, "FULL_SCORING_HOLDERS", 0)
    monkeypatch.setattr(pg_lexical, "LIST_FLOOR", 16)
    visibility = visibilities(store)[seen_by]
    with store.db.connect() as connection:
        terms = query_terms(connection, query)
        every = _scored(connection, terms, visibility, share=0.0, limit=None)
        best = best_bm25(connection, terms, visibility, 7)
    assert len(best) == min(7, len(every))
    assert all(best[r] == pytest.approx(every[r], rel=1e-12) for r in best)
    assert list(best)[:3] == list(every)[:3]


def test_few_holders_are_all_scored(store: MemoryEngine) -> None:
    """Below FULL_SCORING_HOLDERS the answer is scoring every holder's, whatever the lists."""
    with store.db.connect() as connection:
        terms = query_terms(connection, "zebra kayak")
        assert sum(terms.df.values()) <= pg_lexical.FULL_SCORING_HOLDERS
        found = best_bm25(connection, terms, visibilities(store)["all"], 1000)
        every = _scored(connection, terms, visibilities(store)["all"], share=0.0, limit=1000)
    holders = [t for t, _ in fact_texts(1500) if {"zebra", "kayak"} & set(t.split())]
    assert list(found) == list(every)
    assert len(found) == len(holders) > 0


def test_postings_follow_changes_and_are_built_for_an_older_store(
    pg_url: str, open_pg: Callable[..., MemoryEngine], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Added, superseded and retired facts enter and leave the lists; a store whose derived
    tables predate the postings (dropped here) gets them at its next recall."""
    monkeypatch.setattr(pg_lexical, "FULL_SCORING_HOLDERS", 0)
    engine = open_pg(pg_url, EmbedderStatus(None, "lexical mode in this test"))
    index = engine.retrieval()
    everyone = Visibility(None, None, engine.now())
    add_many(
        engine,
        [BulkFact(text=t, scopes=["s"], caller="t", session="s") for t, _ in fact_texts(300)],
    )

    def found(query: str) -> set[str]:
        return {match.fact.text for match in index.rank(query, everyone).matches}

    assert found("the violin on the kayak") == {
        t for t, _ in fact_texts(300) if {"violin", "kayak"} & set(t.split())
    }
    added = add_many(
        engine, [BulkFact(text="a violin kayak", scopes=["s"], caller="t", session="s")]
    )
    assert "a violin kayak" in found("violin kayak")
    retire(engine, ref=added.added[0], actor="person", reason="test")
    assert "a violin kayak" not in found("violin kayak")
    with engine.db.begin() as connection:
        connection.execute(text("DROP TABLE fact_postings"))
        connection.execute(text("DELETE FROM fact_search_state WHERE name = 'postings'"))
    assert found("the violin on the kayak") == {
        t for t, _ in fact_texts(300) if {"violin", "kayak"} & set(t.split())
    }


def test_a_ranking_reads_its_facts_a_page_at_a_time(store: MemoryEngine) -> None:
    """A recall takes the first few of 256 matches: their facts are read 32 at a time, as
    iteration reaches them, and iterating them all gives every match once, best first."""
    index = store.retrieval()
    assert isinstance(index, PostgresIndex)
    reads: list[str] = []

    def seen(_conn: object, _cursor: object, statement: str, *_: object) -> None:
        if statement.lstrip().startswith("SELECT facts.record_id"):
            reads.append(statement)

    event.listen(store.db, "before_cursor_execute", seen)
    try:
        ranking = index.rank("really like tea", visibilities(store)["all"])
        assert len(ranking.matches) == 256
        assert len(reads) == 1, "only the first page is read with the ranking"
        first = next(iter(ranking.matches))
        assert len(reads) == 1
        matches = list(ranking.matches)
    finally:
        event.remove(store.db, "before_cursor_execute", seen)
    assert len(reads) == 256 // 32
    assert matches[0] == first
    assert len({match.fact.record_id for match in matches}) == 256
    scores = [round(match.score, 6) for match in matches]  # equal to six decimals: a tie
    assert scores == sorted(scores, reverse=True)
