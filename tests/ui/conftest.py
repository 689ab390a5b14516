"""Pilot tests wait for workers and messages, never for wall time (tests/pilot_helpers.py)."""

from __future__ import annotations

import pytest
from textual.notifications import Notification


@pytest.fixture(autouse=True)
def notifications_last_the_whole_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """A toast expires after seconds of wall time (5 by default) and the tests read
    `app._notifications` after waiting for the workers: on a busy machine a toast could be
    gone before the test looks. Here a notification always has an hour left."""
    monkeypatch.setattr(Notification, "time_left", property(lambda _: 3600.0))
