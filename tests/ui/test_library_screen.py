"""The Library screen driven by real keystrokes over a real SQLite store."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pilot_helpers import settle, shown, store_change_shown, workbench
from textual.widgets import DataTable, Input, Static, Tab

from engine.contract.normalize import iso_utc
from engine.curation import review
from engine.curation.undo import undo_last
from engine.memory import browse
from gno_tui.widgets.fitted_table import FittedTable
from screens.decision_log import DecisionLogScreen
from screens.library import LibraryScreen


def summary(app: Any) -> str:
    return str(app.screen.query_one("#library-summary", Static).content)


async def test_filter_as_you_type_confirm_and_retire(engine: Any, client: Any) -> None:
    client.add("Alice prefers green tea", "user:alice")
    client.add("Bob lives in Lyon", "user:bob")
    client.add("The deploy runs on Fridays", "project:x")
    async with workbench(engine) as (app, pilot):
        assert summary(app).startswith("3 of 3")
        await pilot.press("slash", *"lyon")
        await settle(pilot)
        assert summary(app).startswith("1 of 1") and "fuzzy" not in summary(app)
        # A typo still finds the fact through the fuzzy fallback, and the summary says so.
        await pilot.press(*["backspace"] * 4, *"lyin")
        await settle(pilot)
        assert "1 of 1" in summary(app)
        assert "fuzzy: no fact has every word, the closest shown" in summary(app)
        await pilot.press("escape")  # back to the list, the filter stays
        await pilot.press("c")
        await settle(pilot)
        row = browse.list_facts(engine, text="Lyon").rows[0]
        assert row.workbench["provenance"]["status"] == "user_confirmed"
        assert row.workbench["usePolicy"]["requiresUserConfirmation"] is False
        await pilot.press("X", *"moved away", "enter")
        await settle(pilot)
        retired = browse.list_facts(engine, status="retired").rows
        assert [r.text for r in retired] == ["Bob lives in Lyon"]
        assert retired[0].retired_reason == "moved away"
        log = [entry["action"] for entry in review.decision_log(engine)]
        assert log[:2] == ["retire", "confirm"]


async def test_status_tabs_count_and_filter(engine: Any, client: Any) -> None:
    first = client.add("Carol drinks coffee", "user:carol")
    client.supersede(first, "Carol drinks water")
    client.add("Dave likes maps", "user:dave")
    async with workbench(engine) as (app, pilot):
        labels = [str(tab.label) for tab in app.screen.query(Tab)]
        assert "Current 2" in labels and "Superseded 1" in labels
        # Agent-written facts need confirmation: all current ones are "needs attention".
        assert "Needs attention 2" in labels
        await pilot.press("right_square_bracket", "right_square_bracket", "right_square_bracket")
        await settle(pilot)
        table = app.screen.query_one(FittedTable)
        assert table.row_count == 1
        assert "superseded" in str(table.full_row_at(0)[3])
        await pilot.press("slash", *"s:user:dave")
        await settle(pilot)
        assert table.row_count == 0


async def test_sees_writes_from_another_process(engine: Any, client: Any) -> None:
    """The app watches the store's generation and refreshes the open screen."""
    async with workbench(engine, watch_store=True) as (app, pilot):
        assert summary(app).startswith("0 of 0")
        client.add("Erin joined the infra team", "team:infra")
        await store_change_shown(pilot)
        assert summary(app).startswith("1 of 1")


async def test_enter_opens_the_chain_and_the_palette_runs_commands(
    engine: Any, client: Any
) -> None:
    first = client.add("Carol drinks coffee", "user:carol")
    client.supersede(first, "Carol drinks water")
    async with workbench(engine) as (app, pilot):
        await pilot.press("enter")
        await settle(pilot)
        assert app.current_mode == "supersession"
        # Every command is a palette entry too: "Library" from the palette switches back.
        await pilot.press("ctrl+p", *"Library")
        await settle(pilot)  # the palette searches its commands in a worker
        await pilot.press("enter")
        await settle(pilot)
        assert app.current_mode == "library"


