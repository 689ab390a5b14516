"""A FactTable whose columns are chosen for the width it has: each column has a rank, and
when they do not all fit the lowest ranks are left out (the detail pane shows every field).
One column may be flexible: it takes the room that is left, between its minimum and its width.

The table keeps every row's full cells, so a resize (or hiding the detail pane) refits the
columns without asking the screen to load its rows again."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from textual import events
from textual.coordinate import Coordinate
from textual.widgets.data_table import CellType, ColumnKey, RowKey

from gno_tui.widgets.fact_table import FactTable


@dataclass(frozen=True)
class Column:
    title: str  # also its key
    width: int
    rank: int  # 0 is kept first; a higher rank is left out first
    min_width: int | None = None  # set on the one flexible column


def fit(columns: Sequence[Column], room: int, padding: int = 1) -> dict[int, int]:
    """Which columns fit in `room` cells (each takes its width plus `padding` on both sides),
    as index -> width, chosen by rank; the best-ranked column always stays. A column that does
    not fit is left out and narrower ones of a lower rank may take the room, unless a column
    is flexible: then the room left is its to grow into."""
    flexible = any(column.min_width is not None for column in columns)
    chosen: dict[int, int] = {}
    used = 0
    for index in sorted(range(len(columns)), key=lambda i: columns[i].rank):
        column = columns[index]
        need = (column.min_width or column.width) + 2 * padding
        if chosen and used + need > room:
            if flexible:
                break
            continue
        chosen[index] = column.min_width or column.width
        used += need
    for index, width in chosen.items():  # what is left goes to the flexible column
        column = columns[index]
        if column.min_width is not None:
            chosen[index] = min(column.width, width + max(room - used, 0))
    return dict(sorted(chosen.items()))


class FittedTable(FactTable):
    def __init__(self, columns: Sequence[Column], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.spec = tuple(columns)
        self.widths: dict[int, int] = {i: c.width for i, c in enumerate(self.spec)}
        self.full: dict[RowKey, list[Any]] = {}  # every row's cells, for every column

    def on_mount(self) -> None:
        self._add_columns()

    def _add_columns(self) -> None:
        for index, width in self.widths.items():
            title = self.spec[index].title
            self.add_column(title, width=width, key=title)

    def shown_titles(self) -> list[str]:
        return [self.spec[index].title for index in self.widths]

    # -- rows: the screen gives every cell; the table shows those of the fitting columns ---

    def add_row(
        self,
        *cells: CellType,
        height: int | None = 1,
        key: str | None = None,
        label: Any = None,
    ) -> RowKey:
        shown = [cells[index] for index in self.widths if index < len(cells)]
        row_key = super().add_row(*shown, height=height, key=key, label=label)
        self.full[row_key] = list(cells)
        return row_key

    def _update_dimensions(self, new_rows: Iterable[RowKey]) -> None:
        """Textual measures every cell of every new row for its column's content width, which
        only a column of automatic width reads; every column here has the width `fit` gave
        it. Measuring the 200 rows of a page (on each keystroke in the Library's filter) was
        most of the page's load: only rows with a label or an automatic height need it."""
        needed = [
            key
            for key in new_rows
            if (row := self.rows.get(key)) is not None
            and (row.auto_height or row.label is not None)
        ]
        super()._update_dimensions(needed)

    def clear(self, columns: bool = False) -> FittedTable:
        self.full.clear()
        super().clear(columns)
        return self

    def update_cell(
        self,
        row_key: RowKey | str,
        column_key: ColumnKey | str,
        value: CellType,
        *,
        update_width: bool = False,
    ) -> None:
        title = column_key.value if isinstance(column_key, ColumnKey) else column_key
        index = next(i for i, c in enumerate(self.spec) if c.title == title)
        cells = self.full.get(RowKey(row_key) if isinstance(row_key, str) else row_key)
        if cells is not None and index < len(cells):
            cells[index] = value
        if index in self.widths:
            super().update_cell(row_key, column_key, value, update_width=update_width)

    def update_cell_at(
        self, coordinate: Coordinate, value: CellType, *, update_width: bool = False
    ) -> None:
        title = self.shown_titles()[coordinate.column]
        row_key = self.coordinate_to_cell_key(coordinate).row_key
        self.update_cell(row_key, title, value, update_width=update_width)

    def full_row_at(self, index: int) -> list[Any]:
        """Every cell of the row at `index`, shown or not, in the order of the columns given."""
        return list(self.full[self.coordinate_to_cell_key(Coordinate(index, 0)).row_key])

    def full_row(self, key: str) -> list[Any]:
        return list(self.full[RowKey(key)])

    # -- fitting ---------------------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        self.refit()

    def refit(self) -> None:
        # Room for the vertical scrollbar whether it shows or not: it comes and goes with the
        # rows, and the columns should not then be chosen again.
        room = self.content_region.width - self.styles.scrollbar_size_vertical
        if room <= 0:
            return
        widths = fit(self.spec, room, self.cell_padding)
        if widths == self.widths:
            return
        rows = [(key, self.full[key]) for key in (row.key for row in self.ordered_rows)]
        cursor = self.cursor_row
        self.widths = widths
        super().clear(columns=True)
        self.full.clear()
        self._add_columns()
        for key, cells in rows:
            self.add_row(*cells, key=key.value)
        if self.row_count:
            self.move_cursor(row=min(max(cursor, 0), self.row_count - 1), animate=False)
