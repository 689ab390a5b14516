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
