"""A row-cursor table with the list keys of keyboard-first TUIs (j/k, g/G), which lists a
screen's items in order: the item under the cursor, and a refill that keeps the cursor's place."""

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

    def refill(self, rows: Iterable[tuple[Iterable[object], str | None]]) -> None:
        """Clear the table and add `rows` (their cells and key), keeping the cursor on the row
        number it was on (the last row when there are fewer now)."""
        keep = self.cursor_row
        self.clear()
        for cells, key in rows:
            self.add_row(*cells, key=key)
        if self.row_count:
            self.move_cursor(row=min(max(keep, 0), self.row_count - 1))
