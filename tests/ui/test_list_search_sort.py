"""Search (ctrl+f, then n / N) and sort (O) within a list, driven by real keystrokes: the same
keys on every screen, acting on the list in focus (gno_tui.widgets.list_search)."""

from __future__ import annotations

import io
from typing import Any

from pilot_helpers import keys, settle, shown, store_change_shown, workbench
from rich.console import Console
from textual.coordinate import Coordinate
from textual.widgets import Label, OptionList, Static

from engine.facade.service import MemoryService
from engine.memory import browse
from engine.memory.remember import RememberRequest
from gno_tui.render.distinct import plain
from gno_tui.widgets.fitted_table import FittedTable
from screens import SCREENS_BY_MODE
from screens.library import LibraryScreen

# A coffee fact whose word is past any width the summary column gets: only its whole text has it.
LONG = "The team agreed on a long list of things for the offsite, " * 4 + "and coffee"
COFFEE = {3, 8, 11, 17, 22, 26}  # the other facts that say coffee (of 30)


def seed(client: Any) -> None:
    for n in range(29):
        drink = "Coffee" if n in COFFEE else "tea"
        client.add(f"Person {n:02d} drinks {drink} at {n % 5} pm", f"user:p{n:02d}")
    client.add(LONG, "team:all")


def status(app: Any) -> str:
    return str(app.screen.query_one("#search-status", Label).content)


def cursor_text(table: FittedTable) -> str:
    return plain(table.full_row_at(table.cursor_row)[0])


async def test_search_moves_between_whole_text_matches(engine: Any, client: Any) -> None:
    seed(client)
    async with workbench(engine) as (app, pilot):
        screen = shown(app, LibraryScreen)
        table = screen.query_one(FittedTable)
        assert table.row_count == 30
        # The rows that say coffee, in the order shown (the long one's is cut off in its cell).
        expected = [i for i, row in enumerate(screen.rows) if "coffee" in row.text.lower()]
        assert len(expected) == 7
        long_row = next(i for i, row in enumerate(screen.rows) if row.text == LONG)
        assert "coffee" not in str(table.get_row_at(long_row)[0]).lower()

        await pilot.press("ctrl+f", *keys("coffee"))
        await settle(pilot)
        assert table.cursor_row == expected[0]
        assert status(app).startswith("match 1 of 7")
        await pilot.press("enter")  # back to the list; the term stays for n / N
        assert app.focused is table
        await pilot.press("n", "n")
        await settle(pilot)
        assert table.cursor_row == expected[2] and status(app).startswith("match 3 of 7")
        await pilot.press("N")
        await settle(pilot)
        assert table.cursor_row == expected[1] and status(app).startswith("match 2 of 7")
        # Wrapping both ways, and the long fact found by the word its cell does not show.
        await pilot.press("N", "N")
        await settle(pilot)
        assert table.cursor_row == expected[-1] and status(app).startswith("match 7 of 7")
        await pilot.press(*["n"] * 9)  # round the seven, and two on
        await settle(pilot)
        assert table.cursor_row == expected[1]
        assert long_row in expected
        while table.cursor_row != long_row:
            await pilot.press("n")
        assert "coffee" in screen.rows[long_row].text

        # A term no row has: said, and the cursor stays.
        await pilot.press("ctrl+f", *["backspace"] * 6, *keys("espresso"))
        await settle(pilot)
        assert status(app).startswith("no row contains “espresso”")
        assert table.cursor_row == long_row
        await pilot.press("escape")  # ends the search: the bar closes, the list has the keys
        assert app.focused is table and not table.search_term
        await pilot.press("n")
        await settle(pilot)
        assert table.cursor_row == long_row
        assert "ctrl+f opens the search" in " ".join(n.message for n in app._notifications)


async def choose_sort(app: Any, pilot: Any, table: FittedTable, title: str) -> None:
    """O, then the column `title` in the picker (arrow keys from where it opens), enter."""
    await pilot.press("O")
    await settle(pilot)
    options = app.screen.query_one(OptionList)
    wanted = 1 + table.sort_titles().index(title)  # after "as loaded"
    at = options.highlighted or 0
    await pilot.press(*(["down"] * (wanted - at) if wanted >= at else ["up"] * (at - wanted)))
    await pilot.press("enter")
    await settle(pilot)


def summaries(table: FittedTable) -> list[str]:
    return [plain(table.full_row_at(i)[0]) for i in range(table.row_count)]


