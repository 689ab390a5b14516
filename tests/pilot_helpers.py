"""Helpers for Pilot-driven tests (importable from any test folder: pyproject puts tests/ on the
path).

Nothing here waits for wall time: a test waits for the app's workers to finish and for the
messages they post to be handled, so a busy machine makes a test slower, never different."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import suppress
from typing import Any

from textual.worker import WorkerError, WorkerState

BUSY = (WorkerState.PENDING, WorkerState.RUNNING)
ROUNDS = 100


async def settle(pilot: Any, debounce: Callable[[Any], Any] | None = None) -> None:
    """Wait until no worker runs and no message is pending.

    Each round lets the pending messages be handled (a handler may start workers; a pending
    worker starts), then waits for the running workers; what they post (`post_message`) is
    handled in the next round, and `call_from_thread` callbacks ran before their worker
    finished. It ends after a round that found no worker. Exclusive workers cancel each other
    and a failed one is the app's to report (it notifies): neither ends the wait early.

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
        busy = [worker for worker in app.workers if worker.state in BUSY]
        if not busy and not fired:
            return
        running = [worker for worker in busy if worker.state == WorkerState.RUNNING]
        if running:  # (an empty list would mean every worker to wait_for_complete)
            with suppress(WorkerError):
                await app.workers.wait_for_complete(running)
    raise AssertionError(f"workers still running after {ROUNDS} rounds: {list(app.workers)}")


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
