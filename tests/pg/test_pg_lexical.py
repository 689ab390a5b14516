"""The server's lexical leg finds its best facts without scoring every holder of a common
lexeme (engine/retrieval/pg_lexical.py, MaxScore): its answer must be the one scoring every
holder gives, for any query, limit and visibility: same facts, same order, same scores."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

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
def test_best_facts_are_those_scoring_every_holder_finds(
    store: MemoryEngine, query: str, limit: int, seen_by: str
) -> None:
    visibility = visibilities(store)[seen_by]
    with store.db.connect() as connection:
        terms = query_terms(connection, query)
        assert terms
        every = _scored(connection, terms, visibility, matching=list(terms.idf), limit=limit)
        best = best_bm25(connection, terms, visibility, limit)
    assert len(best) == len(every)
    assert list(best.values()) == pytest.approx(list(every.values()), rel=1e-12)
    # The same facts in the same order (a tie at the last place is broken the same way: ties
    # go to the older fact in both queries).
    assert list(best) == list(every)


def test_a_common_lexeme_alone_still_finds_every_holder_when_few_are_visible(
    store: MemoryEngine,
) -> None:
    """Scope `few` holds about 300 facts, about 130 of them with "like": asked for 256 facts
    of "kayak like" in it, the leg widens past the rare lexeme and returns every holder of
    either, as scoring everything does."""
    visibility = visibilities(store)["few"]
    with store.db.connect() as connection:
        terms = query_terms(connection, "kayak like")
        every = _scored(connection, terms, visibility, matching=list(terms.idf), limit=256)
        best = best_bm25(connection, terms, visibility, 256)
    assert 100 < len(every) < 256
    assert list(best) == list(every)


def test_facts_with_none_of_the_lexemes_are_not_scored(store: MemoryEngine) -> None:
    with store.db.connect() as connection:
        terms = query_terms(connection, "zebra")
        found = best_bm25(connection, terms, visibilities(store)["all"], 1000)
    holders = [t for t, _ in fact_texts(1500) if "zebra" in t.split()]
    assert len(found) == len(holders) > 0
