"""Where a recall's scratch arrays come from: the C heap, not a fresh mapping each time.

A hybrid recall over a million facts makes a dozen temporary arrays of a few MB (a cosine
per row, masks, the feedback bounds). glibc serves a block that large from a mapping of its
own and unmaps it when freed, so the next recall faults in and zeroes every page again.
glibc raises that threshold by itself once such a block is freed, but only up to what it
has seen freed; a process that read its index from disk in one go (engine/retrieval/
persisted.py) had freed few, and paid thousands of page faults a recall. So the index sets
it once: blocks up to 32 MiB come from the heap and are reused, and up to 64 MiB of free
heap top is kept rather than handed back. Peak memory is unchanged: the blocks are reused,
not added. docs/retrieval.md has the figures. Outside glibc this does nothing."""

from __future__ import annotations

import ctypes
import sys

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
SCRATCH_FROM_HEAP = 32 << 20
KEEP_FREE_TOP = 64 << 20
_state = {"done": False}


def keep_scratch_in_heap() -> None:
    """Raise glibc's mmap and trim thresholds, once per process."""
    if _state["done"] or not sys.platform.startswith("linux"):
        return
    _state["done"] = True
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # a C library without mallopt
        return
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    mallopt(M_MMAP_THRESHOLD, SCRATCH_FROM_HEAP)
    mallopt(M_TRIM_THRESHOLD, KEEP_FREE_TOP)
