"""Python's full garbage collections, moved to the moments no one is pressing keys.

A full collection (generation 2) walks every container object the collector tracks, and in the
workbench it landed on keys: 10-25 ms of a screen switch or a modal's first key, 0.1-0.15 s
before the model and the index were frozen. The workbench that has its process to itself (the
CLI's) freezes what it has loaded (it lives as long as the process), stops Python from starting
full collections on its own, and runs one itself once the person has paused, as often as Python
would have (after as many younger collections), so cyclic garbage is still freed.
"""

from __future__ import annotations

import gc
import time

# Python's own default: a full collection after this many generation-1 collections.
FULL_AFTER_YOUNGER = 10
# No key or mouse event for this long: the person has paused, a collection may run.
PAUSE_SECONDS = 0.75
# How often the app asks whether a collection is due.
CHECK_SECONDS = 0.5
# Python starts no full collection of its own once this many younger ones have run.
NEVER = 2**30


class IdleCollector:
    def __init__(self) -> None:
        self.last_input = time.monotonic()
        self.collections = 0  # full collections run here

    def take_over(self) -> None:
        """Freeze what exists now and leave full collections to `collect_if_idle`."""
        gc.freeze()
        young, older, _ = gc.get_threshold()
        gc.set_threshold(young, older, NEVER)

    def input_seen(self) -> None:
        self.last_input = time.monotonic()

    def due(self) -> bool:
        """Python would have run a full collection by now."""
        return gc.get_count()[2] >= FULL_AFTER_YOUNGER

    def collect_if_idle(self, busy: bool) -> bool:
        """One full collection if one is due, no input came for PAUSE_SECONDS and nothing
        loads (`busy`: a worker runs, whose result is about to be painted)."""
        if busy or not self.due() or time.monotonic() - self.last_input < PAUSE_SECONDS:
            return False
        gc.collect()
        self.collections += 1
        return True
