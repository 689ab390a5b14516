"""Textual's private API, as the workbench uses it (gno_tui/textual_private.py): each name is
there, with the signature relied on, and does what the workbench relies on. Textual is
pinned (pyproject.toml); an upgrade that changes any of these fails here, loudly, instead of
quietly slowing or breaking the workbench. And nothing outside gno_tui/textual_private.py
reaches into Textual's private modules or names.

Tests themselves may use private names to look (tests/pilot_helpers.py, the snapshot and
footer tests read `_compositor`, `_notifications`, `_timers`; some import
`textual._xterm_parser` or `textual.widgets._toast`): a change there fails the test that looks,
never the workbench."""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pilot_helpers import settle, workbench
from textual import _ansi_sequences, _xterm_parser, events
from textual._two_way_dict import TwoWayDict
from textual.app import App, ComposeResult
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Input
from textual.widgets._footer import FooterKey
from textual.widgets._toast import Toast
from textual.widgets.data_table import RowKey

from gno_tui import textual_private
from gno_tui.textual_private import (
    FooterOnBindings,
    NoPaintHold,
    RowsMeasured,
    ToastGate,
    add_key_sequences,
    build_mode_screen,
    mark_styles_current,
    show_rows_in_order,
)
from gno_tui.widgets.fitted_table import FittedTable
from screens.library import LibraryScreen
from screens.review import ReviewScreen

ROOT = Path(__file__).resolve().parents[2]
CONFINED = ROOT / "gno_tui" / "textual_private.py"


def parameters(function: Any) -> list[str]:
    return list(inspect.signature(function).parameters)


# -- nothing else reaches in ------------------------------------------------------------------


