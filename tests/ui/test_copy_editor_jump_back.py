"""Issue 36, "What a curator expects from a keyboard tool": copy a fact's text, uri or #docid
(`Y` then t/u/d), see it read-only in $EDITOR (`o`) from the Library and the Chain, and go back
(ctrl+o, backspace, escape) from a chain to the screen and row it was opened from."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pilot_helpers import keys, settle, shown, workbench
from textual.widgets import Input

from engine.facade.service import MemoryService
from gno_tui.widgets.fact_table import FactTable
from screens.fact_actions import CopyChoice
from screens.library import LibraryScreen
from screens.supersession import SupersessionScreen


def notes(app: Any) -> list[str]:
    return [note.message for note in app._notifications]


def cursor_key(app: Any) -> str | None:
    return app.screen.query_one(FactTable).key_at_cursor()


async def move_to(pilot: Any, record_id: str) -> None:
    """The Library's cursor onto the fact `record_id`, by `j` presses."""
    while cursor_key(pilot.app) != record_id:
        await pilot.press("j")


# -- copy ----------------------------------------------------------------------------------


async def test_copy_text_uri_and_docid_from_the_library(engine: Any, client: Any) -> None:
    record = client.add("Alice prefers green tea", "user:alice")["record"]
    docid = record["docid"] if record["docid"].startswith("#") else f"#{record['docid']}"
    async with workbench(engine) as (app, pilot):
        shown(app, LibraryScreen)
        await pilot.press("Y")
        await pilot.pause()
        assert isinstance(app.screen, CopyChoice)  # the three choices, each with its value
        await pilot.press("u")
        await pilot.pause()
        assert app.clipboard == record["uri"]
        assert f"Copied the uri of {docid}: {record['uri']}" in notes(app)
        await pilot.press("Y", "d")
        await pilot.pause()
        assert app.clipboard == docid  # as `:` takes it
        await pilot.press("Y", "t")
        await pilot.pause()
        assert app.clipboard == "Alice prefers green tea"
        assert f"Copied the text of {docid}: Alice prefers green tea" in notes(app)
        # escape copies nothing, and says nothing.
        count = len(notes(app))
        await pilot.press("Y", "escape")
        await pilot.pause()
        shown(app, LibraryScreen)
        assert app.clipboard == "Alice prefers green tea" and len(notes(app)) == count


async def test_copy_on_the_chain_takes_the_highlighted_version(engine: Any, client: Any) -> None:
    first = client.add("The deploy runs on Fridays", "project:x")
    client.supersede(first, "The deploy runs on Mondays")
    async with workbench(engine, "supersession", chain=first["record"]["recordId"]) as (
        app,
        pilot,
    ):
        shown(app, SupersessionScreen)
        await pilot.press("Y", "t")  # the head, where the chain opens
        await pilot.pause()
        assert app.clipboard == "The deploy runs on Mondays"
        await pilot.press("h", "Y", "u")  # the older version
        await pilot.pause()
        assert app.clipboard == first["record"]["uri"]


