"""The store's change feed (`MemoryService.changes`): a write by another engine on the same
home wakes it, a write made before it opened is reported from `since`, and `close` ends a
wait in progress at once. On SQLite the feed reads the counter at an interval (shortened
here); on the server of $GNO_TUI_TEST_PG it is the LISTEN feed (tests/pg tests its
reconnection). Waits end at the event, bounded by WAIT seconds; nothing sleeps."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.memory.remember import RememberRequest
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.store import MemoryEngine

WAIT = 30.0


@pytest.fixture(autouse=True)
def sqlite_feed_reads_often(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("engine.storage.reads.change_feed.SQLITE_POLL_SECONDS", 0.02)


@pytest.fixture
def other(engine: MemoryEngine, home: Path) -> Iterator[MemoryService]:
    """Another process on the same home: an engine of its own."""
    second = open_engine(home=home, embedder_status=EmbedderStatus(None, "no model"))
    yield MemoryService(second)
    second.db.dispose()


def write(service: MemoryService, text: str) -> int:
    request = RememberRequest(
        text=text, scopes=["team:a"], caller="cli:t", session="s", decision="add"
    )
    assert service.remember(request)["outcome"] == "added"
    return service.generation()


def test_a_write_by_another_engine_wakes_the_feed(
    engine: MemoryEngine, other: MemoryService
) -> None:
    with MemoryService(engine).changes() as feed:
        assert feed.wait(0) is None
        written = write(other, "The VPN needs MFA")
        assert feed.wait(WAIT) == written == feed.generation
        assert feed.wait(0) is None  # reported once


def test_a_burst_is_reported_up_to_its_last_write(
    engine: MemoryEngine, other: MemoryService
) -> None:
    with MemoryService(engine).changes() as feed:
        assert feed.wait(0) is None
        for number in range(3):
            last = write(other, f"Deploy number {number} went out")
        seen: list[int] = []
        while not seen or seen[-1] != last:  # one report or several, each newer
            reported = feed.wait(WAIT)
            assert reported is not None
            seen.append(reported)
        assert seen == sorted(set(seen))


def test_a_write_before_the_feed_opened_is_reported_from_since(
    engine: MemoryEngine, other: MemoryService
) -> None:
    service = MemoryService(engine)
    shown = service.generation()
    written = write(other, "Backups run nightly")
    with service.changes(since=shown) as feed:
        assert feed.wait(WAIT) == written
    with service.changes() as fresh:  # without `since`: from now on
        assert fresh.generation == written and fresh.wait(0) is None


def test_close_ends_a_wait_in_progress(engine: MemoryEngine) -> None:
    feed = MemoryService(engine).changes()
    assert feed.wait(0) is None
    answers: list[int | None] = []
    waiter = threading.Thread(target=lambda: answers.append(feed.wait(600)))
    waiter.start()
    feed.close()
    waiter.join(WAIT)  # far less than the wait's own 600 s: close woke it
    assert not waiter.is_alive() and answers == [None]
    assert feed.closed and feed.wait(WAIT) is None
