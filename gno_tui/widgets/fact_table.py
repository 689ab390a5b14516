"""A row-cursor table with the list keys of keyboard-first TUIs (j/k, g/G)."""

from __future__ import annotations

from textual.binding import Binding
from textual.widgets import DataTable


class FactTable(DataTable[object]):
    BINDINGS = [
        Binding("j", "cursor_down", "Down", show=False, id="list.down", tooltip="Next row"),
        Binding("k", "cursor_up", "Up", show=False, id="list.up", tooltip="Previous row"),
        Binding("g", "scroll_top", "Top", show=False, id="list.top", tooltip="First row"),
        Binding("G", "scroll_bottom", "Bottom", show=False, id="list.bottom", tooltip="Last row"),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id, cursor_type="row", zebra_stripes=True)
