"""The screen keys from a terminal's own bytes: alt+digit reaches the workbench as a screen key
(gno_tui/terminal_keys.py). Pilot's `press` hands the app key names and skips the terminal
parser, which is where alt+3 used to become "£"; these tests parse the bytes a terminal sends
with Textual's own parser and give the app what it produced."""

from __future__ import annotations

from typing import Any

from pilot_helpers import keys, pending_proposal, settle, shown
from textual import events
from textual._xterm_parser import XTermParser
from textual.widgets import Input, TextArea

import gno_tui.app  # noqa: F401  (building the app's bindings routes the bytes)
from engine.facade.service import MemoryService
from gno_tui.app import create_app
from screens.library import LibraryScreen
from screens.recall import RecallScreen
from screens.remember import RememberScreen


def parsed(data: str) -> list[events.Key]:
    """The key events a terminal's `data` becomes; the empty feed at the end stands for the
    pause after it (the parser's escape delay), which resolves a lone escape sequence."""
    parser = XTermParser()
    tokens = [*parser.feed(data), *parser.feed("")]
    return [token for token in tokens if isinstance(token, events.Key)]


def test_escape_and_a_digit_is_alt_digit_and_a_typed_pound_stays_text() -> None:
    for digit in "123456":
        assert [key.key for key in parsed("\x1b" + digit)] == [f"alt+{digit}"]
    # A pound sign typed as a character (shift+3 on a UK keyboard) is still that character.
    typed = parsed("£")
    assert [key.character for key in typed] == ["£"]


def test_alt_digit_is_read_without_waiting_for_the_escape_delay() -> None:
    """Without the pause that ends a lone escape: the bytes alone are the key, at once, and
    carry no character to type."""
    for digit in "123456":
        keys_now = [t for t in XTermParser().feed("\x1b" + digit) if isinstance(t, events.Key)]
        assert [(key.key, key.character) for key in keys_now] == [(f"alt+{digit}", None)]


async def feed(app: Any, pilot: Any, data: str) -> None:
    for key in parsed(data):
        app.post_message(key)
    await settle(pilot)


async def test_alt_digit_bytes_switch_screens_from_inside_a_text_box(engine: Any) -> None:
    app = create_app(service=MemoryService(engine), screen="remember", watch_store=False)
    async with app.run_test(size=(100, 30)) as pilot:
        await settle(pilot, pending_proposal)
        remember = shown(app, RememberScreen)
        text = remember.query_one("#remember-text", TextArea)
        await pilot.press(*keys("Tea"))
        assert text.has_focus
        await feed(app, pilot, "\x1b4")  # what tmux sends for alt+4
        recall = shown(app, RecallScreen)
        assert text.text == "Tea"  # nothing typed into the box on the way out
        query = recall.query_one("#recall-query", Input)
        await pilot.press(*keys("tea"))
        await feed(app, pilot, "\x1b1")
        shown(app, LibraryScreen)
        assert query.value == "tea"
