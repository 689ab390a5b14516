"""Issue 16, "Nothing cut off" and "No traps", driven by real keys in a 100x30 terminal: every
prompt shows its whole text and what it acts on, help scrolls and closes, the footer keeps
help and the screen keys, columns are chosen for the width, escape leaves any text box and
the screen keys follow one rule inside boxes."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from pilot_helpers import keys, pending_proposal, settle, shown
from rich.console import Console
from textual.command import CommandPalette
from textual.containers import VerticalScroll
from textual.widgets import Input, OptionList, Static, TextArea

from engine.facade.service import MemoryService
from engine.memory.receipts import recent_receipts
from gno_tui.app import create_app
from gno_tui.widgets.fitted_table import FittedTable
from gno_tui.widgets.footer import WorkbenchFooter
from screens.help_screen import HelpScreen
from screens.library import LibraryScreen
from screens.modal import Modal
from screens.recall import RecallScreen
from screens.receipts import ReceiptsScreen
from screens.remember import RememberScreen

SMALL = (100, 30)
MODES = ("library", "remember", "review", "recall", "supersession", "receipts")


def run(engine: Any, screen: str) -> Any:
    app = create_app(service=MemoryService(engine), screen=screen, watch_store=False)
    return app, app.run_test(size=SMALL)


def modal_text(app: Any) -> str:
    """What the modal in front shows, its lines joined (a wrapped line breaks at a space)."""
    assert isinstance(app.screen, Modal)
    strips = app.screen._compositor.render_strips()
    lines = ["".join(segment.text for segment in strip) for strip in strips]
    inside = [line.replace("│", " ").replace("╭", " ").replace("╰", " ") for line in lines]
    return re.sub(r"\s+", " ", " ".join(inside))


def rendered(content: Any) -> str:
    console = Console(width=90, record=True, file=io.StringIO())
    console.print(content)
    return console.export_text()


def one_line(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def footer_text(app: Any) -> str:
    return " ".join(str(key.render()) for key in app.screen.query_one(WorkbenchFooter).children)


async def test_retire_and_confidence_prompts_show_the_fact(engine: Any, client: Any) -> None:
    client.add("Alice prefers green tea with a slice of lemon every single morning", "user:a")
    app, running = run(engine, "library")
    async with running as pilot:
        await settle(pilot)
        await pilot.press("X")
        await settle(pilot)
        text = modal_text(app)
        assert "Why retire #" in text
        assert "“Alice prefers green tea with a slice of lemon every single morning”" in text
        await pilot.press("escape", "percent_sign")
        await settle(pilot)
        assert "every single morning" in modal_text(app)


async def test_delete_purge_and_jump_prompts_are_whole(engine: Any, client: Any) -> None:
    client.add("Alice prefers green tea", "user:alice")
    receipt = client.recall("alice tea", ["user:alice"])["receipt"]
    app, running = run(engine, "receipts")
    async with running as pilot:
        await settle(pilot)
        await pilot.press("d")
        await settle(pilot)
        text = modal_text(app)
        assert (
            one_line(
                "Delete 1 receipt(s)? They stop fencing and cannot be presented again; the "
                "decision log keeps their digests."
            )
            in text
        )
        assert receipt["digest"][:12] in text  # which receipt it acts on
        await pilot.press("n", "D")
        await settle(pilot)
        assert "Purge every receipt issued before (ISO time, UTC if no zone):" in modal_text(app)
        # A time after the receipt: the typed confirmation, with the words to type, whole.
        await pilot.press("ctrl+u", *keys("2999-01-01"), "enter")
        await settle(pilot)
        text = modal_text(app)
        assert "Type 'purge 1' to delete them all:" in text
        await pilot.press("escape", "colon")
        await settle(pilot)
        assert "or to a time (@2026-11-01)" in modal_text(app)


@pytest.mark.parametrize("mode", MODES)
async def test_help_scrolls_and_closes_on_escape_and_q(engine: Any, mode: str) -> None:
    app, running = run(engine, mode)
    async with running as pilot:
        await settle(pilot)
        await pilot.press("escape", "f1")  # escape first: F1 works anywhere, ? is text in a box
        await settle(pilot)
        help_screen = shown(app, HelpScreen)
        scroll = help_screen.query_one("#help-scroll", VerticalScroll)
        assert scroll.max_scroll_y > 0  # longer than the screen: it scrolls, never cut
        await pilot.press("pagedown", "j")
        await settle(pilot)
        assert scroll.scroll_y > 0
        body = rendered(help_screen.query_one("#help-body", Static).content)
        assert "Keys on every screen" in body and "alt+1" in body  # the rule for text boxes
        await pilot.press("q")
        await settle(pilot)
        assert not isinstance(app.screen, HelpScreen)
        await pilot.press("question_mark")
        await settle(pilot)
        shown(app, HelpScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, Modal)


@pytest.mark.parametrize("mode", MODES)
async def test_the_footer_keeps_help_and_the_screen_keys(engine: Any, mode: str) -> None:
    app, running = run(engine, mode)
    async with running as pilot:
        await settle(pilot)
        footer = footer_text(app)
        assert "Help" in footer and "Screens" in footer
        # Nothing cut: every entry ends inside the footer, left of the palette key.
        keys_shown = list(app.screen.query_one(WorkbenchFooter).children)
        palette = keys_shown[-1]
        assert "palette" in str(palette.render())
        assert all(key.region.right <= palette.region.x for key in keys_shown[:-1])


async def test_recall_footer_shows_egress_and_budget(engine: Any, client: Any) -> None:
    client.add("Alice prefers green tea", "user:alice")
    app, running = run(engine, "recall")
    async with running as pilot:
        await settle(pilot)
        # In the query box the letters are text: the footer names what works there.
        assert "alt+1-6" in footer_text(app)
        await pilot.press(*keys("alice tea"), "enter")
        await settle(pilot)
        footer = footer_text(app)
        assert "e Egress" in footer and "b Budget" in footer


async def test_the_palette_shows_the_keys(engine: Any) -> None:
    app, running = run(engine, "receipts")
    async with running as pilot:
        await settle(pilot)
        await pilot.press("ctrl+p", *keys("verify"))
        await settle(pilot)
        palette = shown(app, CommandPalette)
        options = palette.query_one(OptionList)
        prompts = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        assert any("Verify (V)" in prompt for prompt in prompts), prompts


async def test_columns_by_priority_and_a_key_to_hide_the_detail(engine: Any, client: Any) -> None:
    client.add("Alice prefers green tea", "user:alice")
    client.recall("alice tea", ["user:alice"])
    app, running = run(engine, "library")
    async with running as pilot:
        await settle(pilot)
        table = app.screen.query_one("#library-table", FittedTable)
        assert table.shown_titles()[:2] == ["summary", "status"]
        narrow = len(table.shown_titles())
        await pilot.press("backslash")  # the detail pane hides: the list takes its width
        await settle(pilot)
        assert not app.screen.query_one("#library-detail").display
        assert {"scopes", "status"} <= set(table.shown_titles())
        assert len(table.shown_titles()) > narrow
        assert str(table.get_row_at(0)[table.shown_titles().index("status")]) == "current"
        await pilot.press("6")
        await settle(pilot)
        receipts = app.screen.query_one("#receipts-table", FittedTable)
        assert {"digest", "state"} <= set(receipts.shown_titles())
        await pilot.press("4", *keys("alice tea"), "enter")
        await settle(pilot)
        results = app.screen.query_one("#recall-table", FittedTable)
        assert "fact" in results.shown_titles()
        fact = results.get_row_at(0)[results.shown_titles().index("fact")]
        assert str(fact).startswith("Alice prefers green tea")


async def test_escape_leaves_remember_and_digits_in_boxes_are_text(engine: Any) -> None:
    app, running = run(engine, "remember")
    async with running as pilot:
        await settle(pilot, pending_proposal)
        screen = shown(app, RememberScreen)
        await pilot.press(*keys("Tea at 1"))
        await settle(pilot, pending_proposal)
        # A digit in the text box is text, never a screen switch.
        assert screen.query_one("#remember-text", TextArea).text == "Tea at 1"
        shown(app, RememberScreen)
        await pilot.press("escape")  # leaves the box: now the digits are screen keys
        assert not isinstance(app.focused, Input | TextArea)
        await pilot.press("1")
        await settle(pilot)
        shown(app, LibraryScreen)
        await pilot.press("2", "slash")  # back to the text, where it was left
        assert screen.query_one("#remember-text", TextArea).has_focus
        await pilot.press("alt+4")  # alt+digit switches from inside a box
        await settle(pilot)
        recall = shown(app, RecallScreen)
        await pilot.press(*keys("in 2026"))
        assert recall.query_one("#recall-query", Input).value == "in 2026"
        await pilot.press("alt+1")
        await settle(pilot)
        shown(app, LibraryScreen)
        assert recall.query_one("#recall-query", Input).value == "in 2026"


async def test_the_empty_store_hint_leads_out_again(engine: Any) -> None:
    app, running = run(engine, "library")
    async with running as pilot:
        await settle(pilot)
        hint = str(app.screen.query_one("#library-detail-body", Static).content)
        assert "`" not in hint and "press 2" in hint and "escape" in hint
        await pilot.press("2")
        await settle(pilot, pending_proposal)
        assert shown(app, RememberScreen).query_one("#remember-text", TextArea).has_focus
        await pilot.press("escape", "1")  # as the hint says
        await settle(pilot)
        shown(app, LibraryScreen)


async def test_the_focused_pane_has_a_border(engine: Any, client: Any) -> None:
    client.add("Alice prefers green tea", "user:alice")
    client.recall("alice tea", ["user:alice"])
    app, running = run(engine, "receipts")
    async with running as pilot:
        await settle(pilot)
        screen = shown(app, ReceiptsScreen)
        table = screen.query_one("#receipts-table")
        detail = screen.query_one("#receipts-detail")
        assert table.has_focus and table.styles.border_left[0] == "thick"
        before = detail.styles.border_left[0]
        await pilot.press("tab")
        await settle(pilot)
        assert detail.has_focus and detail.styles.border_left[0] == "thick" != before
        assert table.styles.border_left[0] != "thick"


async def test_format_and_egress_keys_issue_no_receipt(engine: Any, client: Any) -> None:
    client.add("Alice prefers green tea", "user:alice")
    app, running = run(engine, "recall")
    async with running as pilot:
        await settle(pilot)
        screen = shown(app, RecallScreen)
        await pilot.press(*keys("alice tea"), "enter")
        await settle(pilot)
        issued = len(recent_receipts(engine))
        await pilot.press("t")
        await settle(pilot)
        assert screen.format == "ob1" and screen.schema == "ob1_recall"
        assert screen.document is not None and "memories" in str(screen.document.keys())
        await pilot.press("t", "e")
        await settle(pilot)
        assert screen.format == "gno" and screen.egress == "lan"
        assert len(recent_receipts(engine)) == issued  # re-shown, not recalled again
