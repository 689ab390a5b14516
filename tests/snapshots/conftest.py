"""Snapshot pictures must not depend on the environment they are taken in."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def neutral_terminal_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """NO_COLOR would drop every colour and TEXTUAL_THEME would swap the theme."""
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.delenv("TEXTUAL_THEME", raising=False)
