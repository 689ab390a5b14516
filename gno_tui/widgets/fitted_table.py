"""A FactTable whose columns are chosen for the width it has: each column has a rank, and
when they do not all fit the lowest ranks are left out (the detail pane shows every field).
A flexible column (a text) takes the room that is left; a column may be as wide as its widest
cell instead of its set width. A cell longer than its column is cut with an ellipsis, and a
flexible column's cells show where rows that share a start differ (gno_tui.render.distinct).

The table keeps every row's full cells, so a resize (or hiding the detail pane) refits the
columns without asking the screen to load its rows again, and `row_fields` gives a row's
whole text for the screens' "whole text" key (and for a search). A sort compares whole cells,
and survives a refit: the rows are loaded again in the order they were added, then sorted."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from textual import events
from textual.coordinate import Coordinate
from textual.widgets import DataTable
from textual.widgets.data_table import CellType, ColumnKey, RowKey

from gno_tui.render.distinct import distinguish, fit_cell, plain
from gno_tui.textual_private import RowsMeasured
from gno_tui.widgets.fact_table import FactTable

ROOM_LEFT = 1000  # the width of a flexible column that takes all the room that is left


@dataclass(frozen=True)
class Column:
    title: str  # also its key
    width: int  # the most it takes (a flexible column: up to this as the room allows)
    rank: int  # 0 is kept first; a higher rank is left out first
    min_width: int | None = None  # set on a flexible column: the least it takes
    # Of the room, the part a flexible column keeps before lower ranks come in: a text stays
    # readable rather than cut to its least width by a row of narrow columns.
    share: float = 0.0
    to_content: bool = False  # no wider than its widest cell (or its title)


def fit(
    columns: Sequence[Column],
    room: int,
    padding: int = 1,
    widest: Mapping[int, int] | None = None,
) -> dict[int, int]:
    """Which columns fit in `room` cells (each takes its width plus `padding` on both sides),
    as index -> width, chosen by rank; the best-ranked column always stays. A column that does
    not fit is left out and narrower ones of a lower rank may take the room, unless a flexible
    column could be wider: then the room left is the flexible columns' to grow into (by rank).
    `widest`: the widest cell of each `to_content` column."""
    widest = widest or {}

    def most(index: int) -> int:
        column = columns[index]
        if not column.to_content or index not in widest:
            return column.width
        least = max(column.min_width or 1, cell_len(column.title))
        return min(column.width, max(widest[index], least))

    def least(index: int) -> int:
        column = columns[index]
        if column.min_width is None:
            return most(index)
        return min(most(index), max(column.min_width, int(room * column.share)))

    flexible = any(column.min_width is not None for column in columns)
    by_rank = sorted(range(len(columns)), key=lambda i: columns[i].rank)
    chosen: dict[int, int] = {}
    used = 0
    for index in by_rank:
        need = least(index) + 2 * padding
        if chosen and used + need > room:
            if flexible and any(
                columns[i].min_width is not None and chosen[i] < most(i) for i in chosen
            ):
                break  # a text short of its room takes what is left, not narrower columns
            continue
        chosen[index] = least(index)
        used += need
    left = max(room - used, 0)
    for index in (i for i in by_rank if i in chosen and columns[i].min_width is not None):
        grow = min(most(index) - chosen[index], left)
        chosen[index] += grow
        left -= grow
    return dict(sorted(chosen.items()))


# FactTable first: Textual takes a widget's CSS type names (FactTable in selectors and queries)
# from the first base of each class only.
class FittedTable(FactTable, RowsMeasured):
    def __init__(self, columns: Sequence[Column], *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.spec = tuple(columns)
        self.widths: dict[int, int] = {i: c.min_width or c.width for i, c in enumerate(self.spec)}
        self.full: dict[RowKey, list[Any]] = {}  # every row's cells, for every column
        self.refit_due = False  # rows were added one by one: widths and cuts are settled later

    def on_mount(self) -> None:
        self._add_columns()

    def _add_columns(self) -> None:
        for index, width in self.widths.items():
            title = self.spec[index].title
            self.add_column(title, width=width, key=title)
        self._show_arrow()

    def shown_titles(self) -> list[str]:
        return [self.spec[index].title for index in self.widths]

    def sort_titles(self) -> list[str]:
        return [title for title in self.shown_titles() if title.strip()]

    def sort_cell(self, key: RowKey, title: str) -> object:
        index = next((i for i, c in enumerate(self.spec) if c.title == title), None)
        cells = self.full.get(key, [])
        return cells[index] if index is not None and index < len(cells) else ""

    @property
    def measured(self) -> bool:
        """Whether what is shown depends on every row (a text that shows where it differs, a
        column as wide as its cells), so a row added alone calls for a refit."""
        return any(c.min_width is not None or c.to_content for c in self.spec)

    # -- rows: the screen gives every cell; the table shows those of the fitting columns ---

    def add_row(
        self,
        *cells: CellType,
        height: int | None = 1,
        key: str | None = None,
        label: Any = None,
    ) -> RowKey:
        shown = [fit_cell(cells[i], width) for i, width in self.widths.items() if i < len(cells)]
        row_key = super().add_row(*shown, height=height, key=key, label=label)
        self.full[row_key] = list(cells)
        if self.measured and not self.refit_due:
            self.refit_due = True
            self.call_after_refresh(self.refit, force=True)
        return row_key

    def refill(self, rows: Iterable[tuple[Iterable[object], str | None]]) -> None:
        """FactTable's refill (the cursor stays on its item), with the widths and the cuts
        worked out once for all the rows, not after each."""
        keep, key = self.cursor_row, self.key_at_cursor()
        listed = [(list(cells), row_key) for cells, row_key in rows]
        self._load(listed, self._fit([cells for cells, _ in listed]))
        if self.sort_by is not None:
            self.apply_sort(keep_cursor=False)
        self.place_cursor(key, keep)

    def _load(
        self, rows: list[tuple[list[Any], str | None]], widths: dict[int, int] | None
    ) -> None:
        """Show `rows` (their full cells and key) in place of the table's rows, in columns of
        `widths` (None: as they are, the table has no width yet)."""
        if widths is not None and widths != self.widths:
            DataTable.clear(self, columns=True)
            self.widths = widths
            self._add_columns()
        else:
            DataTable.clear(self)
        self.full.clear()
        self.refit_due = False
        shown = self._shown([cells for cells, _ in rows])
        for (cells, row_key), row in zip(rows, shown, strict=True):
            self.full[DataTable.add_row(self, *row, key=row_key)] = cells

    def _shown(self, rows: list[list[Any]]) -> list[list[Any]]:
        """The cells shown for `rows`: the fitting columns', each cut to its width (a flexible
        column's showing where its rows differ)."""
        columns: list[list[Any]] = []
        for index, width in self.widths.items():
            cells = [row[index] if index < len(row) else "" for row in rows]
            if self.spec[index].min_width is not None:
                columns.append(distinguish(cells, width))
            else:
                columns.append([fit_cell(cell, width) for cell in cells])
        return [list(row) for row in zip(*columns, strict=True)] if columns else [[]] * len(rows)

    def _fit(self, rows: list[list[Any]]) -> dict[int, int] | None:
        """The widths for `rows` at the table's width; None before it has one."""
        # Room for the vertical scrollbar whether it shows or not: it comes and goes with the
        # rows, and the columns should not then be chosen again.
        room = self.content_region.width - self.styles.scrollbar_size_vertical
        if room <= 0:
            return None
        widest = {
            index: max((cell_len(plain(row[index])) for row in rows if index < len(row)), default=0)
            for index, column in enumerate(self.spec)
            if column.to_content
        }
        return fit(self.spec, room, self.cell_padding, widest)

    def rows_to_measure(self, new_rows: Iterable[RowKey]) -> list[RowKey]:
        """Textual measures every cell of every new row for its column's content width, which
        only a column of automatic width reads; every column here has the width `fit` gave
        it. Measuring the 200 rows of a page (on each keystroke in the Library's filter) was
        most of the page's load: only rows with a label or an automatic height need it."""
        return [
            key
            for key in new_rows
            if (row := self.rows.get(key)) is not None
            and (row.auto_height or row.label is not None)
        ]

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
        column = self.spec[index]
        if column.min_width is not None or column.to_content:
            self.refit(force=True)  # its width, or how the other rows' texts are cut, may change
        elif index in self.widths:
            shown = fit_cell(value, self.widths[index])
            super().update_cell(row_key, column_key, shown, update_width=update_width)

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

    def row_fields(self, index: int) -> list[tuple[str, object]]:
        """Every column's title and whole cell for the row at `index`, shown or not."""
        cells = self.full_row_at(index)
        return [(column.title, cell) for column, cell in zip(self.spec, cells, strict=False)]

    # -- fitting ---------------------------------------------------------------------------

    def on_resize(self, event: events.Resize) -> None:
        self.refit()

    def refit(self, force: bool = False) -> None:
        """Fit the columns to the table's width again (after a resize, or rows added one by
        one); the rows are shown again only when a width changed, or when `force`d."""
        self.refit_due = False
        # In the order added (the screen's items), sorted again after: see FactTable.item_index.
        rows = [(self.full[key], key.value) for key in self.rows]
        widths = self._fit([cells for cells, _ in rows])
        if not force and widths in (None, self.widths):
            return
        cursor, key = self.cursor_row, self.key_at_cursor()
        self._load(rows, widths)
        if self.sort_by is not None:
            self.apply_sort(keep_cursor=False)
        if self.row_count:
            self.place_cursor(key, cursor)
