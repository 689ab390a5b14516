"""A row-cursor table with the list keys of keyboard-first TUIs (j/k, g/G), which lists a
screen's items in order: the item under the cursor, and a refill that keeps the cursor on its
item (by key), wherever the item moved."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

from textual.binding import Binding
from textual.widgets import DataTable

_Item = TypeVar("_Item")


class FactTable(DataTable[object]):
    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False, id="list.down", tooltip="Next row"),
        Binding("k", "cursor_up", "Up", show=False, id="list.up", tooltip="Previous row"),
        Binding("g", "scroll_top", "Top", show=False, id="list.top", tooltip="First row"),
        Binding("G", "scroll_bottom", "Bottom", show=False, id="list.bottom", tooltip="Last row"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)

    def at_cursor(self, items: Sequence[_Item]) -> _Item | None:
        """The item under the cursor, of `items` as the table lists them; None when the table
        lists none of them there."""
        row = self.cursor_row
        return items[row] if 0 <= row < len(items) else None

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
            self.add_row(*cells, key=row_key)
        self.place_cursor(key, keep)
