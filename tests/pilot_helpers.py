"""Helpers for Pilot-driven tests (importable from any test folder: pyproject puts tests/ on the
path)."""

from __future__ import annotations

from typing import Any


async def settle(pilot: Any) -> None:
    """Wait until no worker runs. Exclusive workers cancel each other, so waiting for each one
    to complete would fail on the cancelled ones."""
    for _ in range(100):
        await pilot.pause(0.05)
        if not any(worker.is_running for worker in pilot.app.workers):
            break
    await pilot.pause()


async def steady(pilot: Any) -> None:
    """Before a picture: stop cursors blinking (a frame taken mid-blink differs), then wait
    until two frames in a row are the same (a table sizes its columns on a later refresh)."""
    for widget in pilot.app.screen.query("TextArea, Input"):
        widget.cursor_blink = False
    previous = None
    for _ in range(20):
        await pilot.pause(0.1)
        frame = pilot.app.export_screenshot()
        if frame == previous:
            return
        previous = frame
