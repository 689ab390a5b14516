"""The schema-migration scenarios (engine/storage/schema/version.py), written once for any database:
tests/engine/test_migrations.py runs them on the engine tests' database (SQLite, or the
server of $GNO_TUI_TEST_PG), tests/pg/test_pg_migrations.py on pgserver's PostgreSQL 16."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from sqlalchemy import Engine, event, inspect, text
from sqlmodel import SQLModel

from engine.contract.errors import MemoryFailure
from engine.facade.service import MemoryService
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest
from engine.storage.schema import version as schema
from engine.storage.schema.migrations.baseline_ops import CHANGE_TRIGGERS
from engine.storage.store import MemoryEngine

Open = Callable[[], MemoryEngine]
# The trigger that notifies the server mode's change feed (migration 0002; none on SQLite).
NOTIFY_TRIGGER = "store_meta_generation_notify"


def schema_drift(db: Engine) -> list[Any]:
    """What differs between the database and engine/storage/schema/tables.py (Alembic's comparison),
    leaving out the PostgreSQL backend's derived tables, which it creates itself."""
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    def ours(obj: Any, name: Any, type_: str, reflected: bool, compare_to: Any) -> bool:
        return not (type_ == "table" and reflected and compare_to is None)

    with db.connect() as connection:
        context = MigrationContext.configure(connection, opts={"include_object": ours})
        return list(compare_metadata(context, SQLModel.metadata))


def triggers(db: Engine) -> set[str]:
    query = {
        "sqlite": "SELECT name FROM sqlite_master WHERE type = 'trigger'",
        "postgresql": "SELECT tgname FROM pg_trigger WHERE NOT tgisinternal",
    }[db.dialect.name]
    with db.connect() as connection:
        return {row[0] for row in connection.execute(text(query))}


def contents(db: Engine) -> dict[str, Any]:
    """Every table's columns and rows, and the triggers: what `nothing changed` compares."""
    inspector = inspect(db)
    found: dict[str, Any] = {"triggers": triggers(db)}
    with db.connect() as connection:
        for name in sorted(inspector.get_table_names()):
            columns = [column["name"] for column in inspector.get_columns(name)]
            rows = connection.execute(text(f'SELECT * FROM "{name}"')).all()
            found[name] = (columns, sorted(map(repr, rows)))
    return found


def age_to_before_migrations(db: Engine) -> None:
    """Make the index look like one an older gno-tui made with its additive schema: no
    alembic_version, no keyed `kv_topic` column (and so none of its index), a plain keyed
    index, and no change-log or notifying triggers."""
    on_postgres = db.dialect.name == "postgresql"
    with db.begin() as connection:
        connection.execute(text("DROP TABLE alembic_version"))
        connection.execute(text("DROP INDEX ix_facts_kv_topic"))
        connection.execute(text("ALTER TABLE facts DROP COLUMN kv_topic"))
        connection.execute(text("DROP INDEX ix_facts_kv_key"))
        connection.execute(
            text("CREATE INDEX ix_facts_kv_key ON facts (kv_namespace, kv_key, kv_revision)")
        )
        for name in CHANGE_TRIGGERS:
            connection.execute(text(f"DROP TRIGGER {name}" + (" ON facts" if on_postgres else "")))
        if on_postgres:
            connection.execute(text(f"DROP TRIGGER {NOTIFY_TRIGGER} ON store_meta"))
    dropped = {*CHANGE_TRIGGERS, NOTIFY_TRIGGER}
    assert schema.stored_revision(db) is None and not triggers(db) & dropped


def statements_at_open(store: MemoryEngine) -> list[str]:
    """The SQL the schema check of an open runs (on a new connection, as a process's first)."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    store.db.dispose()
    event.listen(store.db, "before_cursor_execute", record)
    try:
        assert store.prepare_schema() is False
    finally:
        event.remove(store.db, "before_cursor_execute", record)
    return seen


def add(store: MemoryEngine, text_: str) -> None:
    request = RememberRequest(
        text=text_, scopes=["user:a"], caller="cli:t", session="s1", decision="add"
    )
    assert MemoryService(store).remember(request)["outcome"] == "added"


def recall(store: MemoryEngine, query: str) -> list[str]:
    request = RecallRequest(query=query, scopes=["user:a"], caller="cli:t", session="s1")
    return [fact["text"] for fact in MemoryService(store).recall(request)["facts"]]


# -- the scenarios ----------------------------------------------------------------------------


def new_store_is_at_head(open_store: Open) -> None:
    store = open_store()
    assert schema.stored_revision(store.db) == schema.HEAD
    assert schema_drift(store.db) == []
    assert set(CHANGE_TRIGGERS) <= triggers(store.db)
    assert (NOTIFY_TRIGGER in triggers(store.db)) == (store.db.dialect.name == "postgresql")
    # Up to date, the check at open is one query.
    assert statements_at_open(store) == [f"SELECT version_num FROM {schema.VERSION_TABLE}"]
    store.db.dispose()


def old_index_upgrades_and_keeps_its_rows(open_store: Open) -> None:
    store = open_store()
    for text_ in ("alice waters the garden", "bob repairs bicycles"):
        add(store, text_)
    assert recall(store, "garden")[:1] == ["alice waters the garden"]
    before = {
        name: rows for name, rows in contents(store.db).items() if name in ("receipts", "facts")
    }
    age_to_before_migrations(store.db)
    store.db.dispose()

    upgraded = open_store()
    assert schema.stored_revision(upgraded.db) == schema.HEAD
    assert schema_drift(upgraded.db) == []
    assert set(CHANGE_TRIGGERS) <= triggers(upgraded.db)
    assert (NOTIFY_TRIGGER in triggers(upgraded.db)) == (upgraded.db.dialect.name == "postgresql")
    after = contents(upgraded.db)
    assert after["receipts"] == before["receipts"]
    # The rows are kept; the new column comes back empty (reindex fills it from the files).
    assert len(after["facts"][1]) == len(before["facts"][1]) == 2
    assert recall(upgraded, "bicycles")[:1] == ["bob repairs bicycles"]
    # The change log works again: a write is logged by the recreated triggers.
    with upgraded.db.connect() as connection:
        logged = connection.scalar(text("SELECT count(*) FROM fact_changes"))
    add(upgraded, "carol bakes bread")
    with upgraded.db.connect() as connection:
        assert connection.scalar(text("SELECT count(*) FROM fact_changes")) == logged + 1
    upgraded.db.dispose()


def newer_revision_is_refused_and_nothing_changes(open_store: Open) -> None:
    store = open_store()
    add(store, "a fact")
    with store.db.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999_from_the_future'"))
    before = contents(store.db)
    store.db.dispose()
    with pytest.raises(MemoryFailure) as refused:
        open_store()
    assert refused.value.code == "MEMORY_QUERY_FAILED"
    message = str(refused.value)
    assert "'9999_from_the_future'" in message and "Upgrade gno-tui" in message
    assert "nothing was changed" in message
    assert contents(store.db) == before
    assert schema.stored_revision(store.db) == "9999_from_the_future"
    store.db.dispose()


SUPERSEDED_INDEX = "ix_facts_superseded_by"


def superseded_index_definition(db: Engine) -> str:
    query = {
        "sqlite": f"SELECT sql FROM sqlite_master WHERE name = '{SUPERSEDED_INDEX}'",
        "postgresql": f"SELECT indexdef FROM pg_indexes WHERE indexname = '{SUPERSEDED_INDEX}'",
    }[db.dialect.name]
    with db.connect() as connection:
        return str(connection.scalar(text(query)))


def liveness_plan(db: Engine) -> str:
    """SQLite's plan for the liveness test beside a list of six record ids."""
    with db.connect() as connection:
        ids = [row[0] for row in connection.execute(text("SELECT record_id FROM facts"))]
        listed = ", ".join(f"'{record_id}'" for record_id in ids[:6])
        rows = connection.execute(
            text(
                "EXPLAIN QUERY PLAN SELECT record_id FROM facts WHERE superseded_by IS NULL "
                f"AND retired_at IS NULL AND record_id IN ({listed})"
            )
        ).all()
    return " / ".join(str(row[-1]) for row in rows)


def superseded_index_becomes_partial(open_store: Open) -> None:
    """A store at revision 0003 (ix_facts_superseded_by over every row) upgrades to the index
    of superseded facts only, and keeps its rows; on SQLite the liveness test beside a list
    of ids is then answered by the primary key, not by that index."""
    store = open_store()
    for n in range(8):
        add(store, f"fact number {n} about the garden")
    with store.db.begin() as connection:
        connection.execute(text(f"DROP INDEX {SUPERSEDED_INDEX}"))
        connection.execute(text(f"CREATE INDEX {SUPERSEDED_INDEX} ON facts (superseded_by)"))
        connection.execute(text("UPDATE alembic_version SET version_num = '0003_tokens_requests'"))
    on_sqlite = store.db.dialect.name == "sqlite"
    if on_sqlite:
        assert SUPERSEDED_INDEX in liveness_plan(store.db)  # the mistake the revision ends
    before = contents(store.db)["facts"]
    store.db.dispose()

    upgraded = open_store()
    assert schema.stored_revision(upgraded.db) == schema.HEAD
    definition = superseded_index_definition(upgraded.db)
    assert "superseded_by IS NOT NULL" in definition, definition
    assert contents(upgraded.db)["facts"] == before
    if on_sqlite:
        plan = liveness_plan(upgraded.db)
        assert SUPERSEDED_INDEX not in plan and "sqlite_autoindex_facts_1" in plan, plan
    assert recall(upgraded, "garden")
    upgraded.db.dispose()
