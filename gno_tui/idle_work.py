"""What the workbench does in the person's pauses: full garbage collections, and building the
screens ahead (gno_tui.app), so that neither lands on a key.

A full collection (generation 2) walks every container object the collector tracks, and in the
workbench it landed on keys: 10-25 ms of a screen switch or a modal's first key, 0.1-0.15 s
before the model and the index were frozen. The workbench that has its process to itself (the
CLI's) freezes what it has loaded (it lives as long as the process), stops Python from starting
full collections on its own, and runs one itself once the person has paused, as often as Python
would have (after as many younger collections), so cyclic garbage is still freed.
"""

from __future__ import annotations

import gc
import sys
import time

# Python's own default: a full collection after this many generation-1 collections.
FULL_AFTER_YOUNGER = 10
# No key or mouse event for this long: the person has paused, a collection may run.
PAUSE_SECONDS = 0.75
# How often the app asks whether a collection is due.
CHECK_SECONDS = 0.5
# Python starts no full collection of its own once this many younger ones have run.
NEVER = 2**30
# How long a thread holds the GIL while another waits for it (Python's default is 5 ms). A
# load's worker waits that long after each database call while the UI thread builds a screen:
# a 2 ms query took 60-80 ms. The CLI's workbench asks for 1 ms.
GIL_SWITCH_SECONDS = 0.001


class IdleWork:
    def __init__(self) -> None:
        self.last_input = time.monotonic()
        self.quiet_since: float | None = None  # no load and no key since then (quiet)
        # Until the screens are built ahead and frozen with the rest (gno_tui.app), a full
        # collection walks everything loaded since the start (the index, the screens): 0.1-
        # 0.2 s, which landed on the first key pressed as the first rows showed.
        self.settled = False

    def settle(self) -> None:
        """What the workbench keeps is loaded: freeze it; collections may run from now on."""
        gc.freeze()
        self.settled = True

    def take_over_process(self) -> None:
        """Freeze what exists now, leave full collections to `collect_if_idle`, and let a
        waiting thread have the GIL sooner."""
        gc.freeze()
        young, older, _ = gc.get_threshold()
        gc.set_threshold(young, older, NEVER)
        sys.setswitchinterval(GIL_SWITCH_SECONDS)

    def input_seen(self) -> None:
        self.last_input = time.monotonic()

    def quiet(self, seconds: float, busy: bool) -> bool:
        """Nothing loaded (`busy`: a worker runs) and no key came for `seconds`, as seen by
        the calls so far (the app asks on a timer)."""
        now = time.monotonic()
        if busy or now - self.last_input < seconds:
            self.quiet_since = None
            return False
        if self.quiet_since is None:
            self.quiet_since = now
        return now - self.quiet_since >= seconds

    def due(self) -> bool:
        """Python would have run a full collection by now."""
        return gc.get_count()[2] >= FULL_AFTER_YOUNGER

    def collect_if_idle(self, busy: bool) -> bool:
        """One full collection if one is due, the workbench has settled, no input came for
        PAUSE_SECONDS and nothing loads (`busy`: a worker runs, whose result is about to be
        painted)."""
        if not self.settled or busy or not self.due():
            return False
        if time.monotonic() - self.last_input < PAUSE_SECONDS:
            return False
        gc.collect()
        return True