# -- $EDITOR ---------------------------------------------------------------------------------


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$EDITOR is a script that writes down what it was given: the file's name, its text and
    whether its mode lets anyone write it (a list, one entry per run)."""
    seen = tmp_path / "seen.json"
    script = tmp_path / "editor.py"
    script.write_text(
        "import json, pathlib, sys\n"
        f"seen = pathlib.Path({str(seen)!r})\n"
        "runs = json.loads(seen.read_text()) if seen.exists() else []\n"
        "path = pathlib.Path(sys.argv[-1])\n"
        "runs.append([path.name, path.read_text(), bool(path.stat().st_mode & 0o222)])\n"
        "seen.write_text(json.dumps(runs))\n"
    )
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"{sys.executable} {script}")
    return seen


def fact_file(engine: Any, record_id: str) -> Path:
    service = MemoryService(engine)
    location = service.fact_location(service.facts.get(record_id))
    return engine.home / location.removeprefix("<home>/")


async def test_editor_shows_the_fact_file_read_only_from_library_and_chain(
    engine: Any, client: Any, editor: Path
) -> None:
    first = client.add("The deploy runs on Fridays", "project:x")
    second = client.supersede(first, "The deploy runs on Mondays")
    old, new = (fact_file(engine, r["record"]["recordId"]) for r in (first, second))
    async with workbench(engine) as (app, pilot):
        library = shown(app, LibraryScreen)
        await move_to(pilot, second["record"]["recordId"])
        await pilot.press("o")
        await settle(pilot)
        runs = json.loads(editor.read_text())
        assert runs == [[new.name, new.read_text(), False]]  # the fact file, a read-only copy
        assert any("read-only" in note for note in notes(app))
        await pilot.press("enter")  # its chain; the older version, then o
        await settle(pilot)
        shown(app, SupersessionScreen)
        await pilot.press("h", "o")
        await settle(pilot)
        runs = json.loads(editor.read_text())
        assert runs[-1] == [old.name, old.read_text(), False]
        assert new.read_text() and library.rows  # nothing of the store was changed


async def test_without_an_editor_o_says_how(
    engine: Any, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client.add("Alice prefers green tea", "user:alice")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    async with workbench(engine) as (app, pilot):
        await pilot.press("o")
        await pilot.pause()
        assert any("Set $VISUAL or $EDITOR" in note for note in notes(app))


# -- jump back -------------------------------------------------------------------------------


@pytest.mark.parametrize("back", ["ctrl+o", "backspace", "escape"])
async def test_back_from_a_chain_returns_to_the_library_row(
    engine: Any, client: Any, back: str
) -> None:
    ids = [
        client.add(text, "project:x")["record"]["recordId"]
        for text in ("Bob lives in Lyon", "The deploy runs on Fridays", "Carol drinks tea")
    ]
    async with workbench(engine) as (app, pilot):
        shown(app, LibraryScreen)
        await move_to(pilot, ids[1])
        await pilot.press("enter")
        await settle(pilot)
        chain = shown(app, SupersessionScreen)
        assert chain.ref == ids[1]
        # The Library's cursor moved meanwhile (1, j, 5): back puts it on the fact again.
        await pilot.press("1", "j", "j", "5")
        await settle(pilot)
        assert shown(app, SupersessionScreen) is chain
        await pilot.press(back)
        await settle(pilot)
        library = shown(app, LibraryScreen)
        assert cursor_key(app) == ids[1]
        assert library.query_one(FactTable).has_focus
        # The Chain by its key is a jump too: back returns to where 5 was pressed.
        await pilot.press("j")
        await settle(pilot)
        row = cursor_key(app)
        assert row != ids[1]
        await pilot.press("5")
        await settle(pilot)
        shown(app, SupersessionScreen)
        await pilot.press(back)
        await settle(pilot)
        shown(app, LibraryScreen)
        assert cursor_key(app) == row


async def test_back_from_the_chain_by_key_5_returns_to_the_screen_it_came_from(
    engine: Any, client: Any
) -> None:
    client.add("Bob lives in Lyon", "user:bob")
    async with workbench(engine) as (app, pilot):
        await pilot.press("6")
        await settle(pilot)
        receipts = app.screen
        await pilot.press("5")
        await settle(pilot)
        shown(app, SupersessionScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen is receipts
    # A workbench opened on a chain came from nowhere: ctrl+o says so; escape stays quiet.
    async with workbench(engine, "supersession") as (app, pilot):
        await pilot.press("escape")
        await settle(pilot)
        shown(app, SupersessionScreen)
        assert not any("Nothing to go back to" in note for note in notes(app))
        await pilot.press("ctrl+o")
        await settle(pilot)
        shown(app, SupersessionScreen)
        assert any("Nothing to go back to" in note for note in notes(app))


async def test_escape_in_the_box_leaves_the_box_then_goes_back(engine: Any, client: Any) -> None:
    record_id = client.add("Bob lives in Lyon", "user:bob")["record"]["recordId"]
    async with workbench(engine) as (app, pilot):
        await pilot.press("enter")
        await settle(pilot)
        chain = shown(app, SupersessionScreen)
        await pilot.press("slash", "backspace")  # in the box, backspace is text
        assert chain.query_one("#chain-ref", Input).has_focus
        shown(app, SupersessionScreen)
        await pilot.press("escape")
        assert chain.query_one(FactTable).has_focus and shown(app, SupersessionScreen)
        await pilot.press("escape")
        await settle(pilot)
        shown(app, LibraryScreen)
        assert cursor_key(app) == record_id


async def test_jumps_stack_up_chain_to_chain_then_the_library(engine: Any, client: Any) -> None:
    bob = client.add("Bob lives in Lyon", "user:bob")["record"]
    carol = client.add("Carol drinks tea", "user:carol")["record"]
    async with workbench(engine) as (app, pilot):
        await move_to(pilot, bob["recordId"])
        await pilot.press("enter")
        await settle(pilot)
        chain = shown(app, SupersessionScreen)
        await pilot.press("colon", *keys(carol["docid"]), "enter")  # another chain, by `:`
        await settle(pilot)
        assert chain.versions[-1].record_id == carol["recordId"]
        await pilot.press("ctrl+o")  # back to Bob's chain ...
        await settle(pilot)
        assert shown(app, SupersessionScreen).ref == bob["recordId"]
        await pilot.press("ctrl+o")  # ... then to the Library, on Bob
        await settle(pilot)
        shown(app, LibraryScreen)
        assert cursor_key(app) == bob["recordId"]