async def test_sort_keeps_cursor_and_survives_a_live_refresh(
    engine: Any, client: Any, other: MemoryService
) -> None:
    seed(client)
    async with workbench(engine, watch_store=True) as (app, pilot):
        screen = shown(app, LibraryScreen)
        table = screen.query_one(FittedTable)
        await pilot.press("j", "j", "j", "j")
        held = table.key_at_cursor()
        before = summaries(table)
        title = table.sort_titles()[0]  # the summary

        await choose_sort(app, pilot, table, title)
        assert summaries(table) == sorted(before, key=str.casefold)
        assert table.key_at_cursor() == held  # the cursor stayed on its fact
        assert plain(table.ordered_columns[0].label).endswith("▲")
        # The keys act on the fact highlighted, not on the one at that row of the load order.
        held_text = cursor_text(table)
        await pilot.press("c")
        await settle(pilot)
        confirmed = browse.list_facts(engine, text=held_text).rows
        assert confirmed[0].workbench["provenance"]["status"] == "user_confirmed"

        await choose_sort(app, pilot, table, title)  # the same column again: the other way
        assert summaries(table) == sorted(before, key=str.casefold, reverse=True)
        assert table.key_at_cursor() == held

        # Another process writes: the list reloads, sorted as chosen, the cursor on its fact.
        request = RememberRequest(
            text="Zoe drinks mate", scopes=["user:zoe"], caller="cli", session="s2", decision="add"
        )
        other.remember(request)
        await store_change_shown(pilot)
        await settle(pilot)
        shown_now = summaries(table)
        assert shown_now[0] == "Zoe drinks mate" and len(shown_now) == 31
        assert shown_now == sorted(shown_now, key=str.casefold, reverse=True)
        assert table.key_at_cursor() == held

        # "As loaded" gives the list its own order back.
        await pilot.press("O")
        await settle(pilot)
        await pilot.press("home", "enter")
        await settle(pilot)
        assert summaries(table) == [plain(r.text) for r in screen.rows]
        assert table.key_at_cursor() == held


def test_every_screen_has_the_list_keys_once() -> None:
    """Search, n / N and sort are commands of every screen (a binding, a palette entry, a help
    line), with no key taken twice on a screen."""
    for screen in SCREENS_BY_MODE.values():
        commands = screen.COMMANDS_LIST
        names = {c.id.split(".", 1)[1] for c in commands}
        assert {"find", "find_next", "find_prev", "sort"} <= names, screen.__name__
        keys_used = [key.strip() for c in commands for key in c.key.split(",")]
        assert len(keys_used) == len(set(keys_used)), screen.__name__


async def test_marks_under_a_sort_go_to_the_rows_shown(engine: Any, client: Any) -> None:
    seed(client)
    async with workbench(engine) as (app, pilot):
        screen = shown(app, LibraryScreen)
        table = screen.query_one(FittedTable)
        await choose_sort(app, pilot, table, table.sort_titles()[0])
        await choose_sort(app, pilot, table, table.sort_titles()[0])  # descending: far from load
        await pilot.press("j")
        first = table.key_at_cursor()
        await pilot.press("space")  # marks the highlighted fact and moves on
        assert screen.marked == {first}
        assert plain(table.get_row_at(1)[0]).startswith("●")
        assert not plain(table.get_row_at(0)[0]).startswith("●")
        await pilot.press("v", "j", "j", "v")  # a range over the three rows shown below
        shown_keys = [
            table.coordinate_to_cell_key(Coordinate(r, 0)).row_key.value for r in (2, 3, 4)
        ]
        assert screen.marked == {first, *shown_keys}
        for row in range(table.row_count):
            drawn = plain(table.get_row_at(row)[0]).startswith("●")
            assert drawn == (row in (1, 2, 3, 4)), row


async def test_a_sorted_chain_still_diffs_and_reverts_the_version_highlighted(
    engine: Any, client: Any
) -> None:
    """The Chain's versions sort too (newest first by their created time, say); the diff, h /
    l and revert (u) act on the version highlighted, not on the one at that row of the chain."""
    from screens.supersession import SupersessionScreen

    first = client.add("The staging deploy runs on Mondays", "project:x")
    second = client.supersede(first, "The staging deploy runs on Tuesdays")
    client.supersede(second, "The staging deploy runs on Fridays")
    async with workbench(engine) as (app, pilot):
        await pilot.press("enter")  # the Library's top row: the head
        await settle(pilot)
        chain = shown(app, SupersessionScreen)
        table = chain.query_one(FittedTable)

        def versions_shown() -> list[str]:
            return [plain(table.full_row_at(i)[0]).strip(" ◆") for i in range(table.row_count)]

        assert versions_shown() == ["1", "2", "3"]
        await choose_sort(app, pilot, table, "v")
        await choose_sort(app, pilot, table, "v")  # again: newest first
        assert versions_shown() == ["3", "2", "1"]
        table.move_cursor(row=2)  # shown last: v1, the oldest
        await settle(pilot)
        assert chain.selected_version() == 0
        console = Console(width=138, file=io.StringIO(), record=True)
        console.print(chain.query_one("#chain-diff-body", Static).content)
        assert "Mondays" in console.export_text()
        await pilot.press("l")  # newer: v2, shown in the middle
        await settle(pilot)
        assert table.cursor_row == 1 and chain.selected_version() == 1
        await pilot.press("h")
        await settle(pilot)
        await pilot.press("u", "enter")  # revert to v1: its text is the new head's
        await settle(pilot)
        head = browse.chain(engine, first["record"]["recordId"])[-1]
        assert head.text == "The staging deploy runs on Mondays"
