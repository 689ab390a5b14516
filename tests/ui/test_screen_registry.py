"""One screen registry (screens.SCREEN_REGISTRY): the screen keys, the alt+digit keys and the
terminal's bytes for them, the palette's screen entries, the help's screen lines and the
footer's screen entry are all made from it, one per entry in its order; and one entry more
(a screen only this test registers, in a GnoApp subclass) is all a new screen needs for its
key, its palette entries, its help line and its place in the footer."""

from __future__ import annotations

import io
import re
from typing import Any

from pilot_helpers import SIZE, keys, settle, shown, workbench
from rich.console import Console
from textual.app import ComposeResult
from textual.binding import Binding
from textual.command import CommandPalette
from textual.widgets import OptionList, Static

from engine.facade.service import MemoryService
from gno_tui.app import GnoApp
from gno_tui.palette import palette_commands
from gno_tui.screen_registry import (
    Registry,
    ScreenEntry,
    alt_screen_bindings,
    app_bindings,
    digit_span,
    global_commands,
    input_rule,
    screen_commands,
    screen_digits,
)
from gno_tui.terminal_keys import alt_digit_sequences
from gno_tui.widgets.footer import WorkbenchFooter, screens_entry
from gno_tui.widgets.header import WorkbenchHeader
from gno_tui.workbench_commands import APP_COMMANDS, VERB, WorkbenchCommand, bindings
from screens import SCREEN_REGISTRY, SCREENS_BY_MODE
from screens.base import WorkbenchScreen
from screens.help_screen import HelpScreen
from screens.library import LibraryScreen

# The binding ids users' keymaps and the tests name: they must not move with the registry.
MODES = ["library", "remember", "review", "recall", "supersession", "receipts"]
TITLES = ["Library", "Remember", "Review", "Recall", "Chain", "Receipts"]
SCREEN_KEY = r"\w+ \(\d\)"  # a screen key's palette entry: "Chain (5)"


class ExtraScreen(WorkbenchScreen):
    """A screen no one else registers: what a new screen brings is its module, its commands
    and its entry."""

    HELP = "## Extra\n\nA screen only the registry test shows."
    COMMANDS_LIST = (WorkbenchCommand("extra.ping", "P", "ping", "Ping", "Say ping", rank=VERB),)

    def compose(self) -> ComposeResult:
        yield WorkbenchHeader()
        yield Static("extra", id="extra-body")
        yield WorkbenchFooter()

    def action_ping(self) -> None:
        self.notify("ping from the extra screen")


EXTRA = ScreenEntry("extra", ExtraScreen, "Extra", "A screen only the registry test registers")
WITH_EXTRA: Registry = (*SCREEN_REGISTRY, EXTRA)


class ExtraApp(GnoApp):
    SCREEN_REGISTRY = WITH_EXTRA


def binding_fields(made: list[Any]) -> list[tuple[str, str, str | None]]:
    return [(b.key, b.action, b.id) for b in made if isinstance(b, Binding)]


def each(registry: Registry) -> list[tuple[str, ScreenEntry]]:
    return list(zip(screen_digits(registry), registry, strict=True))


def test_every_screen_key_is_made_from_the_registry_one_per_entry_in_order() -> None:
    assert [entry.mode for entry in SCREEN_REGISTRY] == MODES
    assert [entry.title for entry in SCREEN_REGISTRY] == TITLES
    assert {entry.mode: entry.screen for entry in SCREEN_REGISTRY} == SCREENS_BY_MODE
    assert screen_digits(SCREEN_REGISTRY) == "123456"
    # The digit keys: a binding each, with the ids a user's keymap names.
    assert binding_fields(bindings(screen_commands(SCREEN_REGISTRY))) == [
        (str(n), f"app.switch_mode('{mode}')", f"app.{mode}") for n, mode in enumerate(MODES, 1)
    ]
    # alt+digit: a priority binding each, not in the footer; and the terminal's bytes for it.
    alt = alt_screen_bindings(SCREEN_REGISTRY)
    assert binding_fields(alt) == [
        (f"alt+{n}", f"app.switch_mode('{mode}')", f"app.{mode}.alt")
        for n, mode in enumerate(MODES, 1)
    ]
    assert all(isinstance(b, Binding) and b.priority and not b.show for b in alt)
    assert alt_digit_sequences(screen_digits(SCREEN_REGISTRY)) == {
        f"\x1b{n}": f"alt+{n}" for n in range(1, 7)
    }
    # The commands of every screen (help, palette, footer ranks): the screen keys, then the app's.
    assert global_commands(SCREEN_REGISTRY) == (*screen_commands(SCREEN_REGISTRY), *APP_COMMANDS)
    assert [c.title for c in screen_commands(SCREEN_REGISTRY)] == TITLES
    # The app's bindings are exactly these (nothing spelled out beside the registry).
    assert binding_fields(GnoApp.BINDINGS) == binding_fields(app_bindings(SCREEN_REGISTRY))
    # The footer's screen entry and the rule for text boxes name the same keys.
    entry = screens_entry(SCREEN_REGISTRY, typing=False)
    assert (entry.key, entry.display) == ("1", "1-6")
    assert entry.tooltip == (
        "Switch screen: 1 Library · 2 Remember · 3 Review · 4 Recall · 5 Chain · 6 Receipts"
    )
    assert screens_entry(SCREEN_REGISTRY, typing=True).display == "alt+1-6"
    assert "then 1-6 switch screens. alt+1 ... alt+6 switch" in input_rule(SCREEN_REGISTRY)