async def test_detail_shows_key_revision_topic_tags_and_expiry(engine: Any) -> None:
    from engine.keyed import service as keyed

    keyed.remember(
        engine,
        {
            "key": "alice/drink",
            "ttl_seconds": 3600,
            "memory": {
                "content": "Alice drinks tea",
                "topic": "prefs",
                "tags": ["Diet", "morning"],
            },
        },
    )
    async with workbench(engine) as (app, _pilot):
        detail = str(app.screen.query_one("#library-detail-body", Static).content)
        assert "alice/drink" in detail and "prefs" in detail
        assert "diet, morning" in detail and "expires" in detail


async def test_use_policy_confidence_and_stale_from_the_keyboard(engine: Any, client: Any) -> None:
    client.add("Fay prefers short meetings", "user:fay")
    async with workbench(engine) as (app, pilot):
        await pilot.press("E")
        await settle(pilot)
        row = browse.list_facts(engine).rows[0]
        assert row.workbench["usePolicy"]["canUseAsInstruction"] is True
        await pilot.press("percent_sign", *["backspace"] * 5, *"0.35", "enter")
        await settle(pilot)
        assert browse.list_facts(engine).rows[0].workbench["provenance"]["confidence"] == 0.35
        await pilot.press("S")
        await settle(pilot)
        table = app.screen.query_one(FittedTable)
        assert str(table.full_row_at(0)[3]) == "stale"
        await pilot.press("c")
        await settle(pilot)
        assert str(table.full_row_at(0)[3]) == "current"
        actions = [entry["action"] for entry in review.decision_log(engine)]
        assert actions[:4] == ["confirm", "mark-stale", "confidence", "use-policy"]


async def test_marks_and_one_batch_decision_for_every_marked_fact(engine: Any, client: Any) -> None:
    for text in ("Alice prefers green tea", "Bob lives in Lyon", "The deploy runs on Fridays"):
        client.add(text, "team")
    already = client.add("Carol moved to Berlin", "team")["record"]
    review.retire(engine, ref=already["uri"], actor="tui:test", reason="old")
    async with workbench(engine) as (app, pilot):
        screen = shown(app, LibraryScreen)
        assert [r.text for r in screen.rows][:2] == [
            "Carol moved to Berlin",  # newest first; retired
            "The deploy runs on Fridays",
        ]
        await pilot.press("y")  # nothing marked yet: a hint, no prompt
        await settle(pilot)
        assert isinstance(app.screen, LibraryScreen)
        await pilot.press("ctrl+a")
        assert len(screen.marked) == 4 and "4 marked" in summary(app)
        await pilot.press("ctrl+backslash", "space", "space")  # clear, then mark the first two
        assert "2 marked" in summary(app)
        assert str(app.screen.query_one(FittedTable).full_row_at(0)[0]).startswith("● ")
        # Retire both with one reason: the summary first, then y. Carol was already retired:
        # the engine refuses that one and the other is retired.
        await pilot.press("y", "asterisk", "X", *"dup", "enter")  # `*`: one decision for all
        await pilot.pause()
        assert "2 retire" in str(app.screen.query_one("#batch-summary").render())
        await pilot.press("y")
        await settle(pilot)
        reasons = {
            r.text: r.retired_reason for r in browse.list_facts(engine, status="retired").rows
        }
        assert reasons == {"Carol moved to Berlin": "old", "The deploy runs on Fridays": "dup"}
        assert any("retire: 1 done, 1 refused" in note.message for note in app._notifications)
        assert screen.marked == set()
        # Confirm everything shown (a retired fact can be vouched for too; it stays retired).
        await pilot.press("ctrl+a", "y", "asterisk", "c", "y")
        await settle(pilot)
        statuses = {
            r.text: r.workbench["provenance"]["status"]
            for r in browse.list_facts(engine, status="current").rows
        }
        assert statuses == dict.fromkeys(
            ["Alice prefers green tea", "Bob lives in Lyon"], "user_confirmed"
        )
        assert any(note.message == "confirm: 4 done" for note in app._notifications)


