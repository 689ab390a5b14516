"""The Library filter's words (engine/memory/browse.py): any case, taken literally (`%` and
`_` are characters, not wildcards), negated with `!`, and the total of a page exact whether
the page is full (counted) or short (the last page: its own length)."""

from __future__ import annotations

import pytest

from engine.memory import browse


@pytest.fixture
def facts(client):
    texts = [
        "Alice plays Basketball on Tuesdays",
        "The BASKETBALL court closes at nine",
        "Discount: 50% off the gym on Mondays",
        "Run deploy_all.sh after the freeze",
        "Run deploy-all.sh after the thaw",
        "Bob prefers the swimming pool",
    ]
    return {text: client.add(text, "user:alice")["record"]["recordId"] for text in texts}


def _texts(page: browse.FactPage) -> set[str]:
    return {row.text for row in page.rows}


def test_words_match_in_any_case(engine, facts) -> None:
    page = browse.list_facts(engine, text="basketBALL")
    assert _texts(page) == {
        "Alice plays Basketball on Tuesdays",
        "The BASKETBALL court closes at nine",
    }
    assert page.total == 2


def test_percent_and_underscore_are_taken_literally(engine, facts) -> None:
    assert _texts(browse.list_facts(engine, text="50%")) == {"Discount: 50% off the gym on Mondays"}
    # "_" is not "any one character": deploy-all does not match deploy_all.
    assert _texts(browse.list_facts(engine, text="deploy_all")) == {
        "Run deploy_all.sh after the freeze"
    }
    assert browse.list_facts(engine, text="5%off").total == 0


def test_a_negated_word_leaves_its_facts_out_in_any_case(engine, facts) -> None:
    page = browse.list_facts(engine, text="the", exclude=browse.Exclusions(words=("COURT",)))
    assert "The BASKETBALL court closes at nine" not in _texts(page)
    assert "Bob prefers the swimming pool" in _texts(page)


@pytest.mark.parametrize("limit", [1, 2, 3, 10])
def test_the_total_is_exact_for_full_and_short_pages(engine, facts, limit) -> None:
    every = browse.list_facts(engine, text="run", limit=10)
    assert every.total == 2
    first = browse.list_facts(engine, text="run", limit=limit)
    assert first.total == 2
    assert len(first.rows) == min(limit, 2)
    later = browse.list_facts(engine, text="run", offset=1, limit=limit)
    assert later.total == 2 and len(later.rows) == min(limit, 1)
    past = browse.list_facts(engine, text="run", offset=5, limit=limit)
    assert past.total == 2 and past.rows == []
