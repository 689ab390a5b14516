"""Every use of Textual's private API in the workbench, one small function or class each, with
what it relies on and why Textual's public API does not serve.

Textual is pinned to the version these were written against (pyproject.toml), and
tests/ui/test_textual_private.py checks each one (the name is there, its signature, and that it
does what the workbench relies on), so an upgrade that changes one fails there, loudly, rather
than quietly slowing or breaking the workbench. Nothing else in gno_tui/ or screens/ imports a
private Textual module or touches a private name of a Textual class (the same test scans for
it). Two public methods are here too: ones the workbench overrides because Textual calls them
internally (`App.delay_update`, `Footer.bindings_changed`), which no documentation promises."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from textual import _ansi_sequences
from textual._two_way_dict import TwoWayDict
from textual.app import App
from textual.screen import Screen
from textual.widget import AwaitMount
from textual.widgets import DataTable, Footer
from textual.widgets._footer import FooterKey
from textual.widgets.data_table import RowKey

__all__ = [
    "FooterKey",
    "FooterOnBindings",
    "NoPaintHold",
    "RowsMeasured",
    "TableKey",
    "ToastGate",
    "add_key_sequences",
    "build_mode_screen",
    "mark_styles_current",
    "show_rows_in_order",
]

# -- the terminal's bytes (gno_tui/terminal_keys.py) --------------------------------------------


@dataclass(frozen=True)
class TableKey:
    """A key as an entry of Textual's key table names it: the parser makes a key event named
    `value` (as it does for Textual's own `Keys`), with no character, so nothing is typed into
    a text box."""

    value: str


def add_key_sequences(keys: Mapping[str, str]) -> None:
    """Make each terminal byte sequence of `keys` reach the app as the key it names, at once.
    Textual reads the terminal's bytes with one table, `textual._ansi_sequences.
    ANSI_SEQUENCES_KEYS`, looked up at every key, and offers no public way to add or change an
    entry (a binding acts on a key already read, too late: the bytes were read as another
    key). The table is typed as a read-only Mapping but is a module-level dict."""
    table = _ansi_sequences.ANSI_SEQUENCES_KEYS
    assert isinstance(table, dict)
    for sequence, key in keys.items():
        table[sequence] = (TableKey(key),)


# -- building screens (gno_tui/app.py) ----------------------------------------------------------


def build_mode_screen(app: App[Any], mode: str) -> AwaitMount:
    """Build the screen of `mode` (composed, mounted, laid out) without showing it. Textual
    builds a mode's screen on its first `switch_mode`, which shows it too; `App._init_mode` is
    that first step alone, and nothing public does it."""
    return app._init_mode(mode)


def mark_styles_current(app: App[Any], screen: Screen[Any]) -> None:
    """Tell Textual that `screen` is styled by the app's stylesheet as it is now. Textual counts
    the stylesheet's changes (`App._css_update_count`, and each screen keeps the count it was
    styled at) and, when a screen's count differs as it is built or shown, parses the whole
    sheet again and restyles every screen (`refresh_css`). A screen whose rules were in the
    app's sheet from the start (screens.workbench_styles) is current; nothing public says so."""
    screen._css_update_count = app._css_update_count


class NoPaintHold(App[None]):
    def delay_update(self, delay: float = 0.05) -> None:
        """Textual holds every paint for 50 ms after a screen switch (`switch_mode` calls this,
        as the palette does when it runs a command), to mask a screen still being built: that
        was most of a screen key's time. Not held here: a screen built before is whole at once,
        and one built by its key is first painted once it has mounted (Textual lays a screen
        out, and paints it, only then), so the screen before it stays on view until then, never
        a half-built one. Overriding is the only way: the switch has no option for it."""


# -- toasts (gno_tui/toast_hold.py) -------------------------------------------------------------


class ToastGate(App[None]):
    """Textual draws the toasts with `App._refresh_notifications`: every notification kept, on
    the toast rack of the screen in front, called as a notification comes or goes and as any
    screen is shown (resumed, a modal closing shows the one below). No public hook keeps them
    off a screen, or says that one is about to be drawn on: these two stand in for it."""

    def toasts_held(self) -> bool:
        """Whether nothing may be drawn on the screen in front now."""
        return False

    def release_held_toasts(self) -> None:
        """Called just before the toasts are drawn on the screen in front."""

    def _refresh_notifications(self) -> None:
        if self.toasts_held():
            return
        self.release_held_toasts()
        super()._refresh_notifications()


# -- tables (gno_tui/widgets/fact_table.py, fitted_table.py) ------------------------------------


class RowsMeasured(DataTable[object]):
    """`DataTable._update_dimensions` measures every cell of every row added (with the whole
    console's measure) for its column's content width, which only a column of automatic width
    reads. A table whose columns all have set widths can say which rows need it
    (`rows_to_measure`); Textual has no public switch for it."""

    def rows_to_measure(self, new_rows: Iterable[RowKey]) -> Iterable[RowKey]:
        """Of the rows just added, those to measure (all, unless a subclass knows better)."""
        return new_rows

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        super()._update_dimensions(self.rows_to_measure(new_rows))


def show_rows_in_order(table: DataTable[Any], keys: Iterable[RowKey]) -> None:
    """Show the rows of `table` in the order of `keys` (every row key once), their data as it
    is, as `DataTable.sort` does. `sort` orders by a function of a row's shown cells; the
    workbench orders by cells it keeps beside the table by row key (a FittedTable shows them
    cut), which such a function cannot reach. So the order is set as `sort` sets it: the row
    locations (`_row_locations`, a TwoWayDict of row key and place) and `_update_count`, which
    the table's cached row order is keyed by."""
    table._row_locations = TwoWayDict({key: place for place, key in enumerate(keys)})
    table._update_count += 1


# -- the footer (gno_tui/widgets/footer.py) -----------------------------------------------------

# FooterKey, one key of Textual's footer, is not exported by textual.widgets: the workbench's
# footer draws its keys (and its "more: ?" key, a subclass) with it, imported from here.


class FooterOnBindings(Footer):
    """`Footer.on_mount` subscribes its `bindings_changed` to the screen's bindings signal, and
    Textual's recomposes the whole footer every time (on every focus move). The override point
    is that method, which no documentation names: the workbench's footer overrides
    `screen_bindings_changed` instead."""

    def bindings_changed(self, screen: Screen[Any]) -> None:
        self.screen_bindings_changed(screen)

    def screen_bindings_changed(self, screen: Screen[Any]) -> None:
        """The screen's bindings may have changed (Footer's own answer: recompose)."""
        super().bindings_changed(screen)
