"""As-of: the store seen as it was at a past moment (record time), for the Library's
time travel: which facts existed, and what had happened to them by then."""

from __future__ import annotations

from datetime import timedelta

from engine.curation import review
from engine.memory import browse

PERSON = "tui:alice"


def texts(page):
    return sorted(row.text for row in page.rows)


def test_the_library_as_of_a_moment_shows_what_was_current_then(client, engine):
    start = engine.now()

    def at(minutes):
        engine._clock = lambda: start + timedelta(minutes=minutes)
        return start + timedelta(minutes=minutes)

    at(0)
    paris = client.add("Alice lives in Paris", "user:alice")
    client.add("Bob plays chess", "user:bob")
    at(10)
    client.supersede(paris, "Alice lives in Lyon")
    at(20)
    bob = browse.list_facts(engine, text="chess").rows[0]
    review.retire(engine, ref=bob.uri, actor=PERSON, reason="Bob stopped")
    at(30)
    client.add("Carol drinks tea", "user:carol")

    before_the_move = start + timedelta(minutes=5)
    current = browse.list_facts(engine, status="current", as_of=before_the_move)
    assert texts(current) == ["Alice lives in Paris", "Bob plays chess"]
    assert browse.status_counts(engine, as_of=before_the_move) == {
        "current": 2,
        "superseded": 0,
        "retired": 0,
        "expired": 0,
    }
    after_the_move = start + timedelta(minutes=15)
    assert texts(browse.list_facts(engine, status="current", as_of=after_the_move)) == [
        "Alice lives in Lyon",
        "Bob plays chess",
    ]
    assert texts(browse.list_facts(engine, status="superseded", as_of=after_the_move)) == [
        "Alice lives in Paris"
    ]
    after_the_retire = start + timedelta(minutes=25)
    assert texts(browse.list_facts(engine, status="retired", as_of=after_the_retire)) == [
        "Bob plays chess"
    ]
    # Every fact created by then, whatever its status; Carol's fact did not exist yet.
    assert texts(browse.list_facts(engine, as_of=after_the_retire)) == [
        "Alice lives in Lyon",
        "Alice lives in Paris",
        "Bob plays chess",
    ]
    # Filtering as you type works on the past too.
    found = browse.search_facts(engine, text="alice", status="current", as_of=before_the_move)
    assert texts(found) == ["Alice lives in Paris"]
    # Now: as it is.
    assert texts(browse.list_facts(engine, status="current")) == [
        "Alice lives in Lyon",
        "Carol drinks tea",
    ]

    rows = {row.text: row for row in browse.list_facts(engine).rows}
    assert browse.status_at(rows["Alice lives in Paris"], before_the_move) == "current"
    assert browse.status_at(rows["Alice lives in Paris"], after_the_move) == "superseded"
    assert browse.status_at(rows["Bob plays chess"], after_the_retire) == "retired"
    assert browse.status_at(rows["Carol drinks tea"], after_the_retire) == "unborn"