def test_one_more_entry_is_one_more_key_everywhere() -> None:
    assert screen_digits(WITH_EXTRA) == "1234567" and digit_span(WITH_EXTRA) == "1-7"
    made = bindings(screen_commands(WITH_EXTRA))
    assert binding_fields(made)[-1] == ("7", "app.switch_mode('extra')", "app.extra")
    assert binding_fields(alt_screen_bindings(WITH_EXTRA))[-1][2] == "app.extra.alt"
    assert alt_digit_sequences(screen_digits(WITH_EXTRA))["\x1b7"] == "alt+7"
    assert screens_entry(WITH_EXTRA, typing=False).tooltip.endswith("6 Receipts · 7 Extra")
    assert "alt+1 ... alt+7" in input_rule(WITH_EXTRA)
    # The registry's own app is untouched by the subclass's.
    assert "7" not in [b.key for b in GnoApp.BINDINGS if isinstance(b, Binding)]
    too_many = tuple(EXTRA for _ in range(10))
    try:
        screen_digits(too_many)
    except ValueError as refused:
        assert "9 at most" in str(refused)
    else:
        raise AssertionError("ten screens got keys")


def palette_prompts(app: Any) -> list[str]:
    """The palette's entries, by their titles (the first line: the help line follows)."""
    options = shown(app, CommandPalette).query_one(OptionList)
    prompts = (str(options.get_option_at_index(i).prompt) for i in range(options.option_count))
    return [prompt.split("\n")[0] for prompt in prompts]


def help_body(app: Any) -> str:
    body = shown(app, HelpScreen).query_one("#help-body", Static).content
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(body)
    return re.sub(r"\s+", " ", console.export_text())


def footer_text(app: Any) -> str:
    footer = app.screen.query_one(WorkbenchFooter)
    return " ".join(str(key.render()) for key in footer.children)


def in_order(text: str, parts: list[str]) -> bool:
    places = [text.find(part) for part in parts]
    return -1 not in places and places == sorted(places)


async def test_the_palette_the_help_and_the_footer_list_each_screen_once_in_order(
    engine: Any,
) -> None:
    async with workbench(engine, "library") as (app, pilot):
        assert "1-6 Screens" in footer_text(app)
        expected = [f"{title} ({n})" for n, title in enumerate(TITLES, 1)]
        # The workbench gives the palette its entries in the registry's order (the palette
        # lists them by name), each screen key once.
        given = [command.title for command in palette_commands(app, app.screen)]
        assert [title for title in given if re.fullmatch(SCREEN_KEY, title)] == expected
        await pilot.press("ctrl+p")
        await settle(pilot)
        listed = [title for title in palette_prompts(app) if re.fullmatch(SCREEN_KEY, title)]
        assert sorted(listed) == sorted(expected)
        await pilot.press("escape", "f1")
        await settle(pilot)
        body = help_body(app)
        lines = [f"{digit} {entry.title}: {entry.help}" for digit, entry in each(SCREEN_REGISTRY)]
        assert in_order(body, lines), body
        assert all(body.count(line) == 1 for line in lines)


async def test_a_registered_screen_gets_its_key_palette_entries_help_line_and_footer(
    engine: Any,
) -> None:
    app = ExtraApp(MemoryService(engine), start="library", watch_store=False)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        shown(app, LibraryScreen)
        assert "1-7 Screens" in footer_text(app)
        await pilot.press("7")
        await settle(pilot)
        extra = shown(app, ExtraScreen)
        assert app.current_mode == "extra"
        assert "P Ping" in footer_text(app)
        # Its help line among every screen's, and the rule for text boxes with its key.
        await pilot.press("f1")
        await settle(pilot)
        body = help_body(app)
        assert "A screen only the registry test shows." in body
        assert "7 Extra: A screen only the registry test registers" in body
        assert "alt+1 ... alt+7" in body
        await pilot.press("escape", "1")
        await settle(pilot)
        shown(app, LibraryScreen)
        await pilot.press("alt+7")
        await settle(pilot)
        assert shown(app, ExtraScreen) is extra  # built once, shown again
        # The palette names it from another screen, and runs its command there.
        await pilot.press("1", "ctrl+p", *keys("extra"))
        await settle(pilot)
        prompts = palette_prompts(app)
        assert "Extra (7)" in prompts and "Extra: Ping (P)" in prompts, prompts
        await pilot.press(*["backspace"] * len("extra"), *keys("ping"))
        await settle(pilot)
        assert palette_prompts(app)[0] == "Extra: Ping (P)", palette_prompts(app)
        await pilot.press("enter")
        await settle(pilot)
        assert shown(app, ExtraScreen) is extra
        assert "ping from the extra screen" in [n.message for n in app._notifications]
