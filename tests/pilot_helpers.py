"""Helpers for Pilot-driven tests (importable from any test folder: pyproject puts tests/ on the
path).

Nothing here waits for a fixed time: a test waits for the app's workers to finish and for the
messages they post to be handled, or for the store watcher to report a write
(`store_change_shown`), so a busy machine makes a test slower, never different."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress
from typing import Any, TypeVar

from textual.pilot import Pilot
from textual.worker import WorkerError, WorkerState

from engine.facade.service import MemoryService
from engine.storage.store import MemoryEngine
from gno_tui.app import STORE_WATCH_GROUP, GnoApp, create_app
from screens.remember import DEBOUNCE_SECONDS, RememberScreen

_Screen = TypeVar("_Screen")

BUSY = (WorkerState.PENDING, WorkerState.RUNNING)
ROUNDS = 100
# How long `store_change_shown` waits for the app's store watcher to hear of a write.
CHANGE_WAIT_SECONDS = 30.0
SIZE = (140, 40)  # the terminal the screens are driven in


def keys(text: str) -> list[str]:
    """The key presses that type `text` (Pilot names the space bar `space`)."""
    return ["space" if char == " " else char for char in text]


def shown(app: Any, kind: type[_Screen]) -> _Screen:
    """The screen the app shows, which must be a `kind`."""
    screen = app.screen
    assert isinstance(screen, kind), f"{type(screen).__name__} shown, not {kind.__name__}"
    return screen


def pending_proposal(screen: Any) -> Any:
    """Remember proposes candidates DEBOUNCE_SECONDS after the last change, on a timer: the
    timer when one is pending (settle runs its proposal at once instead of waiting for it)."""
    timer = screen._debounce if isinstance(screen, RememberScreen) else None
    assert timer is None or timer._interval == DEBOUNCE_SECONDS, "not the proposal debounce"
    return timer


async def settle(pilot: Any, debounce: Callable[[Any], Any] | None = None) -> None:
    """Wait until no worker runs and no message is pending.

    Each round lets the pending messages be handled (a handler may start workers; a pending
    worker starts), then waits for the running workers; what they post (`post_message`) is
    handled in the next round, and `call_from_thread` callbacks ran before their worker
    finished. It ends after a round that found no worker. Exclusive workers cancel each other
    and a failed one is the app's to report (it notifies): neither ends the wait early. The
    store watcher runs as long as the app and is not waited for (`store_change_shown` waits
    for what it reports).

    `debounce(screen)`, when given, returns a pending debounce timer of the screen (or None):
    it counts wall time, so its callback runs at once instead."""
    app = pilot.app
    for _ in range(ROUNDS):
        fired = False
        timer = debounce(app.screen) if debounce is not None else None
        if timer is not None:
            timer.stop()
            app.screen.call_later(timer._callback)
            fired = True
        await pilot.pause()
        busy = [w for w in app.workers if w.state in BUSY and w.group != STORE_WATCH_GROUP]
        if not busy and not fired:
            return
        running = [worker for worker in busy if worker.state == WorkerState.RUNNING]
        if running:  # (an empty list would mean every worker to wait_for_complete)
            with suppress(WorkerError):
                await app.workers.wait_for_complete(running)
    raise AssertionError(f"workers still running after {ROUNDS} rounds: {list(app.workers)}")


async def store_change_shown(pilot: Any) -> None:
    """After another process wrote: wait until the app's store watcher (`watch_store=True`)
    has told the screen in front of the store's generation as it is now, then `settle` the
    reloads that started. The watcher hears of it from the change feed (a notification on
    PostgreSQL, the counter read at an interval on SQLite): the wait ends at that event, and
    fails only if it does not come within CHANGE_WAIT_SECONDS."""
    app = pilot.app
    target = app.service.generation()
    loop = asyncio.get_running_loop()
    reported = asyncio.Event()
    told = app.store_changed  # the watcher's thread calls it for each new generation

    def telling(generation: int) -> None:
        told(generation)  # posts StoreChanged to the screen (call_from_thread: handled by now)
        loop.call_soon_threadsafe(reported.set)

    app.store_changed = telling
    try:
        while getattr(app.screen, "generation_shown", target) < target:
            if app.workbench.generation >= target:
                await settle(pilot)  # reported already: its StoreChanged is on its way
                continue
            try:
                await asyncio.wait_for(reported.wait(), CHANGE_WAIT_SECONDS)
            except TimeoutError:
                raise AssertionError(
                    f"the screen still shows generation {app.screen.generation_shown}, the "
                    f"store is at {target}: the store watcher did not report the write"
                ) from None
            reported.clear()
            await settle(pilot)  # the StoreChanged posted, and the reloads it started
    finally:
        del app.store_changed  # the class's own again
    await settle(pilot)


def stop_blinking(app: Any) -> None:
    """Blinking cursors off (each shows steadily) in every screen of the stack."""
    for screen in app.screen_stack:
        for widget in screen.query("Input, TextArea"):
            widget.cursor_blink = False


async def steady(pilot: Any, debounce: Callable[[Any], Any] | None = None) -> None:
    """Before a picture: wait for the workers (`settle`, with `debounce`), take away what
    depends on wall time (toasts expire after seconds; a cursor blinks every half second), then
    let the screen catch up until two frames in a row are the same (a table sizes its columns,
    a tab underline re-measures, on a later refresh). Every snapshot ends with this
    (tests/snapshots/conftest.py)."""
    await settle(pilot, debounce)
    app = pilot.app
    app.clear_notifications()
    stop_blinking(app)
    await pilot.wait_for_scheduled_animations()
    previous = app.export_screenshot()
    for _ in range(10):
        await pilot.pause()
        frame = app.export_screenshot()
        if frame == previous:
            return
        previous = frame
    raise AssertionError("the screen still changes after 10 rounds of pending messages")


@asynccontextmanager
async def workbench(
    engine: MemoryEngine,
    screen: str | None = None,
    *,
    debounce: Callable[[Any], Any] | None = None,
    **options: Any,
) -> AsyncIterator[tuple[GnoApp, Pilot[None]]]:
    """The workbench over `engine`, on `screen`, driven in a SIZE terminal once its first loads
    are done (`settle`, with `debounce`): the app and its pilot. `options` go to create_app;
    the app does not watch the store unless they say `watch_store=True`."""
    options.setdefault("watch_store", False)
    app = create_app(service=MemoryService(engine), screen=screen, **options)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, debounce)
        yield app, pilot


def steps(
    *groups: list[str] | str, debounce: Callable[[Any], Any] | None = None
) -> Callable[[Any], Awaitable[None]]:
    """A snapshot's run_before: press each group of keys, letting the workers finish after
    each (`settle`, with `debounce`); end on a steady frame (no toast, no blinking cursor)."""

    async def run(pilot: Any) -> None:
        await settle(pilot, debounce)
        for group in groups:
            await pilot.press(*([group] if isinstance(group, str) else group))
            await settle(pilot, debounce)
        await steady(pilot, debounce)

    return run
