"""Runs of consecutive positions, expanded without a Python step per run."""

from __future__ import annotations

import numpy as np


def expand_runs(starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Every position of the runs [starts[i], starts[i] + counts[i]), run after run: what
    concatenating one arange per run gives, in one pass."""
    counts = np.asarray(counts, dtype=np.int64)
    offsets = np.cumsum(counts) - counts
    total = int(counts.sum())
    return np.repeat(np.asarray(starts, np.int64) - offsets, counts) + np.arange(
        total, dtype=np.int64
    )
