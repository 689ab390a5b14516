"""Snapshot pictures must not depend on the environment they are taken in, nor on the time they
are taken at."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

import pytest
from pilot_helpers import steady


@pytest.fixture(autouse=True)
def neutral_terminal_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """NO_COLOR would drop every colour and TEXTUAL_THEME would swap the theme."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TEXTUAL_THEME", raising=False)


@pytest.fixture
def snap_compare(snap_compare: Callable[..., bool]) -> Callable[..., bool]:
    """pytest-textual-snapshot's snap_compare, with every picture taken after `steady`: the
    workers done, no toast on screen, no cursor blinking (whatever the test's run_before did)."""

    def compare(
        app: Any,
        press: Iterable[str] = (),
        terminal_size: tuple[int, int] = (80, 24),
        run_before: Callable[[Any], Any] | None = None,
    ) -> bool:
        async def before(pilot: Any) -> None:
            if run_before is not None:
                result = run_before(pilot)
                if inspect.isawaitable(result):
                    await result
            if press:
                await pilot.press(*press)
            await steady(pilot)

        return snap_compare(app, terminal_size=terminal_size, run_before=before)

    return compare
