"""Marks on a screen's list, with the same keys wherever there is one (Library's facts, Review's
proposals): `space` marks and moves on, `v` starts a range and `v` again marks every row
between, `ctrl+a` marks every row shown, `~` inverts the marks of the rows shown, `ctrl+\\`
clears every mark. A screen keeps its marks as ids (they outlive a reload) and decides them
with `y`; this mixin only changes which are marked and redraws their mark cells."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable, Iterable
from typing import Generic, TypeVar

from textual.coordinate import Coordinate

from gno_tui.widgets.fact_table import FactTable
from screens.base import WorkbenchScreen

_Key = TypeVar("_Key", str, int)


class ListMarks(WorkbenchScreen, Generic[_Key]):
    """The marking half of a list screen; the screen names its rows' ids and its table."""

    marked: set[_Key]  # ids, kept across reloads until decided
    visual_anchor: int | None  # the row a `v` range starts from (None: no range open)
    # The anchor's id: rows that arrive between the two `v`s (another process writes) move
    # it, and the range starts where that row is now, not at its old row number.
    visual_from: object = None

    @abstractmethod
    def mark_keys(self) -> list[_Key]:
        """The screen's: the ids of the rows shown, in their order."""

    @abstractmethod
    def marks_table(self) -> FactTable:
        """The screen's: the table listing them."""

    @abstractmethod
    def _summary(self) -> None:
        """The screen's: the line under the list (says the count)."""

    def _show_mark(self, index: int) -> None:
        """Redraw row `index`'s mark cell (the first column); a screen whose cell says more
        than the mark draws it itself."""
        marked = self.mark_keys()[index] in self.marked
        table = self.marks_table()
        table.update_cell_at(Coordinate(table.shown_row(index), 0), "●" if marked else " ")

    def _remark(
        self, keys: list[_Key], indexes: Iterable[int], marks: Callable[[_Key], bool]
    ) -> None:
        """Set the mark of each row in `indexes` to `marks(its id)`, redrawing only the rows
        that changed (ctrl+a over a long list redraws what it has to)."""
        for index in indexes:
            key = keys[index]
            if marks(key) != (key in self.marked):
                self.marked ^= {key}
                self._show_mark(index)
        self._summary()

    # Rows are what the list shows (sorted, perhaps); indexes are places among the screen's
    # items (mark_keys), in the order they were loaded: the table converts between them.

    def action_mark(self) -> None:
        keys, table = self.mark_keys(), self.marks_table()
        row = table.cursor_row
        if not 0 <= row < len(keys):
            return
        index = table.item_index(row)
        self._remark(keys, range(index, index + 1), lambda key: key not in self.marked)
        table.move_cursor(row=min(row + 1, len(keys) - 1))

    def action_visual(self) -> None:
        keys, table = self.mark_keys(), self.marks_table()
        row = table.cursor_row
        if not 0 <= row < len(keys):
            return
        if self.visual_anchor is None:
            self.visual_anchor, self.visual_from = row, keys[table.item_index(row)]
            self._summary()
            return
        start = next((i for i, key in enumerate(keys) if key == self.visual_from), None)
        anchor = self.visual_anchor if start is None else table.shown_row(start)
        low, high = sorted((anchor, row))
        self.visual_anchor = self.visual_from = None
        shown = range(low, min(high, len(keys) - 1) + 1)  # the rows between, as shown
        self._remark(keys, [table.item_index(r) for r in shown], lambda _: True)

    def action_mark_all(self) -> None:
        keys = self.mark_keys()
        self._remark(keys, range(len(keys)), lambda _: True)

    def action_invert_marks(self) -> None:
        # The rows shown only: a mark on a row the filter hides stays as it is (the batch
        # lists it, last, before anything is decided).
        keys = self.mark_keys()
        self._remark(keys, range(len(keys)), lambda key: key not in self.marked)

    def action_clear_marks(self) -> None:
        shown = [index for index, key in enumerate(self.mark_keys()) if key in self.marked]
        self.marked.clear()  # those on rows not shown as well
        self.visual_anchor = self.visual_from = None  # an open range goes too
        for index in shown:
            self._show_mark(index)
        self._summary()