async def test_the_decision_log_opens_from_any_screen(engine: Any, client: Any) -> None:
    client.add("Bob lives in Lyon", "user:bob")
    async with workbench(engine) as (app, pilot):
        await pilot.press("c")  # confirm, from the Library
        await settle(pilot)
        await pilot.press("at")
        await settle(pilot)
        assert isinstance(app.screen, DecisionLogScreen)
        table = app.screen.query_one(DataTable)
        assert table.row_count == 1
        assert "confirm" in " ".join(str(cell) for cell in table.get_row_at(0))
        await pilot.press("escape")
        await settle(pilot)
        assert isinstance(app.screen, LibraryScreen)


async def test_the_decision_log_names_facts_by_docid_and_text(engine: Any, client: Any) -> None:
    bob = client.add("Bob lives in Lyon and works on the billing API", "user:bob")["record"]
    async with workbench(engine) as (app, pilot):
        await pilot.press("c", "X")  # confirm, then retire with a reason
        await settle(pilot)
        await pilot.press(*"moved", "enter")
        await settle(pilot)
        await pilot.press("at")
        await settle(pilot)
        table = shown(app, DecisionLogScreen).query_one(DataTable)
        targets = [str(table.get_row_at(row)[3]) for row in range(table.row_count)]
        # Not the uri cut at 40 characters: the docid and the start of the text.
        assert targets == [f"{bob['docid']} Bob lives in Lyon and works on the billing API"] * 2
        detail = str(app.screen.query_one("#log-detail").render())
        assert bob["docid"] in detail and bob["uri"] in detail


async def test_v_marks_a_range_of_rows(engine: Any, client: Any) -> None:
    for n in range(5):
        client.add(f"Fact number {n} about the deploy", "team")
    async with workbench(engine) as (app, pilot):
        screen = shown(app, LibraryScreen)
        await pilot.press("j", "v")
        assert "visual: v marks to here" in summary(app)
        await pilot.press("j", "j", "v")
        assert screen.marked == {row.record_id for row in screen.rows[1:4]}
        assert "3 marked" in summary(app) and "visual" not in summary(app)
        # A range upwards works the same; marks add up.
        await pilot.press("v", "k", "k", "k", "v")
        assert screen.marked == {row.record_id for row in screen.rows[0:4]}


@pytest.mark.parametrize(
    ("keys", "done", "nothing_left"),
    [
        (["c", "z"], "undone", "MEMORY_NOTHING_TO_UNDO"),
        (["c", "z", "ctrl+z"], "redone", "MEMORY_NOTHING_TO_REDO"),
    ],
    ids=["z undoes the confirm", "ctrl+z redoes what z undid"],
)
async def test_z_undoes_and_ctrl_z_redoes_the_latest_decision_until_nothing_is_left(
    engine: Any, client: Any, keys: list[str], done: str, nothing_left: str
) -> None:
    uri = client.add("Bob lives in Lyon", "user:bob")["record"]["uri"]
    statuses = {"c": "user_confirmed", "z": "observed", "ctrl+z": "user_confirmed"}
    async with workbench(engine) as (app, pilot):
        for key in keys:  # confirm, undo (and redo): each shows in the fact at once
            await pilot.press(key)
            await settle(pilot)
            assert browse.fact_row(engine, uri).workbench["provenance"]["status"] == statuses[key]
        assert any(n.message == f"{done}: confirm on {uri}" for n in app._notifications)
        # The list shows it too: the row's status is the fact's.
        assert statuses[keys[-1]] in str(app.screen.query_one(FittedTable).full_row_at(0)[4])
        await pilot.press(keys[-1])  # again: nothing is left to take back (or do again)
        await settle(pilot)
        assert any(n.title == nothing_left for n in app._notifications)


