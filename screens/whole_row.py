"""The "whole text" key (W): the highlighted row of a list with every field whole, in a box
that scrolls. A column narrower than its text cuts it, and a column left out for the width is
not shown at all: this is where a person reads what the row says in full."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.css.query import NoMatches
from textual.screen import Screen
from textual.widgets import Label, Static

from gno_tui.render.distinct import plain
from gno_tui.widgets.fact_table import FactTable
from gno_tui.workbench_commands import VIEW, WorkbenchCommand
from screens.modal import Modal

KEY = "W"  # the same key on every screen that has it (whole_text_command)


def whole_fields(fields: Sequence[tuple[str, object]]) -> Table:
    """`name  value` rows, the values wrapped in their own column; empty fields left out."""
    grid = Table.grid(padding=(0, 1), expand=True)
    grid.add_column(style="bold cyan", justify="right", no_wrap=True)
    grid.add_column(ratio=1, overflow="fold")
    for title, value in fields:
        if not plain(value).strip():
            continue
        grid.add_row(title.strip() or "mark", value if isinstance(value, Text) else str(value))
    return grid


class WholeRow(Modal[None]):
    STYLES = """
    WholeRow {
        #whole-box { width: 90%; max-height: 90%; padding: 0 1; }
        #whole-title { text-style: bold; color: $primary; }
        #whole-scroll { height: auto; max-height: 100%; }
    }
    """
    BOX_ID = "whole-box"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(f"escape,q,{KEY}", "close", "Close", id="whole.close", tooltip="Back to the list"),
    ]

    def __init__(self, title: str, fields: Sequence[tuple[str, object]]) -> None:
        super().__init__()
        self.title_text = title
        self.fields = list(fields)

    def box_content(self) -> ComposeResult:
        yield Label(self.title_text, id="whole-title")
        with VerticalScroll(id="whole-scroll"):
            yield Static(whole_fields(self.fields), id="whole-body")

    def on_mount(self) -> None:
        self.query_one("#whole-scroll").focus()


def show_whole_row(screen: Screen[Any], table: FactTable | None) -> None:
    """Open the whole text of `table`'s highlighted row over `screen`."""
    if table is None or not 0 <= table.cursor_row < table.row_count:
        screen.notify("No row is highlighted.", severity="warning")
        return
    row = table.cursor_row
    title = f"Row {row + 1} of {table.row_count}, whole ({KEY} or escape closes)"
    screen.app.push_screen(WholeRow(title, table.row_fields(row)))


def list_in_focus(screen: Screen[Any], default: str) -> FactTable | None:
    """The list the key acts on: the one with the focus, else the screen's main one."""
    focused = screen.focused
    if isinstance(focused, FactTable):
        return focused
    try:
        return screen.query_one(default, FactTable)
    except NoMatches:
        return None


def whole_text_command(screen: str, what: str) -> WorkbenchCommand:
    """The key as a command of `screen` (a binding, a palette entry and a help line)."""
    return WorkbenchCommand(
        f"{screen}.whole",
        KEY,
        "whole_text",
        "Whole text",
        f"The highlighted {what} in full: every field, uncut, in a box that scrolls",
        rank=VIEW,
    )
