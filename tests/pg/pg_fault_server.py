"""A PostgreSQL of a test module's own that the test can stop, start and fill
(tests/pg/test_server_faults.py); what other clients do to it (hold a lock, end sessions,
take every connection slot); what it holds (the facts, the generation); and the console
script run as a person runs it. The writers are in tests/pg/pg_fault_writers.py.

The server is pgserver's PostgreSQL 16 with pgvector (the test extra), in a folder of its own,
never the session's shared server (tests/pg_fixtures.py): stopping that would fail every other
test. It is restarted the way an operator does, `pg_ctl stop -m fast` then `pg_ctl start`, on
the same Unix socket, and every wait is for a condition (pg_ctl's own -w, pg_isready, a
process's answer), never for a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
from psycopg import sql
from sqlalchemy import make_url

CONSOLE_SCRIPT = Path(sys.executable).parent / "gno-tui"
# Few enough that filling them is quick, enough for a test's processes and their pools.
MAX_CONNECTIONS = 40
# Bounds of the waits: far above what each takes, so a slow machine is slower, not failing.
CONTROL_TIMEOUT = 120.0
CALL_TIMEOUT = 120.0


def deadline_passed(deadline: float) -> bool:
    return time.monotonic() > deadline


class FaultServer:
    """A pgserver PostgreSQL under this test's control (`stop`, `start`), on a socket of its
    own; `url` is its `postgres` database as a postgresql:// URL."""

    def __init__(self) -> None:
        import pgserver

        self.folder = Path(tempfile.mkdtemp(prefix="gno-tui-pgfaults-"))
        self._handle = pgserver.get_server(self.folder, cleanup_mode="delete")
        info = self._handle.get_postmaster_info()
        assert info.socket_dir is not None and info.port is not None
        self.socket_dir = Path(info.socket_dir)
        self.port = int(info.port)
        self.url = self._handle.get_uri()
        self._bin = Path(pgserver.__file__).parent / "pginstall" / "bin"
        self._user = self._handle.system_user  # pgserver runs the server as its own user
        self.running = True
        # Restarted at once with the settings the tests rely on (max_connections).
        self.stop()
        self.start()

    def _pg_ctl(self, *args: str) -> None:
        done = subprocess.run(
            [str(self._bin / "pg_ctl"), "-D", str(self.folder), *args],
            user=self._user,
            capture_output=True,
            text=True,
            timeout=CONTROL_TIMEOUT,
        )
        assert done.returncode == 0, (args, done.stdout, done.stderr)

    def stop(self) -> None:
        """`pg_ctl stop -m fast`: every session ended, open transactions rolled back."""
        self._pg_ctl("-w", "stop", "-m", "fast")
        self.running = False
        assert not self.ready()

    def start(self) -> None:
        self._pg_ctl(
            "-w",
            "-l",
            str(self.folder / "log"),
            "-o",
            f"-h '' -k {self.socket_dir} -c max_connections={MAX_CONNECTIONS}",
            "start",
        )
        deadline = time.monotonic() + CONTROL_TIMEOUT
        while not self.ready():  # pg_ctl -w waited for it already: this only confirms
            assert not deadline_passed(deadline), "PostgreSQL did not accept connections"
        self.running = True

    def ready(self) -> bool:
        done = subprocess.run(
            [str(self._bin / "pg_isready"), "-h", str(self.socket_dir), "-p", str(self.port)],
            capture_output=True,
            timeout=CONTROL_TIMEOUT,
        )
        return done.returncode == 0

    @contextmanager
    def database(self) -> Iterator[str]:
        """A new, empty database, dropped afterwards; each step on a session of its own, as
        the server may have been restarted in between."""
        name = "gno_faults_" + uuid.uuid4().hex[:12]
        with connect(self.url, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            yield make_url(self.url).set(database=name).render_as_string(hide_password=False)
        finally:
            if not self.running:  # a test that failed while the server was stopped
                self.start()
            with connect(self.url, autocommit=True) as admin:
                drop = sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                admin.execute(drop.format(sql.Identifier(name)))

    def close(self) -> None:
        if self.running:
            self.stop()
        # pgserver's handle still names the first postmaster, long gone (this class started
        # others): without it, its cleanup only removes the folder.
        self._handle._postmaster_info = None
        self._handle.cleanup()


def connect(url: str, **options: Any) -> psycopg.Connection[Any]:
    """A plain session of the test's own on `url`, as another client of the server."""
    return psycopg.connect(url.replace("postgresql+psycopg://", "postgresql://"), **options)


def stored_texts(url: str) -> dict[str, str]:
    """record id -> text of every fact in the database."""
    with connect(url) as session:
        return {row[0]: row[1] for row in session.execute("SELECT record_id, text FROM facts")}


def wait_for(condition: Callable[[], bool], what: str, timeout: float = CONTROL_TIMEOUT) -> None:
    """A bounded poll of `condition` (a query of the server, a process's state)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert not deadline_passed(deadline), f"timed out waiting for {what}"
        time.sleep(0.02)


def child_env() -> dict[str, str]:
    """No model (lexical mode) and no variable that would choose another home or database."""
    env = {**os.environ, "GNO_TUI_MODEL": "/nonexistent/gno-tui-test-model"}
    for name in ("GNO_TUI_HOME", "GNO_TUI_DB", "GNO_TUI_CALLER", "GNO_TUI_SESSION"):
        env.pop(name, None)
    return env


@dataclass
class CliAnswer:
    returncode: int
    doc: dict[str, Any]
    stderr: str

    @property
    def code(self) -> str | None:
        error = self.doc.get("error")
        return str(error["code"]) if isinstance(error, dict) else None

    @property
    def message(self) -> str:
        return str(self.doc.get("error", {}).get("message", ""))


def run_cli(home: Path, url: str, *args: str) -> CliAnswer:
    """`gno-tui --home HOME --db URL ARGS --json` as a person runs it."""
    done = subprocess.run(
        [str(CONSOLE_SCRIPT), "--home", str(home), "--db", url, *args, "--json"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=CALL_TIMEOUT,
    )
    try:
        doc = json.loads(done.stdout)
    except ValueError:
        doc = {"unparsed": done.stdout}
    return CliAnswer(done.returncode, doc, done.stderr)


def generation_of(url: str) -> int:
    """The store's generation: every write moves it, in its own transaction."""
    with connect(url) as session:
        row = session.execute("SELECT value FROM store_meta WHERE name = 'generation'").fetchone()
    assert row is not None
    return int(row[0])


def database_name(url: str) -> str:
    return str(make_url(url).database)


# -- other clients' sessions, seen and ended ------------------------------------------------


def writer_waiting_on_a_lock(url: str, blocker: int) -> tuple[int, str]:
    """The backend of a write waiting, mid-transaction with a row written, on the blocker's
    lock (a bounded poll of pg_stat_activity), and the statement it waits in."""
    found: list[tuple[int, str]] = []

    def waiting() -> bool:
        with connect(url) as session:
            rows = session.execute(
                "SELECT pid, query FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND backend_xid IS NOT NULL AND pid <> %s",
                (blocker,),
            ).fetchall()
        found[:] = [(int(row[0]), str(row[1])) for row in rows]
        return len(found) == 1

    wait_for(waiting, "a write waiting on the lock")
    # pg_stat_activity copies each session's statement at the start of a query but reads its
    # wait live, so the poll above can pair the wait with the statement before. The session
    # stays blocked until the blocker lets go, so a second look shows the statement it waits in.
    pid = found[0][0]
    with connect(url) as session:
        row = session.execute(
            "SELECT query FROM pg_stat_activity WHERE pid = %s", (pid,)
        ).fetchone()
    assert row is not None, f"session {pid} ended while waiting"
    return pid, str(row[0])


def write_lock_holder(url: str) -> int:
    """The session holding the store's write lock (engine/storage/server/parts.py: the one
    advisory lock a writer holds between its transactions)."""
    with connect(url) as session:
        rows = session.execute(
            "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        ).fetchall()
    assert len(rows) == 1, rows
    return int(rows[0][0])


def end_session(url: str, pid: int) -> None:
    """pg_terminate_backend, returning once the session is gone."""
    with connect(url, autocommit=True) as admin:
        row = admin.execute("SELECT pg_terminate_backend(%s, 30000)", (pid,)).fetchone()
    assert row is not None and row[0], f"session {pid} did not end"


def take_every_connection(server_url: str, database: str) -> list[psycopg.Connection[Any]]:
    """Every connection slot of the server, held by sessions of another client, and none left
    to `database`'s sessions: those are ended (as a failover ends them) and their slots taken
    in turn, until a round ends none. max_connections is reached: the next session refused."""
    taken: list[psycopg.Connection[Any]] = []
    try:
        for _ in range(MAX_CONNECTIONS):
            _fill(taken, server_url)
            row = (
                taken[0]
                .execute(
                    "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid, 30000)) "
                    "FROM pg_stat_activity WHERE datname = %s",
                    (database,),
                )
                .fetchone()
            )
            if row is not None and row[0] == 0:
                return taken
        raise AssertionError(f"the sessions of {database} kept coming back")
    except BaseException:
        for session in taken:
            session.close()
        raise


def _fill(taken: list[psycopg.Connection[Any]], server_url: str) -> None:
    """Sessions until the server refuses one."""
    for _ in range(MAX_CONNECTIONS + 10):
        try:
            taken.append(connect(server_url, autocommit=True))
        except psycopg.OperationalError as refused:
            assert "too many clients" in str(refused), refused
            return
    raise AssertionError(f"{len(taken)} sessions and no refusal: max_connections not applied")
