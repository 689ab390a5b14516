"""Several processes opening one new home at once (four agents' MCP servers started together):
each finds the index as the first one made it, none fails. The race was between reading the
schema revision and looking for its table: created in between by another process."""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from engine.facade.factory import open_engine
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.embedded.sqlite_settings import sqlite_url
from engine.storage.schema import version as schema
from engine.storage.schema.database import make_db_engine

CONSOLE_SCRIPT = Path(sys.executable).parent / "gno-tui"


def test_a_revision_table_made_between_the_two_reads_is_read(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_engine(home=home, embedder_status=EmbedderStatus(None, "no model"))
    real_read = schema._read
    calls: list[int] = []

    def first_read_before_the_table(connection: Any) -> str | None:
        calls.append(1)
        if len(calls) == 1:  # as read a moment before another process created it
            raise OperationalError("SELECT version_num", {}, Exception("no such table"))
        return real_read(connection)

    monkeypatch.setattr(schema, "_read", first_read_before_the_table)
    try:
        assert schema.stored_revision(store.db) == schema.HEAD
    finally:
        store.db.dispose()


@pytest.mark.sqlite_only
def test_four_processes_open_one_new_home_at_once(tmp_path: Path) -> None:
    env_model = {"GNO_TUI_MODEL": "/nonexistent/gno-tui-test-model"}
    for attempt in range(4):
        home = tmp_path / f"home-{attempt}"
        openers = [
            subprocess.Popen(
                [str(CONSOLE_SCRIPT), "--home", str(home), "recall", "anything", "--json"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**_env(), **env_model},
            )
            for _ in range(4)
        ]
        for opener in openers:
            out, err = opener.communicate(timeout=120)
            assert opener.returncode in (0, 1), err.decode()
            assert b"MEMORY_QUERY_FAILED" not in err + out, err.decode()


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("GNO_TUI_HOME", "GNO_TUI_DB"):
        env.pop(name, None)
    return env


def _first_connection(url: str, start: Any) -> None:
    """A child: connect to a new SQLite file the moment the others do (exit 3 on an error)."""
    engine = make_db_engine(url)
    start.wait()
    try:
        with engine.connect() as connection:
            connection.exec_driver_sql("CREATE TABLE IF NOT EXISTS opened (n INTEGER)")
            connection.commit()
    except Exception as exc:  # noqa: BLE001 - reported through the exit code
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        os._exit(3)
    os._exit(0)


@pytest.mark.sqlite_only
def test_first_connections_to_a_new_index_file_put_it_in_wal_mode_without_failing(
    tmp_path: Path,
) -> None:
    """SQLite refuses the change to WAL mode at once ("database is locked", no busy wait)
    while another connection holds a lock on the file: raced four at a time, one first
    connection in twenty-five failed, and an MCP server started with three others exited."""
    forks = multiprocessing.get_context("fork")
    for trial in range(40):
        url = sqlite_url(tmp_path / f"index-{trial}.sqlite")
        start = forks.Barrier(4)
        children = [forks.Process(target=_first_connection, args=(url, start)) for _ in range(4)]
        for child in children:
            child.start()
        for child in children:
            child.join()
        assert [child.exitcode for child in children] == [0, 0, 0, 0], f"trial {trial}"
        with sqlite3.connect(tmp_path / f"index-{trial}.sqlite") as check:
            assert check.execute("PRAGMA journal_mode").fetchone() == ("wal",)
