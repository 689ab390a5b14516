"""The Library's tab counts: given again while nothing can have changed them (a keystroke in
the filter asks for them each time), and always exactly what counting afresh gives, after a
write or once the clock passes a fact's expiry or staleness."""

from __future__ import annotations

from datetime import timedelta

import pytest

from engine.contract.normalize import iso_utc
from engine.curation import review
from engine.keyed import service as keyed
from engine.memory import browse, library
from engine.memory.library import LibraryFilter

PERSON = "tui:alice"


def recount(engine, as_of=None):
    """The counts as the Library computed them before: one query per tab."""
    counts = browse.status_counts(engine, as_of=as_of)
    if as_of is None:
        counts["attention"] = browse.needs_attention(engine, limit=1).total
    else:
        counts["attention"] = counts["current"]
    return counts


@pytest.fixture
def counted(monkeypatch):
    """How many times the counts were taken from the facts."""
    taken = []
    count_tabs = library.count_tabs

    def counting(*args):
        taken.append(args)
        return count_tabs(*args)

    monkeypatch.setattr(library, "count_tabs", counting)
    return taken


def test_the_counts_change_with_writes_and_with_the_clock_alone(client, engine, counted):
    start = engine.now()

    def at(minutes):
        engine._clock = lambda: start + timedelta(minutes=minutes)

    at(0)
    tea = client.add("Alice drinks tea", "user:alice")
    chess = client.add("Bob plays chess", "user:bob")
    keyed.remember(
        engine, {"key": "carol/desk", "ttl_seconds": 3600, "memory": {"content": "Carol's desk"}}
    )
    review.confirm(engine, ref=tea["record"]["uri"], actor=PERSON)
    review.set_curation(
        engine,
        ref=tea["record"]["uri"],
        actor=PERSON,
        action="stale-later",
        changes={"freshness": {"staleAfter": iso_utc(start + timedelta(minutes=30))}},
    )
    first = library.tab_counts(engine)
    assert first == recount(engine) and first["expired"] == 0
    for word in ("a", "al", "ali"):  # the filter typed: the same counts, not counted again
        page = library.library_page(engine, LibraryFilter.parse(word), "all", 0, 200)
        assert page.counts == first
    assert len(counted) == 1

    at(31)  # the confirmed fact turned stale: it needs attention again, with no write
    stale = library.tab_counts(engine)
    assert stale == recount(engine) and stale["attention"] == first["attention"] + 1
    at(61)  # the keyed fact expired
    expired = library.tab_counts(engine)
    assert expired == recount(engine) and expired["expired"] == 1
    assert expired["current"] == first["current"] - 1

    review.retire(engine, ref=chess["record"]["uri"], actor=PERSON, reason="stopped")
    retired = library.tab_counts(engine)
    assert retired == recount(engine) and retired["retired"] == 1
    assert len(counted) == 4  # once per change, never per keystroke


def test_counts_as_of_a_past_moment(client, engine):
    start = engine.now()
    engine._clock = lambda: start
    paris = client.add("Alice lives in Paris", "user:alice")
    engine._clock = lambda: start + timedelta(minutes=10)
    client.supersede(paris, "Alice lives in Lyon")
    before = start + timedelta(minutes=5)
    assert library.tab_counts(engine, as_of=before) == recount(engine, as_of=before)
    assert library.tab_counts(engine, as_of=before)["current"] == 1
    assert library.tab_counts(engine) == recount(engine)  # now again: counted for now
    assert library.tab_counts(engine)["superseded"] == 1
