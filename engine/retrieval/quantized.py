"""The index's vectors in int8: a quarter of the memory of float32, and scored by integer dot
products, which come out the same however the rows are laid out.

Each row (a unit vector of the model's dimensions) is kept as int8 values and one float32
factor: value = round(127 x / max|x|), so the row's largest component is exactly +-127 and
none is clipped, and the factor is 1 / |values| (the values' own length). A query is
quantized the same way, and a cosine is dot(int8 row, int8 query) x row factor x query
factor: the exact cosine of the two int8 directions, so a text compared with itself scores
1. The dot product is summed in integers (exact, so the order of the sum cannot change a
bit: a fact scores the same wherever its row sits, in an index grown write by write or
built afresh), then scaled in float64.

The error against the float32 cosine is small next to the gaps ranking and dedup look at
(docs/retrieval.md, "int8 vectors"; tests/engine/test_quantized_rows.py bounds it). The
database keeps the float32 vectors; this is only the index's copy of them.

The products run in simsimd's int8 kernels (SIMD, no BLAS): numpy has no fast int8 product,
and float32 through BLAS reads four times the bytes; a scan of a 100k-fact store is bound
by those bytes, not by the arithmetic."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import cast

import numpy as np
import simsimd

from engine.retrieval.growing import GrowingArray, GrowingRows

LEVELS = 127  # int8 values run -127..127: symmetric, so a row and its negation match
# A scan of this many rows or more is split over the machine's cores (at most four): each
# thread's rows are summed exactly as one thread's, so the scores are the same bits. A 100k-row
# scan took 2.33 ms on one core here and 1.13 on two; a small one gains less than the threads
# cost to start.
THREADED_SCAN_ROWS = 20_000


def _cores() -> int:
    """The cores this process may run on (its affinity, which a container's limit sets), not
    the machine's count."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


SCAN_THREADS = max(1, min(4, _cores()))


@dataclass(frozen=True)
class QuantizedBlock:
    """Rows of int8 values and their scales: one fact's block, or any run of rows."""

    values: np.ndarray  # (rows, dims) int8
    scales: np.ndarray  # (rows,) float32: 1 / |values| of each row (0 for a row of zeros)

    def __len__(self) -> int:
        return len(self.values)

    def floats(self) -> np.ndarray:
        """The rows as float32 unit vectors (values x factor): what the products see."""
        return cast(
            np.ndarray, (self.values.astype(np.float32) * self.scales[:, None]).astype(np.float32)
        )


def quantize(block: np.ndarray) -> QuantizedBlock:
    """A float block (rows, dims) in int8, each row with its factor."""
    rows = np.asarray(block, dtype=np.float32)
    if rows.ndim == 1:
        rows = rows[None, :]
    peak = np.abs(rows).max(axis=1) if rows.shape[1] else np.zeros(len(rows), np.float32)
    step = np.where(peak > 0, peak / np.float32(LEVELS), np.float32(1))
    values = np.rint(rows / step[:, None]).clip(-LEVELS, LEVELS).astype(np.int8)
    length = np.sqrt(np.einsum("ij,ij->i", values, values, dtype=np.int64).astype(np.float64))
    scales = np.divide(1.0, length, out=np.zeros(len(rows)), where=length > 0)
    return QuantizedBlock(values, scales.astype(np.float32))


def cosines(rows: QuantizedBlock, query: np.ndarray) -> np.ndarray:
    """float32 cosine of every row with the unit vector `query` (float32)."""
    if not len(rows):
        return np.zeros(0, dtype=np.float32)
    asked = quantize(query)
    threads = SCAN_THREADS if len(rows) >= THREADED_SCAN_ROWS else 1
    dots = np.asarray(simsimd.cdist(asked.values, rows.values, metric="dot", threads=threads))[0]
    scaled = dots * rows.scales.astype(np.float64) * float(asked.scales[0])
    return cast(np.ndarray, scaled.astype(np.float32))


def cosines_many(rows: QuantizedBlock, queries: np.ndarray) -> np.ndarray:
    """float32 (len(queries), len(rows)): `cosines` of each unit vector in `queries` (float32
    rows) with every row, the same bits as `cosines` gives for each query alone."""
    if not len(rows) or not len(queries):
        return np.zeros((len(queries), len(rows)), dtype=np.float32)
    asked = quantize(queries)
    threads = SCAN_THREADS if len(rows) * len(queries) >= THREADED_SCAN_ROWS else 1
    dots = np.asarray(simsimd.cdist(asked.values, rows.values, metric="dot", threads=threads))
    dots *= rows.scales.astype(np.float64)[None, :]
    dots *= asked.scales.astype(np.float64)[:, None]
    return cast(np.ndarray, dots.astype(np.float32))


class QuantizedRows:
    """Growing int8 rows and their scales (the index's vector rows, appended as facts
    arrive)."""

    def __init__(self, width: int) -> None:
        self._values = GrowingRows(width, np.int8)
        self._scales = GrowingArray(np.float32, 1.0)

    @classmethod
    def of(cls, values: GrowingRows, scales: np.ndarray) -> QuantizedRows:
        """Rows over arrays read from the persisted index (values with room to grow)."""
        rows = cls.__new__(cls)
        rows._values, rows._scales = values, GrowingArray.of(scales.astype(np.float32))
        return rows

    @property
    def filled(self) -> int:
        return self._values.filled

    def append(self, block: QuantizedBlock) -> int:
        """Append the block's rows; the index of its first row."""
        start = self._values.append(block.values)
        self._scales.extend(block.scales)
        return start

    def view(self) -> QuantizedBlock:
        return QuantizedBlock(self._values.view(), self._scales.view())

    def take(self, indices: np.ndarray) -> QuantizedBlock:
        """The rows at `indices` (a copy)."""
        view = self.view()
        return QuantizedBlock(view.values[indices], view.scales[indices])

    def span(self, start: int, end: int) -> QuantizedBlock:
        """Rows start..end (views, not copies)."""
        view = self.view()
        return QuantizedBlock(view.values[start:end], view.scales[start:end])
