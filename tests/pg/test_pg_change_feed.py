"""The server mode's change feed (engine/storage/server/listen.py): a write by another process
wakes a feed LISTENing on the same database, a feed whose session the server ended connects
again and still reports the write made while it was gone, a close ends a wait at once, and
a database migrated before the notifying trigger existed gets it at the next open.

Waits are long (WAIT seconds) and end at the event they wait for: none of these tests
sleeps, and a slow machine makes them slower, never different."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, make_url, text

from engine.facade.service import MemoryService
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.schema import version as schema
from engine.storage.server import listen as pg_listen
from engine.storage.server.listen import APPLICATION_NAME, ListenFeed

WAIT = 30.0
NO_MODEL = EmbedderStatus(None, "no model in this test")


def add_by_cli(cli: Any, pg_url: str, text_: str, home: Path) -> None:
    """A write by another process: the installed console script, on its own home."""
    added = cli(
        "--db", pg_url, "remember", text_, "--scope", "team:a", "--add", "--json", home=home
    )
    assert added.returncode == 0, added.stderr
    assert added.doc["outcome"] == "added"


def end_feed_sessions(pg_url: str) -> int:
    """What an operator (or a failover) does to the feed: its server session ended."""
    admin = create_engine(make_url(pg_url).set(drivername="postgresql+psycopg"))
    try:
        with admin.begin() as connection:
            # With a timeout, pg_terminate_backend returns once the session is gone: no
            # notification of a later write can reach the feed through it.
            ended = connection.execute(
                text(
                    "SELECT pg_terminate_backend(pid, 30000) FROM pg_stat_activity "
                    "WHERE application_name = :name AND datname = current_database()"
                ),
                {"name": APPLICATION_NAME},
            ).all()
    finally:
        admin.dispose()
    return len(ended)


def test_a_write_by_another_process_wakes_the_feed(
    open_pg: Any, pg_url: str, cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No probe of a quiet connection within the test: only the notification can tell it.
    monkeypatch.setattr(pg_listen, "PROBE_SECONDS", 3600.0)
    service = MemoryService(open_pg(pg_url, NO_MODEL))
    with service.changes() as feed:
        assert isinstance(feed, ListenFeed)
        start = feed.generation
        assert feed.wait(0) is None  # connected and listening, nothing written yet
        add_by_cli(cli, pg_url, "The VPN needs MFA", tmp_path / "other-machine")
        woke = feed.wait(WAIT)
        assert woke is not None and woke > start
        assert woke == service.generation()
        assert feed.connects == 1  # told by the notification, not by connecting again


def test_a_feed_whose_session_ended_reconnects_and_reports_what_it_missed(
    open_pg: Any, pg_url: str, cli: Any, tmp_path: Path
) -> None:
    service = MemoryService(open_pg(pg_url, NO_MODEL))
    with service.changes() as feed:
        assert isinstance(feed, ListenFeed)
        assert feed.wait(0) is None and feed.connects == 1
        assert end_feed_sessions(pg_url) == 1
        # Written while the feed has no session: no notification can reach it.
        add_by_cli(cli, pg_url, "Backups run nightly", tmp_path / "other-machine")
        written = service.generation()
        assert feed.wait(WAIT) == written
        assert feed.connects == 2
        # Listening again: the next write is notified on the new session.
        add_by_cli(cli, pg_url, "Deploys run on Fridays", tmp_path / "other-machine")
        woke = feed.wait(WAIT)
        assert woke is not None and woke > written and feed.connects == 2


def test_a_write_before_the_feed_opened_is_reported_from_since(
    open_pg: Any, pg_url: str, cli: Any, tmp_path: Path
) -> None:
    """A surface passes the generation it showed: a write between that read and the feed's
    LISTEN is reported by the first wait."""
    service = MemoryService(open_pg(pg_url, NO_MODEL))
    shown = service.generation()
    add_by_cli(cli, pg_url, "The wiki moved", tmp_path / "other-machine")
    with service.changes(since=shown) as feed:
        assert feed.wait(WAIT) == service.generation() > shown


def test_close_ends_a_wait_in_progress(open_pg: Any, pg_url: str) -> None:
    service = MemoryService(open_pg(pg_url, NO_MODEL))
    feed = service.changes()
    assert feed.wait(0) is None  # connected, so the waiter below blocks in select
    answers: list[int | None] = []
    waiter = threading.Thread(target=lambda: answers.append(feed.wait(600)))
    waiter.start()
    feed.close()
    waiter.join(WAIT)  # far less than the wait's own 600 s: close woke it
    assert not waiter.is_alive() and answers == [None]
    assert feed.closed and feed.wait(WAIT) is None


def test_a_database_from_before_the_trigger_gets_it_at_the_next_open(
    open_pg: Any, pg_url: str, cli: Any, tmp_path: Path
) -> None:
    first = open_pg(pg_url, NO_MODEL, name="first")
    with first.db.begin() as connection:
        connection.execute(text("DROP TRIGGER store_meta_generation_notify ON store_meta"))
        connection.execute(text("DROP FUNCTION notify_store_generation()"))
        connection.execute(text("UPDATE alembic_version SET version_num = '0001_baseline'"))
    first.db.dispose()
    upgraded = open_pg(pg_url, NO_MODEL, name="second")
    assert schema.stored_revision(upgraded.db) == schema.HEAD
    with MemoryService(upgraded).changes() as feed:
        assert feed.wait(0) is None
        add_by_cli(cli, pg_url, "Alice moved to Lyon", tmp_path / "other-machine")
        assert feed.wait(WAIT) is not None
        assert isinstance(feed, ListenFeed) and feed.connects == 1
