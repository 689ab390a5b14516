"""Remember says where it looked for near-duplicates (the draft's collection) and offers the
matches found in the other collections, each labelled with its collection: a draft for
`memory` with no candidate there still shows the close fact in `team`, and supersede acts on
it (the successor stays in `team`)."""

from __future__ import annotations

from typing import Any

from pilot_helpers import keys, pending_proposal, shown, workbench
from pilot_helpers import settle as settle_workers
from textual.widgets import Static, TextArea

from engine.facade.service import MemoryService
from engine.memory import browse
from gno_tui.widgets.fact_table import FactTable
from screens.remember import RememberScreen


async def settle(pilot: Any) -> None:
    await settle_workers(pilot, debounce=pending_proposal)


def text_of(app: Any, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def row_text(table: FactTable, row: int) -> str:
    return " ".join(str(cell) for cell in table.get_row_at(row))


async def test_matches_in_other_collections_are_shown_and_labelled(
    engine: Any, client: Any
) -> None:
    MemoryService(engine).add_collection("team")
    theirs = client.add("Alice prefers green tea in the morning", "user:alice", collection="team")
    client.add("Bob lives in Lyon", "user:bob")  # in memory, and no match
    async with workbench(engine, "remember", debounce=pending_proposal) as (app, pilot):
        screen = shown(app, RememberScreen)
        screen.query_one("#remember-text", TextArea).focus()
        await pilot.press(*keys("Alice prefers black tea in the morning"))
        await pilot.press("tab", *keys("user:alice"))
        await settle(pilot)
        assert screen.draft().collection == "memory"
        matching = text_of(app, "#remember-matching")
        # Where it looked, and what it found elsewhere.
        assert "0 candidate(s) in collection memory" in matching
        assert "and 1 in other collection(s): team" in matching
        assert [c["uri"] for c in screen.candidates] == [theirs["record"]["uri"]]
        table = screen.query_one("#remember-candidates", FactTable)
        assert table.row_count == 1 and "other: team" in row_text(table, 0)
        assert "collection team" in str(screen.query_one("#remember-diff", Static).render())

        await pilot.press("escape", "ctrl+r")  # supersede the match in team
        await settle(pilot)
        old = browse.fact_row(engine, theirs["record"]["uri"])
        assert old.superseded_by is not None
        successor = browse.fact_row(engine, old.superseded_by)
        assert successor.text == "Alice prefers black tea in the morning"
        assert successor.collection == "team"


async def test_own_collection_first_and_nothing_elsewhere_is_said(engine: Any, client: Any) -> None:
    MemoryService(engine).add_collection("team")
    mine = client.add("Alice prefers green tea in the morning", "user:alice")
    theirs = client.add("Alice prefers green tea in the mornings", "user:alice", collection="team")
    async with workbench(engine, "remember", debounce=pending_proposal) as (app, pilot):
        screen = shown(app, RememberScreen)
        screen.query_one("#remember-text", TextArea).focus()
        await pilot.press(*keys("Alice prefers black tea in the morning"))
        await pilot.press("tab", *keys("user:alice"))
        await settle(pilot)
        assert [c["uri"] for c in screen.candidates] == [
            mine["record"]["uri"],
            theirs["record"]["uri"],
        ]
        table = screen.query_one("#remember-candidates", FactTable)
        assert "other:" not in row_text(table, 0) and "other: team" in row_text(table, 1)
        assert "1 candidate(s) in collection memory" in text_of(app, "#remember-matching")

        # Nothing close anywhere else: the pane says so.
        await pilot.press("ctrl+l")
        screen.query_one("#remember-text", TextArea).focus()
        await pilot.press(*keys("Carol keeps the release notes"))
        await settle(pilot)
        matching = text_of(app, "#remember-matching")
        assert "0 candidate(s) in collection memory" in matching
        assert "none in the other collection(s): team" in matching
