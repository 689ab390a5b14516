"""The Library's as-of view (`:@time`: the store as it was then) is read-only: a write key
writes nothing and answers in a plain sentence that says how to leave the view (escape), never
with an engine error code; escape brings the present back, where the keys write again. Each
row shows the state of that moment, and the detail pane says the same, with what happened
later named as later."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pilot_helpers import keys, settle, shown, workbench
from textual.widgets import Input, Static

from engine.contract.normalize import iso_utc
from engine.curation import review
from engine.memory import browse
from gno_tui.widgets.fitted_table import FittedTable
from screens.library import LibraryScreen

PERSON = "tui:alice"


def history(engine: Any, client: Any) -> str:
    """Paris (superseded by Lyon an hour later), Carol (retired three hours later); the
    moment between, as `@time`, when both were current."""
    own, start = engine._clock, engine.now() - timedelta(hours=4)
    engine._clock = lambda: start
    paris = client.add("Alice lives in Paris", "user:alice")
    carol = client.add("Carol drinks tea", "user:carol")
    engine._clock = lambda: start + timedelta(hours=1)
    client.supersede(paris, "Alice lives in Lyon")
    engine._clock = lambda: start + timedelta(hours=3)
    review.retire(engine, ref=carol["record"]["uri"], actor=PERSON, reason="left")
    engine._clock = own  # now again
    return iso_utc(start + timedelta(minutes=30))


def notes(app: Any) -> list[tuple[str, str]]:
    return [(note.title, note.message) for note in app._notifications]


async def as_of(pilot: Any, then: str) -> LibraryScreen:
    await pilot.press("colon", *keys(f"@{then}"), "enter")
    await settle(pilot)
    return shown(pilot.app, LibraryScreen)


async def test_write_keys_in_the_as_of_view_write_nothing_and_say_how_to_leave(
    engine: Any, client: Any
) -> None:
    then = history(engine, client)
    decided = len(review.decision_log(engine))
    async with workbench(engine) as (app, pilot):
        screen = await as_of(pilot, then)
        assert sorted(row.text for row in screen.rows) == [
            "Alice lives in Paris",
            "Carol drinks tea",
        ]
        # X on a row shown current (Paris is superseded now), then every other write key.
        for key in ("X", "c", "S", "E", "percent_sign", "u", "space", "y"):
            app.clear_notifications()
            await pilot.press(key)
            await settle(pilot)
            assert app.screen is screen, f"{key} opened {type(app.screen).__name__}"
            if key == "space":
                continue  # marking writes nothing: it is allowed
            said = notes(app)
            assert said and not any("MEMORY_" in title + text for title, text in said), said
            assert any(
                f"as of {then}" in text and "read-only" in text and "escape" in text
                for _, text in said
            ), (key, said)
        assert len(review.decision_log(engine)) == decided
        states = {
            row.text: browse.status_of(row, engine.now()) for row in browse.list_facts(engine).rows
        }
        assert states == {
            "Alice lives in Paris": "superseded",
            "Alice lives in Lyon": "current",
            "Carol drinks tea": "retired",
        }
        # escape leaves the as-of view: the present, where X retires again.
        await pilot.press("escape")
        await settle(pilot)
        assert screen.filter.as_of is None
        assert "@" not in screen.query_one("#library-filter", Input).value
        assert "as of" not in str(screen.query_one("#library-summary", Static).render())
        lyon = next(
            index for index, row in enumerate(screen.rows) if row.text == "Alice lives in Lyon"
        )
        screen.query_one(FittedTable).move_cursor(row=lyon)
        await pilot.press("X", *keys("moved"), "enter")
        await settle(pilot)
        assert browse.list_facts(engine, text="Lyon").rows[0].retired_reason == "moved"


async def test_rows_and_the_detail_pane_agree_on_the_state_then(engine: Any, client: Any) -> None:
    then = history(engine, client)
    async with workbench(engine) as (_app, pilot):
        screen = await as_of(pilot, then)
        table = screen.query_one(FittedTable)
        for index, row in enumerate(screen.rows):
            table.move_cursor(row=index)
            await settle(pilot)
            cells = table.full_row_at(index)
            assert str(cells[3]) == "current" and cells[0].style == ""  # not dimmed
            detail = str(screen.query_one("#library-detail-body", Static).render())
            header = detail.splitlines()[0]
            assert header == f"{row.docid}  current", detail
            assert f"as of {then}" in detail
            # What happened after the moment is named as later, not as the state then.
            later, field = (
                ("superseded", "superseded by")
                if row.text == "Alice lives in Paris"
                else ("retired", "retired")
            )
            assert f"now {later}" in detail
            line = next(line for line in detail.splitlines() if line.strip().startswith(field))
            assert "— then (later, " in line, line
        # A mark redraws the row as it was then: still not dimmed.
        table.move_cursor(row=0)
        await pilot.press("space")
        await settle(pilot)
        assert table.full_row_at(0)[0].style == ""
        assert str(table.full_row_at(0)[0]).startswith("● ")


async def test_confidence_and_use_policy_show_their_values_then(engine: Any, client: Any) -> None:
    """A confidence and a use policy changed after the moment: the row and the detail pane
    show the values of the moment (they change in place, not as a new version), and the
    present shows today's again. So does the recall count: a recall after the moment is not
    counted then."""
    own, start = engine._clock, engine.now() - timedelta(hours=4)
    engine._clock = lambda: start
    fact = client.add("Bob drinks black coffee", "user:bob")
    engine._clock = lambda: start + timedelta(hours=2)
    ref = fact["record"]["uri"]
    review.set_curation(
        engine, ref=ref, actor=PERSON, action="confidence",
        changes={"provenance": {"confidence": 0.25}},
    )  # fmt: skip
    review.set_curation(
        engine, ref=ref, actor=PERSON, action="use-policy",
        changes={"usePolicy": {"canUseAsInstruction": True, "canUseAsEvidence": True}},
    )  # fmt: skip
    engine._clock = own
    client.recall("black coffee", ["user:bob"])
    now_row = browse.fact_row(engine, ref)
    before = now_row.workbench.get("provenance", {}).get("confidence")
    then = iso_utc(start + timedelta(hours=1))
    async with workbench(engine) as (_app, pilot):
        screen = await as_of(pilot, then)
        table = screen.query_one(FittedTable)
        table.move_cursor(row=0)
        await settle(pilot)
        cells = [str(cell) for cell in table.full_row_at(0)]
        assert cells[5].startswith("evid") and cells[6] != "0.25", cells
        detail = str(screen.query_one("#library-detail-body", Static).render())
        assert "provenance.confidence 0.25" not in " ".join(detail.split()), detail
        assert "usePolicy.canUseAsInstruction True" not in " ".join(detail.split()), detail
        assert "recalled 0×" in " ".join(detail.split()), detail

        await pilot.press("escape")
        await settle(pilot)
        table.move_cursor(row=0)
        await settle(pilot)
        cells = [str(cell) for cell in table.full_row_at(0)]
        assert cells[5].startswith("instr") and cells[6] == "0.25", (cells, before)
        detail = " ".join(str(screen.query_one("#library-detail-body", Static).render()).split())
        assert "provenance.confidence 0.25" in detail and "recalled 1×" in detail, detail
