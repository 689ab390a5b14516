"""Pilot tests wait for workers and messages, never for wall time (tests/pilot_helpers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from textual.notifications import Notification

from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.retrieval.embeddings import EmbedderStatus


@pytest.fixture
def other(engine: Any) -> Iterator[MemoryService]:
    """Another process on the same home: its own engine, database connection and lock. Its
    writes reach the workbench through the store, as an agent's over MCP do (a test file may
    define its own, with another clock, say)."""
    second = open_engine(
        home=engine.home, embedder_status=EmbedderStatus(None, "no model in this test")
    )
    yield MemoryService(second)
    second.db.dispose()


@pytest.fixture(autouse=True)
def notifications_last_the_whole_test(monkeypatch: pytest.MonkeyPatch) -> None:
    """A toast expires after seconds of wall time (5 by default) and the tests read
    `app._notifications` after waiting for the workers: on a busy machine a toast could be
    gone before the test looks. Here a notification always has an hour left."""
    monkeypatch.setattr(Notification, "time_left", property(lambda _: 3600.0))


@pytest.fixture(autouse=True)
def sqlite_feed_reads_often(monkeypatch: pytest.MonkeyPatch) -> None:
    """On SQLite the store watcher's change feed reads the counter every second
    (engine/storage/reads/change_feed.py); tests that wait for it to report a write
    (`store_change_shown`) would each wait up to that second. Here it reads every 20 ms."""
    monkeypatch.setattr("engine.storage.reads.change_feed.SQLITE_POLL_SECONDS", 0.02)
