"""A throwaway PostgreSQL 16 with pgvector for the tests that need a server database
(tests/pg, and the server-mode tests of tests/mcp and tests/ui): registered for every folder
by tests/conftest.py, so one test session starts one server.

pgserver (a test extra, pyproject.toml) bundles PostgreSQL 16 and pgvector 0.6.2 in its wheel,
so nothing is downloaded at test time and no system package is needed. One server is started
per test session in a temporary folder (a second or so) and deleted at its end; each test gets
a database of its own on it, dropped afterwards, so tests never see each other's facts. It
does not fsync, as scripts/with_pgserver.py explains."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from benchmarks.common import fresh_database
from scripts.with_pgserver import without_fsync


@pytest.fixture(scope="session")
def pg_server() -> Iterator[str]:
    """The server's URL (the `postgres` database, superuser, over a Unix socket)."""
    import pgserver

    # Not under pytest's basetemp: a concurrent pytest run prunes old basetemps, and the
    # server's data folder must outlive every test of this session.
    folder = Path(tempfile.mkdtemp(prefix="gno-tui-pgserver-"))
    # cleanup_mode="delete": stopped and its folder removed when the session ends, also when
    # a test fails (the handle is closed in the finaliser, and by atexit as a last resort).
    server = pgserver.get_server(folder, cleanup_mode="delete")
    try:
        without_fsync(server.get_uri())
        yield server.get_uri()
    finally:
        server.cleanup()


@pytest.fixture
def pg_url(pg_server: str) -> Iterator[str]:
    """A fresh, empty database on the session's server (postgresql:// URL)."""
    with fresh_database(pg_server, prefix="gno_pg_") as url:
        yield url
