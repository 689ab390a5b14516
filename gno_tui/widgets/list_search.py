"""Search and sort within any list of the workbench (a FactTable), the same on every screen.

Search (ctrl+f): a one-line bar under the screen opens with a box; typing moves the cursor to
the first row, from where the search began, whose whole text (every cell, uncut: a FittedTable
gives its whole cells) contains the term, caseless. Enter goes back to the list with the term
kept; n / N go to the next / previous match, wrapping, and the bar says "match 3 of 7" or that
no row contains it. Escape in the box ends the search (the bar closes).

Sort (O): a small picker of the columns shown; the rows loaded are sorted by the one chosen
(chosen again: the other way), the cursor on its row; "as loaded" gives the list's own order."""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal
from textual.screen import Screen
from textual.widgets import Input, Label, OptionList
from textual.widgets.option_list import Option

from gno_tui.widgets.fact_table import ARROWS, FactTable
from screens.modal import Modal

FIND_KEY, NEXT_KEY, PREV_KEY = "ctrl+f", "n", "N"  # as the help and the bar name them
AS_LOADED = "\x00as-loaded"  # the picker's option for the list's own order (no title is this)


def list_to_search(screen: Screen[Any]) -> FactTable | None:
    """The list the keys act on: the one with the focus; else the one a search bar was opened
    on; else the first list shown on the screen."""
    if isinstance(screen.focused, FactTable):
        return screen.focused
    for bar in screen.query(SearchBar):
        if bar.table is not None and bar.table.is_attached:
            return bar.table
    return next((t for t in screen.query(FactTable) if t.display and t.is_on_screen), None)


def step(table: FactTable, direction: int, origin: int | None = None) -> str:
    """Move the cursor to the next (1) or previous (-1) row matching the table's search term,
    wrapping; from `origin` itself when given (typing: the row the search began on may
    match). What the bar says after."""
    term = table.search_term
    matches = table.matching_rows(term)
    if not matches:
        return f"no row contains “{term}”"
    here = table.cursor_row
    if origin is not None:
        target = next((m for m in matches if m >= origin), matches[0])
    elif direction > 0:
        target = next((m for m in matches if m > here), matches[0])
    else:
        target = next((m for m in reversed(matches) if m < here), matches[-1])
    table.move_cursor(row=target)
    return f"match {matches.index(target) + 1} of {len(matches)}"


class SearchBar(Horizontal):
    """The search's line: its box and what it found. One per screen, on the list it was
    opened for."""

    DEFAULT_CSS = """
    SearchBar {
        dock: bottom; height: 1; margin-bottom: 1; background: $panel;
        & > Label { padding: 0 1; }
        & > Input { width: 30; height: 1; border: none; padding: 0; }
        & > #search-status { width: 1fr; color: $text-muted; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "end", "End search", show=False, id="search.end"),
    ]

    def __init__(self) -> None:
        super().__init__(id="list-search")
        self.table: FactTable | None = None
        self.origin = 0

    def compose(self) -> ComposeResult:
        yield Label("find")
        yield Input(placeholder="a word in a row", id="search-input")
        yield Label("", id="search-status")

    def open_on(self, table: FactTable) -> None:
        self.table, self.origin = table, table.cursor_row
        self.display = True
        box = self.query_one(Input)
        box.value = table.search_term
        box.focus()

    def say(self, status: str) -> None:
        hint = " · n / N next, previous · ctrl+f edits · escape in the box ends" if status else ""
        self.query_one("#search-status", Label).update(status + hint)

    def show(self, table: FactTable, status: str) -> None:
        """The search's state after n / N (the bar opened again if it was closed)."""
        self.table = table
        self.display = True
        self.query_one(Input).value = table.search_term
        self.say(status)

    @on(Input.Changed, "#search-input")
    def typed(self, event: Input.Changed) -> None:
        # The same as the list's term: set by open_on or show, not typed; the cursor stays.
        if self.table is None or event.value == self.table.search_term:
            return
        self.table.search_term = event.value
        self.say(step(self.table, 1, origin=self.origin) if event.value else "")

    @on(Input.Submitted, "#search-input")
    def submitted(self) -> None:
        if self.table is not None:
            self.table.focus()
        if not self.query_one(Input).value:
            self.display = False

    def action_end(self) -> None:
        if self.table is not None:
            self.table.search_term = ""
            self.table.focus()
        self.display = False


def bar_of(screen: Screen[Any]) -> SearchBar:
    """The screen's search bar, mounted the first time it is asked for."""
    bars = screen.query(SearchBar)
    if bars:
        return bars.first()
    bar = SearchBar()
    screen.mount(bar)
    return bar


def open_search(screen: Screen[Any]) -> None:
    table = list_to_search(screen)
    if table is None:
        screen.notify("No list here to search.", severity="warning")
        return
    bar = bar_of(screen)
    screen.call_after_refresh(bar.open_on, table)  # once mounted (the first time)


def find_again(screen: Screen[Any], direction: int) -> None:
    table = list_to_search(screen)
    if table is None:
        return
    if not table.search_term:
        screen.notify(f"Nothing to find yet: {FIND_KEY} opens the search.", severity="warning")
        return
    status = step(table, direction)
    bar = bar_of(screen)
    screen.call_after_refresh(bar.show, table, status)  # once mounted (the first time)


class SortPicker(Modal[tuple[str, bool] | None]):
    """The columns shown; enter sorts by the one highlighted (the sorted one: the other way)."""

    STYLES = """
    SortPicker {
        #sort-box { width: 48; }
        #sort-options { height: auto; max-height: 16; margin-top: 1; }
        #sort-keys { color: $text-muted; margin-top: 1; }
    }
    """
    BOX_ID = "sort-box"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "close", "Cancel", id="sort.cancel", tooltip="Keep the order"),
    ]

    def __init__(self, titles: list[str], current: tuple[str, bool] | None) -> None:
        super().__init__()
        self.titles, self.current = titles, current

    def box_content(self) -> ComposeResult:
        sorted_title, descending = self.current or ("", False)
        options = [Option("as loaded (the list's own order)", id=AS_LOADED)]
        for title in self.titles:
            now = f"  {ARROWS[descending].strip()} now, again: the other way"
            options.append(Option(title + (now if title == sorted_title else ""), id=title))
        yield Label("Sort the rows loaded by:")
        yield OptionList(*options, id="sort-options")
        yield Label("enter sorts · escape keeps the order", id="sort-keys")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        chosen = self.current[0] if self.current else AS_LOADED
        options.highlighted = options.get_option_index(chosen) if chosen in self.titles else 0
        options.focus()

    @on(OptionList.OptionSelected, "#sort-options")
    def chosen(self, event: OptionList.OptionSelected) -> None:
        title = event.option.id or AS_LOADED
        if title == AS_LOADED:
            self.dismiss(("", False))
            return
        again = self.current is not None and self.current[0] == title
        self.dismiss((title, not self.current[1] if again and self.current else False))


def choose_sort(screen: Screen[Any]) -> None:
    table = list_to_search(screen)
    if table is None or not table.sort_titles():
        screen.notify("No list here to sort.", severity="warning")
        return

    def sort(answer: tuple[str, bool] | None) -> None:
        if answer is None:
            return
        title, descending = answer
        table.sort_rows((title, descending) if title else None)
        way = f"by {title}{ARROWS[descending]}" if title else "as loaded"
        screen.notify(f"Sorted {way} ({table.row_count} rows loaded)")
        table.focus()

    screen.app.push_screen(SortPicker(table.sort_titles(), table.sort_by), sort)
