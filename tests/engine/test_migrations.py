"""Schema migrations (engine/storage/schema/version.py, engine/storage/migrations): a new index is
created at the head revision, one made by a gno-tui from before Alembic is brought to it with
its rows, and one a newer gno-tui migrated is refused without a change. On SQLite here, and
on the server of $GNO_TUI_TEST_PG in CI (tests/pg runs them on PostgreSQL 16 too)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import migration_scenarios as scenarios
import pytest

from engine.facade.factory import open_engine
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.schema import version as schema
from engine.storage.store import MemoryEngine

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def open_store(home: Path) -> scenarios.Open:
    def open_one() -> MemoryEngine:
        return open_engine(home=home, embedder_status=EmbedderStatus(None, "no model"))

    return open_one


def test_head_is_the_newest_shipped_revision() -> None:
    """schema.HEAD (what the check at open compares with, without Alembic) is the head of
    the scripts shipped in engine/storage/schema/migrations/versions."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(schema._config())
    assert script.get_heads() == [schema.HEAD]
    assert schema.known_revisions() == {
        "0001_baseline",
        "0002_generation_notify",
        "0003_tokens_requests",
        schema.HEAD,
    }


def test_a_new_store_is_at_head(open_store: scenarios.Open) -> None:
    scenarios.new_store_is_at_head(open_store)


def test_an_index_from_before_migrations_upgrades_and_keeps_its_rows(
    open_store: scenarios.Open,
) -> None:
    scenarios.old_index_upgrades_and_keeps_its_rows(open_store)


def test_a_newer_revision_is_refused_and_nothing_changes(open_store: scenarios.Open) -> None:
    scenarios.newer_revision_is_refused_and_nothing_changes(open_store)


def test_the_superseded_index_of_an_older_store_becomes_partial(
    open_store: scenarios.Open,
) -> None:
    scenarios.superseded_index_becomes_partial(open_store)


PROBE = """
import json, sys, time
from pathlib import Path
from engine.facade.factory import open_engine
from engine.retrieval.embeddings import EmbedderStatus
store = open_engine(home=Path(sys.argv[1]), embedder_status=EmbedderStatus(None, "no model"))
print(json.dumps(sorted({m.split(".")[0] for m in sys.modules} & {"alembic", "mako"})))
"""


@pytest.mark.sqlite_only
def test_opening_an_up_to_date_store_does_not_import_alembic(
    open_store: scenarios.Open, home: Path
) -> None:
    """Alembic is imported only when an index needs a migration: a CLI start skips it."""
    open_store().db.dispose()
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(home)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []


@pytest.mark.sqlite_only
def test_a_new_sqlite_index_matches_what_the_tables_module_creates(
    open_store: scenarios.Open, tmp_path: Path
) -> None:
    """The baseline's frozen tables, byte for byte the DDL SQLModel emits for tables.py."""
    import sqlite3

    from sqlalchemy import create_engine
    from sqlmodel import SQLModel

    store = open_store()
    reference = tmp_path / "reference.sqlite"
    SQLModel.metadata.create_all(create_engine(f"sqlite:///{reference}"))

    def ddl(path: Path) -> set[tuple[str, str]]:
        with sqlite3.connect(path) as db:
            rows = db.execute("SELECT type, sql FROM sqlite_master WHERE sql IS NOT NULL")
            return {(kind, sql) for kind, sql in rows if kind in ("table", "index")}

    made = ddl(Path(str(store.sqlite_path)))
    store.db.dispose()
    assert {row for row in made if "alembic_version" not in row[1]} == ddl(reference)
