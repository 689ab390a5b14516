"""Where a recall's scratch arrays come from: the C heap, not a fresh mapping each time.

A hybrid recall over a million facts makes a dozen temporary arrays of a few MB (a cosine
per row, masks, the feedback bounds). glibc serves a block that large from a mapping of its
own and unmaps it when freed, so the next recall faults in and zeroes every page again.
glibc raises that threshold by itself once such a block is freed, but only up to what it
has seen freed; a process that read its index from disk in one go (engine/retrieval/
persisted.py) had freed few, and paid thousands of page faults a recall. So the index sets
it once: blocks up to 32 MiB come from the heap and are reused, and up to 64 MiB of free
heap top is kept rather than handed back. Peak memory is unchanged: the blocks are reused,
not added. docs/retrieval.md has the figures. Outside glibc this does nothing.

That threshold holds for every arena, so free holes below an arena's top stay resident:
after each index copy is saved (engine/retrieval/index_saver.py) the free pages are handed
back (give_back_free_heap)."""

from __future__ import annotations

import ctypes
import sys
from typing import Any

M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
SCRATCH_FROM_HEAP = 32 << 20
KEEP_FREE_TOP = 64 << 20
_state: dict[str, Any] = {"done": False, "trim": None}


def keep_scratch_in_heap() -> None:
    """Raise glibc's mmap and trim thresholds, once per process."""
    if _state["done"] or not sys.platform.startswith("linux"):
        return
    _state["done"] = True
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # a C library without mallopt
        return
    trim = getattr(libc, "malloc_trim", None)
    if trim is not None:
        trim.argtypes, trim.restype = [ctypes.c_size_t], ctypes.c_int
        _state["trim"] = trim
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    mallopt(M_MMAP_THRESHOLD, SCRATCH_FROM_HEAP)
    mallopt(M_TRIM_THRESHOLD, KEEP_FREE_TOP)


def give_back_free_heap() -> None:
    """Hand the free pages inside the heap back to the system, keeping KEEP_FREE_TOP of free
    top for recalls (glibc's malloc_trim; a block reused after it costs a page fault a page,
    once). Called after each index copy is written, off the query's path: the copy's
    temporaries and the blocks the growing arrays left behind since the last one are free
    holes that otherwise stay resident (a reader following writers to 15k facts held 24-42
    MiB of them beside the top, run to run)."""
    trim = _state["trim"]
    if trim is not None:
        trim(KEEP_FREE_TOP)
