"""Arrays that grow as facts arrive, for the incremental index: appends cost amortised O(1)
(capacity doubles), and readers get numpy views, never a copy per query."""

from __future__ import annotations

import numpy as np


class Postings:
    """A growing posting list: positions and a per-posting value, appended as facts arrive and
    read as numpy arrays (converted once per change, not once per query)."""

    __slots__ = ("_ids", "_pending_ids", "_pending_values", "_values", "live")

    def __init__(self, dtype: type) -> None:
        self._ids = np.zeros(0, dtype=np.int64)
        self._values: np.ndarray = np.zeros(0, dtype=dtype)
        self._pending_ids: list[int] = []
        self._pending_values: list[float] = []
        self.live = 0  # postings of facts still in the index: the document frequency

    @classmethod
    def of(cls, ids: np.ndarray, values: np.ndarray, live: int) -> Postings:
        """Postings holding these arrays (read from the persisted index): no empty arrays are
        made first, which for the ~30k lists of a 10k-fact store was a tenth of its load."""
        postings = cls.__new__(cls)
        postings._ids, postings._values = ids, values
        postings._pending_ids, postings._pending_values = [], []
        postings.live = live
        return postings

    def append(self, position: int, value: float) -> None:
        self._pending_ids.append(position)
        self._pending_values.append(value)

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        if self._pending_ids:
            self._ids = np.concatenate([self._ids, np.asarray(self._pending_ids, np.int64)])
            self._values = np.concatenate(
                [self._values, np.asarray(self._pending_values, self._values.dtype)]
            )
            self._pending_ids, self._pending_values = [], []
        return self._ids, self._values


class GrowingRows:
    """A 2-D float32 array that rows are appended to; `view()` is the filled part."""

    def __init__(self, width: int, dtype: type = np.float32) -> None:
        self._data: np.ndarray = np.zeros((16, width), dtype=dtype)
        self.filled = 0

    @classmethod
    def of(cls, block: np.ndarray) -> GrowingRows:
        """Rows holding `block` itself, not a copy (the persisted index's vectors, tens of MB
        read once per process); the first append after it copies into a larger array."""
        rows = cls(block.shape[1], block.dtype.type)
        rows._data, rows.filled = block, len(block)
        return rows

    def append(self, block: np.ndarray) -> int:
        """Append `block`'s rows; the index of its first row."""
        start = self.filled
        end = start + len(block)
        if end > len(self._data):
            grown = np.zeros((max(end, 2 * len(self._data)), self._data.shape[1]), self._data.dtype)
            grown[:start] = self._data[:start]
            self._data = grown
        self._data[start:end] = block
        self.filled = end
        return start

    def view(self) -> np.ndarray:
        return self._data[: self.filled]


class GrowingArray:
    """A 1-D array that values are appended to or set in place; `view()` is the filled part."""

    def __init__(self, dtype: type, fill: object = 0) -> None:
        self._fill = fill
        self._data: np.ndarray = np.full(16, fill, dtype=dtype)
        self.filled = 0

    @classmethod
    def of(cls, values: np.ndarray) -> GrowingArray:
        """An array holding `values` (room to grow after them)."""
        grown = cls(values.dtype.type)
        grown._data = np.concatenate([values, np.zeros(max(16, len(values)), values.dtype)])
        grown.filled = len(values)
        return grown

    def append(self, value: object) -> int:
        if self.filled == len(self._data):
            grown = np.full(2 * len(self._data), self._fill, dtype=self._data.dtype)
            grown[: self.filled] = self._data
            self._data = grown
        self._data[self.filled] = value
        self.filled += 1
        return self.filled - 1

    def extend(self, values: np.ndarray) -> None:
        """Append every value of `values` at once (a block's row scales)."""
        end = self.filled + len(values)
        if end > len(self._data):
            grown = np.full(max(end, 2 * len(self._data)), self._fill, dtype=self._data.dtype)
            grown[: self.filled] = self._data[: self.filled]
            self._data = grown
        self._data[self.filled : end] = values
        self.filled = end

    def __setitem__(self, index: int, value: object) -> None:
        self._data[index] = value

    def view(self) -> np.ndarray:
        return self._data[: self.filled]
