"""Full garbage collections wait for a pause in the person's keys (gno_tui.idle_work),
and still free what only a full collection can: garbage that had lived long enough to reach
the oldest generation."""

from __future__ import annotations

import gc
import sys
import time
import weakref
from collections.abc import Iterator

import pytest

from gno_tui.idle_work import FULL_AFTER_YOUNGER, NEVER, IdleWork


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


@pytest.fixture
def collector() -> Iterator[IdleWork]:
    threshold, switch = gc.get_threshold(), sys.getswitchinterval()
    collector = IdleWork()
    collector.take_over_process()
    try:
        yield collector
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
        sys.setswitchinterval(switch)


def old_garbage() -> weakref.ref[Node]:
    """A reference cycle that reached the oldest generation, then became garbage."""
    first, second = Node(), Node()
    first.other, second.other = second, first
    gc.collect(1)  # survivors of a generation-1 collection move to the oldest
    return weakref.ref(first)


def test_python_starts_no_full_collection_of_its_own(collector: IdleWork) -> None:
    assert gc.get_threshold()[2] == NEVER
    dead = old_garbage()
    for _ in range(FULL_AFTER_YOUNGER * 3):
        gc.collect(1)
    assert dead() is not None  # younger collections never look at the oldest generation


def test_a_due_collection_runs_only_once_the_person_paused(collector: IdleWork) -> None:
    dead = old_garbage()
    for _ in range(FULL_AFTER_YOUNGER):
        gc.collect(1)
    assert collector.due()
    collector.last_input = time.monotonic() - 3600  # a long pause, but ...
    assert not collector.collect_if_idle(busy=False)  # ... the screens are not built yet
    collector.settled = True  # (settle() would also freeze the garbage made above)
    collector.last_input = time.monotonic() + 3600  # a key was just pressed
    assert not collector.collect_if_idle(busy=False)
    collector.last_input = time.monotonic() - 3600  # a long pause
    assert not collector.collect_if_idle(busy=True)  # a load's result is about to be painted
    assert dead() is not None
    assert collector.collect_if_idle(busy=False)
    assert dead() is None and not collector.due()


def test_no_collection_before_python_would_have_run_one(collector: IdleWork) -> None:
    collector.settled = True
    gc.collect()
    collector.last_input = time.monotonic() - 3600
    assert not collector.due()
    assert not collector.collect_if_idle(busy=False)


def test_quiet_needs_no_load_and_no_key_for_the_whole_time() -> None:
    idle = IdleWork()
    idle.last_input = time.monotonic() - 3600
    assert not idle.quiet(0.15, busy=False)  # quiet from now on: not for 0.15 s yet
    idle.quiet_since = time.monotonic() - 3600
    assert idle.quiet(0.15, busy=False)
    assert not idle.quiet(0.15, busy=True)  # a load starts the wait again
    assert idle.quiet_since is None
    idle.quiet_since = time.monotonic() - 3600
    idle.last_input = time.monotonic() + 3600  # a key was just pressed
    assert not idle.quiet(0.15, busy=False) and idle.quiet_since is None
