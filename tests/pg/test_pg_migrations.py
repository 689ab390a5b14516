"""Schema migrations on PostgreSQL 16 with pgvector (pgserver): the scenarios of
tests/engine/test_migrations.py, three "machines" migrating one new database at once,
and the error that says how to get pgvector where this database user cannot create it."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import migration_scenarios as scenarios
import pytest
from sqlalchemy import Engine, create_engine, make_url, text

from engine.contract.errors import MemoryFailure
from engine.retrieval.embeddings import EmbedderStatus
from engine.retrieval.registry import REGISTRY, Place
from engine.retrieval.seam import RETRIEVAL_ENV
from engine.storage.schema import version as schema
from engine.storage.schema.database import make_db_engine
from engine.storage.schema.migrations.baseline_ops import CHANGE_TRIGGERS
from engine.storage.store import MemoryEngine

LEXICAL = EmbedderStatus(None, "no model")
OpenPg = Callable[..., MemoryEngine]  # the open_pg fixture (tests/pg/conftest.py)


@pytest.fixture
def open_store(pg_url: str, open_pg: OpenPg) -> scenarios.Open:
    def open_one() -> MemoryEngine:
        return open_pg(pg_url, LEXICAL)

    return open_one


def test_a_new_database_is_at_head(open_store: scenarios.Open) -> None:
    scenarios.new_store_is_at_head(open_store)


def test_a_database_from_before_migrations_upgrades_and_keeps_its_rows(
    open_store: scenarios.Open,
) -> None:
    scenarios.old_index_upgrades_and_keeps_its_rows(open_store)


def test_a_newer_revision_is_refused_and_nothing_changes(open_store: scenarios.Open) -> None:
    scenarios.newer_revision_is_refused_and_nothing_changes(open_store)


def test_the_superseded_index_of_an_older_database_becomes_partial(
    open_store: scenarios.Open,
) -> None:
    scenarios.superseded_index_becomes_partial(open_store)


def test_homes_on_two_machines_migrate_one_new_database_once(pg_url: str) -> None:
    """Each home holds only its own write lock: the advisory lock orders the migrations, and
    the later ones find the revision at head instead of creating the tables again. (Only the
    migration runs here: the default collection's first write is not this test's subject.)"""
    engines = [make_db_engine(pg_url) for _ in range(3)]
    failed: list[Exception] = []
    start = threading.Barrier(len(engines))

    def migrate(db: Engine) -> None:
        start.wait()
        try:
            schema.upgrade_to_head(db)
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            failed.append(exc)

    threads = [threading.Thread(target=migrate, args=(db,)) for db in engines]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    try:
        assert not failed
        db = engines[0]
        assert schema.stored_revision(db) == schema.HEAD and scenarios.schema_drift(db) == []
        with db.connect() as connection:
            triggers = connection.scalar(
                text(
                    "SELECT count(*) FROM pg_trigger"
                    " WHERE tgrelid = 'facts'::regclass AND NOT tgisinternal"
                )
            )
        assert triggers == len(CHANGE_TRIGGERS)
    finally:
        for db in engines:
            db.dispose()


def test_a_user_who_cannot_create_pgvector_is_told_how(
    pg_url: str, open_pg: OpenPg, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pgvector is on the server but this user may not CREATE EXTENSION (not a superuser, as
    on many managed services): asking for the in-database backend says who must run it, and
    how to install pgvector where it is missing."""
    url = make_url(pg_url).set(drivername="postgresql+psycopg")
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    role = "gno_plain_" + url.database.removeprefix("gno_pg_") if url.database else "gno_plain"
    with admin.connect() as connection:
        connection.execute(text(f"CREATE ROLE {role} LOGIN"))
        connection.execute(text(f'GRANT ALL ON DATABASE "{url.database}" TO {role}'))
        connection.execute(text(f"GRANT ALL ON SCHEMA public TO {role}"))
    store: Any = None
    try:
        plain = url.set(username=role, password=None).render_as_string(hide_password=False)
        store = open_pg(plain.replace("postgresql+psycopg://", "postgresql://", 1), LEXICAL)
        assert schema.stored_revision(store.db) == schema.HEAD  # migrations need no superuser
        monkeypatch.setenv(RETRIEVAL_ENV, "postgres")
        with pytest.raises(MemoryFailure) as raised:
            REGISTRY.choose(Place("postgresql", store.db))
        message = str(raised.value)
        assert raised.value.code == "MEMORY_QUERY_FAILED"
        assert "CREATE EXTENSION vector failed" in message
        assert "apt install postgresql-" in message and "brew install pgvector" in message
    finally:
        if store is not None:
            store.db.dispose()
        with admin.connect() as connection:  # the role's tables go with the test's database
            connection.execute(text(f"DROP OWNED BY {role}"))
            connection.execute(text(f"DROP ROLE {role}"))
        admin.dispose()
