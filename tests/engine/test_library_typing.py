"""Typing a Library filter a key at a time: each keystroke narrows the last one's matches, and
the Library searches only among those when it can (engine/memory/library.py). Whatever it
searched, each page must be exactly what a search from nothing gives, with writes from another
engine on the same home and the clock passing an expiry between the keys."""

from __future__ import annotations

from datetime import timedelta
from itertools import product

import pytest

from engine.facade.factory import open_engine
from engine.keyed import service as keyed
from engine.memory import browse, library
from engine.memory.library import LibraryFilter
from engine.retrieval.embeddings import EmbedderStatus

WHO = ["Alice", "Bob", "Carol", "Dan"]
DOES = ["plays basketball", "watches baseball", "bakes bread", "reads about basking sharks"]
WHEN = ["on Mondays", "at the weekend", "in Basel"]


def page_of(engine, raw: str, tab: str = "all", limit: int = 5):
    page = library.library_page(engine, LibraryFilter.parse(raw), tab, 0, limit)
    return [row.record_id for row in page.rows], page.total


def from_nothing(engine, raw: str, tab: str = "all", limit: int = 5):
    """The same page with no earlier keystroke to narrow from: through an engine of its own
    on the same home (the Library's memory of the last search is per engine)."""
    fresh = open_engine(home=engine.home, embedder_status=EmbedderStatus(None, "no model"))
    fresh._clock = engine._clock
    try:
        return page_of(fresh, raw, tab, limit)
    finally:
        fresh.db.dispose()


def typed(text: str) -> list[str]:
    return [text[:end] for end in range(1, len(text) + 1)]


@pytest.fixture
def store(client):
    for who, does, when in product(WHO, DOES, WHEN):
        client.add(f"{who} {does} {when}", "user:" + who.lower())
    return client


def test_each_keystroke_gives_what_a_fresh_search_gives(store, engine, monkeypatch):
    narrowed = []
    search_facts = browse.search_facts

    def searching(*args, **kwargs):
        narrowed.append(kwargs.get("within") is not None)
        return search_facts(*args, **kwargs)

    monkeypatch.setattr(browse, "search_facts", searching)
    for raw in typed("bask s:user:alice") + typed("BASKETBALL mon") + typed("ba !Basel"):
        got = page_of(engine, raw)
        assert got == from_nothing(engine, raw), raw
    # On SQLite searches did narrow: most keystrokes of a word went to the last matches only
    # (PostgreSQL folds case by its collation, so there a keystroke is always a new search).
    if engine.db.dialect.name == "sqlite":
        assert sum(narrowed) >= 10
    else:
        assert not any(narrowed)
    texts = _texts(engine)
    ids, total = page_of(engine, "basketball mon", limit=100)
    assert total == len(WHO) == len(ids)  # one "plays basketball on Mondays" per person
    assert all("basketball" in texts[i] and "Mondays" in texts[i] for i in ids)


def test_a_write_from_another_process_between_two_keys_is_found(store, engine, home, client_over):
    assert page_of(engine, "basketb")[1] == len(WHO) * len(WHEN)
    other = open_engine(home=home, embedder_status=EmbedderStatus(None, "no model"))
    try:
        client_over(other).add("Erin plays basketball at dawn", "user:erin")
    finally:
        other.db.dispose()
    ids, total = page_of(engine, "basketba", limit=100)
    assert total == len(WHO) * len(WHEN) + 1
    assert (ids, total) == from_nothing(engine, "basketba", limit=100)


def test_the_expired_tab_gains_a_fact_when_its_time_passes_between_keys(store, engine):
    start = engine.now()
    engine._clock = lambda: start
    for key, seconds in (("dan/desk", 30), ("carol/desk", 90)):
        keyed.remember(
            engine, {"key": key, "ttl_seconds": seconds, "memory": {"content": f"{key} desk"}}
        )
    engine._clock = lambda: start + timedelta(minutes=1)  # Dan's has expired, Carol's not yet
    for raw in typed("des"):
        assert page_of(engine, raw, tab="expired")[1] == 1
    engine._clock = lambda: start + timedelta(minutes=2)  # no write: only the clock moved
    ids, total = page_of(engine, "desk", tab="expired")
    assert total == 2
    assert (ids, total) == from_nothing(engine, "desk", tab="expired")


def test_a_clock_set_back_between_keys_brings_an_expired_fact_back(store, engine):
    start = engine.now()
    engine._clock = lambda: start
    keyed.remember(
        engine, {"key": "dan/desk", "ttl_seconds": 60, "memory": {"content": "a zebrawood desk"}}
    )
    store.add("Erin paints zebra stripes", "user:erin")
    engine._clock = lambda: start + timedelta(minutes=2)  # the desk expired: not current
    for raw in typed("zebr"):
        assert page_of(engine, raw, tab="current")[1] == 1
    engine._clock = lambda: start  # set back (a corrected clock): the desk is current again
    ids, total = page_of(engine, "zebra", tab="current")
    assert total == 2
    assert (ids, total) == from_nothing(engine, "zebra", tab="current")


def _texts(engine):
    from sqlalchemy import select
    from sqlalchemy.orm import Session
    from sqlmodel import col

    from engine.storage.schema import tables

    fact = tables.FactRow
    with Session(engine.db) as session:
        return dict(session.execute(select(col(fact.record_id), col(fact.text))).all())
