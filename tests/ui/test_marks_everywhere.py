"""The marking keys of every list, driven by real keystrokes in Review's Proposals list and the
Library: `ctrl+a` marks all, `v` ... `v` a range, `~` inverts, `ctrl+\\` clears, and `y` then
decides every marked item at once (issue 36: rejecting 20 proposals was 20 presses of space)."""

from __future__ import annotations

from typing import Any

from pilot_helpers import keys, settle, shown, store_change_shown, workbench
from textual.command import CommandPalette
from textual.widgets import Static

from engine.storage import proposals
from gno_tui.widgets.fitted_table import FittedTable
from screens.batch_prompt import BatchPrompt
from screens.library import LibraryScreen
from screens.review import ReviewScreen


def propose(client: Any, text: str) -> int:
    """An agent's add on a propose-only surface: held as a pending proposal."""
    client.remember(text, ("user:alice",), decision="add", hold_writes=True, origin="mcp")
    return int(proposals.list_proposals(client.engine)[-1]["id"])


def states(engine: Any) -> dict[int, str]:
    return {p["id"]: p["state"] for p in proposals.list_proposals(engine, state=None)}


def review_summary(screen: ReviewScreen) -> str:
    return str(screen.query_one("#review-summary", Static).render())


def mark_cells(screen: Any, table_id: str) -> list[bool]:
    """Which rows the table draws as marked (its first column)."""
    table = screen.query_one(table_id, FittedTable)
    return [str(table.full_row_at(i)[0]).startswith("●") for i in range(table.row_count)]


async def test_ctrl_a_then_one_batch_rejects_twenty_proposals(engine: Any, client: Any) -> None:
    ids = [propose(client, f"Alice prefers dark theme, variant {n}") for n in range(20)]
    async with workbench(engine, "review") as (app, pilot):
        screen = shown(app, ReviewScreen)
        await pilot.press("ctrl+a")
        assert screen.marked == set(ids) and "20 marked" in review_summary(screen)
        assert all(mark_cells(screen, "#review-proposals"))
        # One decision for all twenty: `*`, reject, one reason, then the summary's y.
        await pilot.press("y")
        await pilot.pause()
        prompt = shown(app, BatchPrompt)
        await pilot.press("asterisk", "x")
        await pilot.pause()
        await pilot.press(*keys("duplicates"), "enter")
        await pilot.pause()
        assert "20 reject" in str(prompt.query_one("#batch-summary").render())
        await pilot.press("y")
        await settle(pilot)
        assert set(states(engine).values()) == {"rejected"} and len(states(engine)) == 20
        assert screen.proposals == [] and screen.marked == set()
        # One step: one `z` takes all twenty back.
        await pilot.press("z")
        await settle(pilot)
        assert set(states(engine).values()) == {"pending"}


async def test_v_marks_a_range_of_proposals(engine: Any, client: Any) -> None:
    ids = [propose(client, f"The deploy runs on day {n}") for n in range(6)]
    async with workbench(engine, "review") as (app, pilot):
        screen = shown(app, ReviewScreen)
        await pilot.press("j", "v")
        assert "visual: v marks to here" in review_summary(screen)
        await pilot.press("j", "j", "v")
        assert screen.marked == set(ids[1:4])
        assert "3 marked" in review_summary(screen) and "visual" not in review_summary(screen)
        assert mark_cells(screen, "#review-proposals") == [False, True, True, True, False, False]
        # Upwards, adding to the marks; ctrl+\ clears them all.
        await pilot.press("G", "v", "k", "v")
        assert screen.marked == set(ids[1:6])
        await pilot.press("ctrl+backslash")
        assert screen.marked == set() and not any(mark_cells(screen, "#review-proposals"))


async def test_invert_flips_the_proposals_marks(engine: Any, client: Any) -> None:
    ids = [propose(client, f"Bob lives in city {n}") for n in range(4)]
    async with workbench(engine, "review") as (app, pilot):
        screen = shown(app, ReviewScreen)
        await pilot.press("space", "j", "space")  # marks the first and the third
        await pilot.press("tilde")
        assert screen.marked == {ids[1], ids[3]}
        assert mark_cells(screen, "#review-proposals") == [False, True, False, True]
        assert "2 marked" in review_summary(screen)
        # The palette finds it and runs it as the key does.
        await pilot.press("ctrl+p", *keys("invert marks"))
        await settle(pilot)
        shown(app, CommandPalette)
        await pilot.press("enter")
        await settle(pilot)
        assert screen.marked == {ids[0], ids[2]}
        # The marking keys belong to the Proposals list: on the Duplicates tab they do nothing.
        await pilot.press("right_square_bracket", "ctrl+a", "tilde")
        assert screen.marked == {ids[0], ids[2]}


async def test_invert_in_the_library_keeps_marks_the_filter_hides(engine: Any, client: Any) -> None:
    for text in ("Alice prefers green tea", "Bob lives in Lyon", "Bob works on billing"):
        client.add(text, "team")
    async with workbench(engine) as (app, pilot):
        screen = shown(app, LibraryScreen)
        by_text = {row.text: row.record_id for row in screen.rows}
        await pilot.press("space")  # newest first: "Bob works on billing"
        await pilot.press("tilde")
        assert screen.marked == {by_text["Alice prefers green tea"], by_text["Bob lives in Lyon"]}
        assert mark_cells(screen, "#library-table") == [False, True, True]
        # With the filter showing Bob's two facts, invert flips those; Alice's mark stays.
        await pilot.press("slash", *keys("Bob"))
        await settle(pilot)
        await pilot.press("escape", "tilde")
        assert [row.text for row in screen.rows] == ["Bob works on billing", "Bob lives in Lyon"]
        assert screen.marked == {
            by_text["Alice prefers green tea"],
            by_text["Bob works on billing"],
        }
        assert "2 marked" in str(screen.query_one("#library-summary", Static).content)


async def test_a_range_starts_at_its_fact_when_rows_arrive_between_the_keys(
    engine: Any, client: Any
) -> None:
    for n in range(5):
        client.add(f"Fact number {n} about the deploy", "team")
    async with workbench(engine, watch_store=True) as (app, pilot):
        screen = shown(app, LibraryScreen)
        await pilot.press("j", "v")  # the range starts at "Fact number 3"
        client.add("A fact written by another process", "team")  # listed first: rows shift
        await store_change_shown(pilot)
        assert screen.rows[0].text == "A fact written by another process"
        await pilot.press("j", "v")  # the cursor stayed on its fact: now on "Fact number 2"
        assert sorted(row.text for row in screen.rows if row.record_id in screen.marked) == [
            "Fact number 2 about the deploy",
            "Fact number 3 about the deploy",
        ]