def ui_modules() -> list[tuple[Path, ast.Module]]:
    """Every module of gno_tui/ and screens/ that imports Textual, parsed."""
    found = []
    for path in sorted([*(ROOT / "gno_tui").rglob("*.py"), *(ROOT / "screens").rglob("*.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(module.split(".")[0] == "textual" for module in imported(tree)):
            found.append((path, tree))
    return found


def imported(tree: ast.Module) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module)
    return names


def textual_private_names(modules: list[Any]) -> set[str]:
    """The private names (`_x`, not dunder) of every Textual class a class of `modules` derives
    from: its class attributes and methods, and the attributes its code sets on `self`."""
    textual_bases = {
        base
        for module in modules
        for value in vars(module).values()
        if inspect.isclass(value) and value.__module__ == module.__name__
        for base in value.__mro__
        if base.__module__.split(".")[0] == "textual"
    }
    names: set[str] = set()
    for base in textual_bases:
        names |= {name for name in vars(base) if name.startswith("_")}
        for node in ast.walk(ast.parse(textwrap.dedent(inspect.getsource(base)))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "self"
                and node.attr.startswith("_")
            ):
                names.add(node.attr)
    return {name for name in names if not name.startswith("__")}


def test_only_textual_private_reaches_into_textual_private_api() -> None:
    """No other module imports a private Textual module, or uses (or defines, overriding it
    unknowingly) a private name of a Textual class the workbench derives from."""
    found = ui_modules()
    modules = [
        importlib.import_module(
            ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
        )
        for path, _ in found
    ]
    private = textual_private_names(modules)
    assert {"_init_mode", "_update_dimensions", "_row_locations"} <= private  # the scan sees
    offending = []
    for path, tree in found:
        if path == CONFINED:
            continue
        where = path.relative_to(ROOT)
        for module in imported(tree):
            if module.split(".")[0] == "textual" and any(
                p.startswith("_") for p in module.split(".")
            ):
                offending.append(f"{where}: imports {module}")
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr in private:
                offending.append(f"{where}:{node.lineno} uses {node.attr}")
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name in private:
                offending.append(f"{where}:{node.lineno} defines {node.name}")
    assert not offending, "\n".join(offending)


# -- the terminal's key table ------------------------------------------------------------------


def test_the_key_table_is_the_parsers_and_takes_new_sequences() -> None:
    table = _ansi_sequences.ANSI_SEQUENCES_KEYS
    assert isinstance(table, dict)
    assert _xterm_parser.ANSI_SEQUENCES_KEYS is table  # the parser reads this very dict
    sequence = "\x1b`"  # alt+` as a terminal sends it: mapped for this test, then not again
    assert sequence not in table
    try:
        add_key_sequences({sequence: "f24"})
        parsed = [
            (token.key, token.character)
            for token in _xterm_parser.XTermParser().feed(sequence)
            if isinstance(token, events.Key)
        ]
        assert parsed == [("f24", None)]  # at once (no escape delay), typing nothing
    finally:
        table.pop(sequence, None)


# -- building screens ------------------------------------------------------------------------


async def test_init_mode_builds_a_modes_screen_without_showing_it(engine: Any) -> None:
    assert parameters(App._init_mode) == ["self", "mode"]
    async with workbench(engine, "library") as (app, pilot):
        build_mode_screen(app, "review")
        await settle(pilot)
        review = app.built_screen("review")
        assert isinstance(review, ReviewScreen) and review.is_mounted
        assert app.current_mode == "library" and isinstance(app.screen, LibraryScreen)
        await pilot.press("3")
        await settle(pilot)
        assert app.screen is review  # shown, not built again


class TwoModes(App[None]):
    """Counts the stylesheet refreshes a mode's first showing costs."""

    def __init__(self, *, mark: bool) -> None:
        super().__init__()
        self.mark = mark
        self.restyles = 0
        self.add_mode("first", Screen)
        self.add_mode("second", self.second)

    def second(self) -> Screen[Any]:
        screen: Screen[Any] = Screen()
        if self.mark:
            mark_styles_current(self, screen)
        return screen

    def refresh_css(self, animate: bool = True) -> None:
        self.restyles += 1
        super().refresh_css(animate)

    def on_mount(self) -> None:
        self.switch_mode("first")


@pytest.mark.parametrize(("mark", "restyled"), [(True, False), (False, True)])
async def test_a_screen_marked_current_is_not_restyled_whole(mark: bool, restyled: bool) -> None:
    """Textual compares the screen's stylesheet count with the app's as it builds and shows a
    mode's screen: marked current, the whole sheet is not parsed and applied again."""
    app = TwoModes(mark=mark)
    async with app.run_test() as pilot:
        await pilot.pause()
        assert isinstance(app._css_update_count, int)
        before = app.restyles
        await app.switch_mode("second")
        await pilot.pause()
        assert isinstance(app.screen._css_update_count, int)
        assert (app.restyles > before) is restyled


class PaintHolds(App[None]):
    def __init__(self) -> None:
        super().__init__()
        self.holds = 0
        self.add_mode("first", Screen)
        self.add_mode("second", Screen)

    def delay_update(self, delay: float = 0.05) -> None:
        self.holds += 1
        super().delay_update(delay)


async def test_switch_mode_holds_paint_through_delay_update() -> None:
    """What NoPaintHold overrides: switch_mode asks delay_update to hold the paint."""
    assert parameters(App.delay_update) == ["self", "delay"]
    assert "delay_update" in NoPaintHold.__dict__
    app = PaintHolds()
    async with app.run_test() as pilot:
        await app.switch_mode("first")
        before = app.holds
        await app.switch_mode("second")
        await pilot.pause()
        assert app.holds == before + 1


# -- toasts ------------------------------------------------------------------------------------


class Gate(ToastGate):
    def __init__(self) -> None:
        super().__init__()
        self.held = False
        self.released = 0

    def toasts_held(self) -> bool:
        return self.held

    def release_held_toasts(self) -> None:
        self.released += 1


def toasts(screen: Screen[Any]) -> list[str]:
    return [str(toast._notification.message) for toast in screen.query(Toast)]


async def test_toasts_are_drawn_through_refresh_notifications_as_a_screen_is_shown() -> None:
    assert parameters(App._refresh_notifications) == ["self"]
    app = Gate()
    async with app.run_test(notifications=True) as pilot:
        # Shown (a modal closing shows the one below): the toasts are drawn there.
        released = app.released
        app.push_screen(Screen())
        await pilot.pause()
        app.pop_screen()
        await pilot.pause()
        assert app.released >= released + 2
        # Held: a notification is kept, and nothing is drawn on the screen in front.
        app.held = True
        app.notify("kept for later")
        await pilot.pause()
        assert toasts(app.screen) == []
        # Drawn when the screen is shown again.
        app.held = False
        app.push_screen(Screen())
        await pilot.pause()
        await pilot.pause()
        assert toasts(app.screen) == ["kept for later"]


# -- tables ------------------------------------------------------------------------------------


class Measured(RowsMeasured):
    def __init__(self, *, measure: bool) -> None:
        super().__init__()
        self.measure = measure

    def rows_to_measure(self, new_rows: Any) -> list[RowKey]:
        return list(new_rows) if self.measure else []


class OneTable(App[None]):
    def __init__(self, table: DataTable[Any]) -> None:
        super().__init__()
        self.table = table

    def compose(self) -> ComposeResult:
        yield self.table


@pytest.mark.parametrize("measure", [True, False])
async def test_update_dimensions_measures_only_the_rows_it_is_given(measure: bool) -> None:
    assert parameters(DataTable._update_dimensions) == ["self", "new_rows"]
    assert FittedTable._update_dimensions is RowsMeasured._update_dimensions
    table = Measured(measure=measure)
    async with OneTable(table).run_test() as pilot:
        table.add_column("c", key="c")  # automatic width: measured from the cells
        table.add_row("a cell twenty wide..")
        await pilot.pause()
        width = table.columns[table.ordered_columns[0].key].content_width
        assert (width == 20) is measure


async def test_rows_take_the_order_given_as_datatable_sort_sets_it() -> None:
    table: DataTable[Any] = DataTable()
    async with OneTable(table).run_test() as pilot:
        table.add_column("c")
        for key in "abc":
            table.add_row(key, key=key)
        await pilot.pause()
        table.sort(key=lambda cells: cells)  # Textual's own: sets the same two things
        assert isinstance(table._row_locations, TwoWayDict)
        assert isinstance(table._update_count, int)
        show_rows_in_order(table, [RowKey("c"), RowKey("a"), RowKey("b")])
        assert [row.key.value for row in table.ordered_rows] == ["c", "a", "b"]
        assert [table.get_row_at(i)[0] for i in range(3)] == ["c", "a", "b"]
        assert table.get_row_index("a") == 1


# -- the footer --------------------------------------------------------------------------------


def test_footer_keys_are_built_as_the_workbench_builds_them() -> None:
    assert textual_private.FooterKey is FooterKey
    assert parameters(FooterKey.__init__) == [
        "self",
        *("key", "key_display", "description", "action", "disabled", "tooltip", "classes"),
    ]
    assert {"footer-key--key", "footer-key--description"} <= FooterKey.COMPONENT_CLASSES
    key = FooterKey("f1", "F1", "Help", "app.help")
    assert (key.key, key.key_display, key.description, key.action) == (
        "f1",
        "F1",
        "Help",
        "app.help",
    )
    assert isinstance(FooterKey.__dict__["compact"], Reactive)


class Told(FooterOnBindings):
    told = 0

    def screen_bindings_changed(self, screen: Screen[Any]) -> None:
        Told.told += 1
        super().screen_bindings_changed(screen)


class WithFooter(App[None]):
    def compose(self) -> ComposeResult:
        yield Input(id="one")
        yield Input(id="two")
        yield Told()


async def test_the_footer_hears_of_every_change_of_bindings_through_bindings_changed() -> None:
    assert parameters(Footer.bindings_changed) == ["self", "screen"]
    Told.told = 0
    app = WithFooter()
    async with app.run_test() as pilot:
        await pilot.pause()
        mounted = Told.told
        assert mounted >= 1
        await pilot.press("tab")  # a focus move changes the bindings
        await pilot.pause()
        assert Told.told > mounted
        assert list(app.query(FooterKey))  # and Footer's own answer (recompose) still runs
