"""Several processes opening one new home at once (four agents' MCP servers started together):
each finds the index as the first one made it, none fails. The race was between reading the
schema revision and looking for its table: created in between by another process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from engine.facade.factory import open_engine
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage import schema

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
