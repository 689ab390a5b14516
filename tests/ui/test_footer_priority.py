"""Issue 36, "The text a person needs, at every size": the footer, read off the screen at
180x50, 120x40 and 100x30, shows the keys a person uses most first, quit on every screen, and
"more: ?" exactly when keys were left out (the help, where quit is listed too, has them all)."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from pilot_helpers import keys, shown, steady
from rich.console import Console
from textual.widgets import Static

from engine.facade.service import MemoryService
from gno_tui.app import create_app
from gno_tui.widgets.footer import MoreKey, WorkbenchFooter
from screens.help_screen import HelpScreen

SIZES = ((180, 50), (120, 40), (100, 30))
MODES = ("library", "remember", "review", "recall", "supersession", "receipts")
QUIT = "^q Quit"
MORE = "more: ?"

# Per screen: the keys that bring it where a person works (out of any text box), and its most
# used keys, in the order the footer shows them at every size.
SCREENS: dict[str, tuple[str, list[str], list[str]]] = {
    "library": ("library", [], ["/ Filter", "X Retire", "c Confirm", "S Stale"]),
    "remember": ("remember", ["escape"], ["^s Add", "^r Supersede", "^g Merge"]),
    "review": ("review", [], ["a Add", "x Reject", "s Supersede", "m Merge"]),
    "duplicates": (
        "review",
        ["right_square_bracket"],
        ["r Retire older", "R Retire newer", "b Keep both"],
    ),
    "recall": ("recall", [*keys("alice tea"), "enter"], ["b Budget", "w Why not?", "e Egress"]),
    "chain": ("supersession", ["escape"], ["s Supersede head", "u Revert", "/ Open", "T As of"]),
    "receipts": ("receipts", [], ["V Verify", "f Fence preview", "x Export"]),
}


def run(engine: Any, screen: str, size: tuple[int, int]) -> Any:
    app = create_app(service=MemoryService(engine), screen=screen, watch_store=False)
    return app, app.run_test(size=size)


async def footer_line(pilot: Any) -> str:
    """The footer's row as the screen shows it, once it is steady (no toast over it)."""
    await steady(pilot)
    app = pilot.app
    row = app.screen.query_one(WorkbenchFooter).region.y
    strip = app.screen._compositor.render_strips()[row]
    return "".join(segment.text for segment in strip)


def offered(app: Any) -> list[str]:
    """Every command the screen offers for its footer, by its first key ("X Retire"), the
    screens 1-6 as one."""
    entries = {"app.switch_mode": "1-6 Screens"}
    for _, binding, _, _ in app.screen.active_bindings.values():
        action = binding.action.split("(")[0]
        if binding.show and action not in entries:
            entries[action] = f"{app.get_key_display(binding)} {binding.description}"
    return list(entries.values())


def in_order(line: str, texts: list[str]) -> bool:
    places = [line.find(text) for text in texts]
    return -1 not in places and places == sorted(places)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
@pytest.mark.parametrize("name", SCREENS)
async def test_most_used_keys_first_quit_always_more_exactly_when_cut(
    engine: Any, client: Any, name: str, size: tuple[int, int]
) -> None:
    client.add("Alice prefers green tea", "user:alice")
    client.recall("alice tea", ["user:alice"])
    mode, setup, most_used = SCREENS[name]
    app, running = run(engine, mode, size)
    async with running as pilot:
        await steady(pilot)
        await pilot.press(*setup)
        line = await footer_line(pilot)
        # Help and the screen keys lead, the screen's most used keys follow in their order,
        # then quit; "more: ?" (if there) comes last, before the palette key.
        assert in_order(line, ["f1 Help", "1-6 Screens", *most_used, QUIT]), line
        cut = [entry for entry in offered(app) if entry not in line]
        assert (MORE in line) == bool(cut), (line, cut)
        if MORE in line:
            assert in_order(line, [QUIT, MORE, "^p palette"]), line
        if size == (100, 30):
            assert cut, "at 100 columns every screen has more keys than room"


async def test_more_comes_and_goes_with_the_width(engine: Any, client: Any) -> None:
    client.add("Alice prefers green tea", "user:alice")
    # Wide enough for every Library key (it grows with the commands: 220 columns today).
    _, running = run(engine, "library", (220, 50))
    async with running as pilot:
        line = await footer_line(pilot)
        assert MORE not in line and "z Undo" in line and "@ Log" in line and QUIT in line
        await pilot.resize_terminal(100, 30)
        line = await footer_line(pilot)
        assert MORE in line and "X Retire" in line and QUIT in line
        assert "@ Log" not in line  # the least used went first
        await pilot.resize_terminal(120, 40)
        line = await footer_line(pilot)
        assert in_order(line, ["space Mark", "y Batch", QUIT, MORE]), line
        await pilot.resize_terminal(230, 50)
        assert MORE not in await footer_line(pilot)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
async def test_in_a_text_box_the_way_out_and_no_dead_letters(
    engine: Any, size: tuple[int, int]
) -> None:
    _, running = run(engine, "recall", size)  # starts in the query box
    async with running as pilot:
        line = await footer_line(pilot)
        # There the letters are text: not offered; escape, the way out, right after 1-6.
        assert in_order(line, ["f1 Help", "alt+1-6 Screens", "esc Results", QUIT]), line
        assert "b Budget" not in line and "z Undo" not in line
        await pilot.press("escape")
        line = await footer_line(pilot)
        assert in_order(line, ["1-6 Screens", "b Budget", QUIT]), line
        await pilot.press("2")  # Remember: in its text box
        line = await footer_line(pilot)
        assert in_order(line, ["alt+1-6 Screens", "esc Leave box", "^s Add", QUIT]), line
        if size == (100, 30):  # cut: and inside a box ? is text, F1 opens the help
            assert "more: f1" in line


async def test_clicking_more_opens_the_help(engine: Any) -> None:
    app, running = run(engine, "review", (100, 30))
    async with running as pilot:
        assert MORE in await footer_line(pilot)
        await pilot.click(MoreKey)
        await steady(pilot)
        shown(app, HelpScreen)


def help_body(app: Any) -> str:
    console = Console(width=90, record=True, file=io.StringIO())
    console.print(app.screen.query_one("#help-body", Static).content)
    return re.sub(r"\s+", " ", console.export_text())


@pytest.mark.parametrize("mode", MODES)
async def test_every_screens_help_lists_quit(engine: Any, mode: str) -> None:
    app, running = run(engine, mode, (100, 30))
    async with running as pilot:
        await steady(pilot)
        await pilot.press("escape", "f1")  # F1 works in a box too; escape leaves it first
        await steady(pilot)
        shown(app, HelpScreen)
        body = help_body(app)
        assert "^q Quit: Leave the workbench" in body, body
        hint = str(app.screen.query_one("#help-keys-hint", Static).content)
        assert "ctrl+q quits" in hint
