"""A row-cursor table with the list keys of keyboard-first TUIs (j/k, g/G), which lists a
screen's items in order: the item under the cursor, and a refill that keeps the cursor on its
item (by key), wherever the item moved.

A list may be sorted by a column (`sort_by`): only the order shown changes. The screen's items
stay in the order it added the rows (`item_index` maps a row shown to its item), and a refill or
rows added later are sorted the same way, so a live refresh keeps the chosen sort."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

from rich.text import Text
from textual.binding import Binding
from textual.widgets import DataTable
from textual.widgets.data_table import CellType, RowKey

from gno_tui.render.distinct import plain
from gno_tui.textual_private import show_rows_in_order

_Item = TypeVar("_Item")

ARROWS = {False: " ▲", True: " ▼"}  # a sorted column's title ends in one (ascending, descending)


def bare_title(label: object) -> str:
    """A column's title without the sort arrow."""
    title = plain(label)
    return title[:-2] if title.endswith(tuple(ARROWS.values())) else title


MARK = "●"  # a marked row's first cell starts with it (screens/list_marks.py)


def sort_key(cell: object) -> tuple[int, float, list[Any]]:
    """How a cell sorts: numbers by value, before texts; a text by its words, caseless, with
    its digit runs as numbers ("v10" after "v9"); empty cells last. A row's mark (● before
    its text) is not part of it: marking a row does not move it."""
    text = plain(cell).strip().removeprefix(MARK).strip()
    if not text:
        return (2, 0.0, [])
    try:
        return (0, float(text.rstrip("%×x")), [])
    except ValueError:
        parts = re.split(r"(\d+)", text.casefold())
        return (1, 0.0, [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in parts])


class FactTable(DataTable[object]):
    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False, id="list.down", tooltip="Next row"),
        Binding("k", "cursor_up", "Up", show=False, id="list.up", tooltip="Previous row"),
        Binding("g", "scroll_top", "Top", show=False, id="list.top", tooltip="First row"),
        Binding("G", "scroll_bottom", "Bottom", show=False, id="list.bottom", tooltip="Last row"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
        self.sort_by: tuple[str, bool] | None = None  # (column title, descending); None: as added
        self.resort_due = False  # rows were added one by one: sorted once they are all in
        self.search_term = ""  # what n / N look for (gno_tui.widgets.list_search)

    def at_cursor(self, items: Sequence[_Item]) -> _Item | None:
        """The item under the cursor, of `items` in the order the table was given them; None
        when the table lists none of them there."""
        row = self.item_index(self.cursor_row)
        return items[row] if 0 <= row < len(items) else None

    def shown_row(self, item: int) -> int:
        """Where the item added `item`-th is shown: `item` itself unless the list is sorted
        (item_index's inverse)."""
        if self.sort_by is None or not 0 <= item < self.row_count:
            return item
        return self.get_row_index(list(self.rows)[item])

    def item_index(self, row: int) -> int:
        """The place, among the rows in the order they were added (the screen's items), of the
        row shown at `row`: `row` itself unless the list is sorted."""
        if self.sort_by is None or not 0 <= row < self.row_count:
            return row
        key = self.ordered_rows[row].key
        return next(i for i, added in enumerate(self.rows) if added == key)

    # -- sorting: the rows loaded, by one column -------------------------------------------

    def sort_titles(self) -> list[str]:
        """The columns a person can sort by: those shown, by title."""
        return [t for t in (bare_title(c.label) for c in self.ordered_columns) if t.strip()]

    def sort_cell(self, key: RowKey, title: str) -> object:
        """The cell of row `key` in the column `title` (a FittedTable: the whole cell)."""
        for index, column in enumerate(self.ordered_columns):
            if bare_title(column.label) == title:
                row = self.get_row(key)
                return row[index] if index < len(row) else ""
        return ""

    def sort_rows(self, sort_by: tuple[str, bool] | None) -> None:
        """Show the rows sorted by `sort_by` (None: as they were added), the cursor on its row."""
        self.sort_by = sort_by
        self.apply_sort()

    def apply_sort(self, keep_cursor: bool = True) -> None:
        self.resort_due = False
        key = self.key_at_cursor() if keep_cursor else None
        added = list(self.rows)
        if self.sort_by is not None:
            title, descending = self.sort_by
            # Stable, also reversed: rows that tie keep the order they were added in.
            added.sort(key=lambda k: sort_key(self.sort_cell(k, title)), reverse=descending)
        # As DataTable.sort does: only the rows' places change, not their data.
        show_rows_in_order(self, added)
        self._show_arrow()
        self.refresh()
        if key is not None:
            self.place_cursor(key, self.cursor_row)

    def _show_arrow(self) -> None:
        for column in self.ordered_columns:
            title = bare_title(column.label)
            if self.sort_by is not None and title == self.sort_by[0]:
                title += ARROWS[self.sort_by[1]]
            if plain(column.label) != title:
                column.label = Text(title)

    def add_row(
        self,
        *cells: CellType,
        height: int | None = 1,
        key: str | None = None,
        label: Any = None,
    ) -> RowKey:
        row_key = super().add_row(*cells, height=height, key=key, label=label)
        if self.sort_by is not None and not self.resort_due:
            # A screen adding a page row by row: sorted once, after its last row.
            self.resort_due = True
            self.call_after_refresh(self.apply_sort)
        return row_key

    # -- searching: a row's whole text -----------------------------------------------------

    def row_text(self, index: int) -> str:
        """Every cell of the row shown at `index`, whole, as one caseless text."""
        return " ".join(plain(cell) for _, cell in self.row_fields(index)).casefold()

    def matching_rows(self, term: str) -> list[int]:
        """The rows (as shown) whose whole text contains `term`, caseless."""
        wanted = term.casefold()
        return [i for i in range(self.row_count) if wanted in self.row_text(i)]

    def key_at_cursor(self) -> str | None:
        """The key of the row under the cursor (its item's identity), if it has one."""
        if not 0 <= self.cursor_row < self.row_count:
            return None
        key = self.coordinate_to_cell_key(self.cursor_coordinate).row_key.value
        return key if isinstance(key, str) else None

    def row_fields(self, index: int) -> list[tuple[str, object]]:
        """Each column's title and cell for the row at `index` (the "whole text" key shows
        them; a FittedTable gives the whole cells, of the columns left out too)."""
        titles = [str(column.label) for column in self.ordered_columns]
        return list(zip(titles, self.get_row_at(index), strict=False))

    def place_cursor(self, key: str | None, fallback: int) -> None:
        """Put the cursor on the row whose key is `key` (the same item after a refill, wherever
        it moved); on row `fallback` (clamped) when the table no longer lists it."""
        if not self.row_count:
            return
        if key is not None and key in self.rows:
            self.move_cursor(row=self.get_row_index(key))
        else:
            self.move_cursor(row=min(max(fallback, 0), self.row_count - 1))

    def refill(self, rows: Iterable[tuple[Iterable[object], str | None]]) -> None:
        """Clear the table and add `rows` (their cells and key), keeping the cursor on the item
        it was on: a refresh inserts and removes rows (another process wrote), so a row number
        would point at another item. By row number only when that item has gone."""
        keep, key = self.cursor_row, self.key_at_cursor()
        self.clear()
        for cells, row_key in rows:
            DataTable.add_row(self, *cells, key=row_key)
        if self.sort_by is not None:
            self.apply_sort(keep_cursor=False)
        self.place_cursor(key, keep)