async def test_z_and_ctrl_z_do_nothing_in_a_read_only_workbench(engine: Any, client: Any) -> None:
    uri = client.add("Bob lives in Lyon", "user:bob")["record"]["uri"]
    other = client.add("Bob plays chess", "user:bob")["record"]["uri"]
    review.confirm(engine, ref=uri, actor="tui:reader")
    review.confirm(engine, ref=other, actor="tui:reader")
    undo_last(engine, actor="tui:reader")  # leaves a redo to refuse
    async with workbench(engine, read_only=True, actor="tui:reader") as (_app, pilot):
        await pilot.press("z", "ctrl+z")
        await settle(pilot)
    assert browse.fact_row(engine, uri).workbench["provenance"]["status"] == "user_confirmed"
    assert browse.fact_row(engine, other).workbench["provenance"]["status"] == "observed"


async def test_colon_at_a_time_shows_the_library_as_it_was_then(engine: Any, client: Any) -> None:
    start = engine.now()
    engine._clock = lambda: start
    paris = client.add("Alice lives in Paris", "user:alice")
    engine._clock = lambda: start + timedelta(hours=1)
    client.supersede(paris, "Alice lives in Lyon")
    engine._clock = lambda: start + timedelta(hours=2)
    client.add("Carol drinks tea", "user:carol")
    then = iso_utc(start + timedelta(minutes=30))
    async with workbench(engine, "review") as (app, pilot):
        await pilot.press("colon", *f"@{then}", "enter")
        await settle(pilot)
        screen = shown(app, LibraryScreen)
        # Only what the store held then, with the status it had then.
        assert [row.text for row in screen.rows] == ["Alice lives in Paris"]
        table = screen.query_one(FittedTable)
        assert "current" in str(table.full_row_at(0)[3])
        assert f"as of {then}" in str(screen.query_one("#library-summary", Static).render())
        assert str(screen.query_one("#tab-all", Tab).label) == "All 1"
        # Clearing the time brings the present back.
        screen.query_one("#library-filter", Input).value = ""
        await settle(pilot)
        assert sorted(row.text for row in screen.rows) == [
            "Alice lives in Lyon",
            "Alice lives in Paris",
            "Carol drinks tea",
        ]
        assert "superseded" in str(table.full_row_at(2)[3])


async def test_a_time_that_cannot_be_read_says_how_to_write_it(engine: Any, client: Any) -> None:
    client.add("Alice lives in Paris", "user:alice")
    async with workbench(engine) as (app, pilot):
        await pilot.press("slash", *"@yesterday")
        await settle(pilot)
        assert any("write @2026-11-01" in n.message for n in app._notifications)
        # The unreadable part is left out; the list still shows the store as it is.
        assert isinstance(app.screen, LibraryScreen)
        assert [row.text for row in app.screen.rows] == ["Alice lives in Paris"]


async def test_a_full_page_of_a_filter_counts_every_match(engine: Any) -> None:
    """More matches than a page: a page of rows, and the summary's total is every match (a
    short page counts itself without a second pass; a full one is counted)."""
    from engine.storage.bulk import BulkFact, add_many

    add_many(
        engine,
        [
            BulkFact(f"Ledger line {n} of the audit", ["team:audit"], caller="t", session="s")
            for n in range(230)
        ],
        durable=False,
    )
    async with workbench(engine) as (app, pilot):
        await pilot.press("slash", *"ledger")
        await settle(pilot)
        assert summary(app).startswith("200 of 230 shown")
        await pilot.press("space", *"line", "space", *"22")  # 22, 122, 220-229: a short page
        await settle(pilot)
        assert summary(app).startswith("12 of 12 shown")
