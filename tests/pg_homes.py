"""The contract suites on a PostgreSQL server: a database of its own for every home a test uses.

With $GNO_TUI_TEST_PG set to a server URL (.ci/run sets it for Debian's PostgreSQL 15 by
`pg_virtualenv`, which has no pgvector, so recall ranks in process; and for pgserver's 16 with
pgvector by scripts/with_pgserver.py, so recall ranks inside the database), the engine, CLI and
MCP tests run again in the server mode: every home a test opens is given a fresh database on
that server instead of its index.sqlite, in this process (tests/conftest.py patches the
factory's default URL) and in every console script or MCP server the test starts (the
launchers put the home's database in the child's $GNO_TUI_DB, which is how a user points a
process at a server). Two homes of one test get two databases, as two machines with their own
stores would; a test that means to share one passes `--db` or $GNO_TUI_DB itself.

Each database is a copy of one template made once per test session: an empty database that
gno-tui opened once, so it holds the schema at this revision and the default collection, and
nothing drawn at random (the store's identity and cursor key are drawn at their first use, so
every copy draws its own). Copying it costs a fraction of creating the schema in every home.

A module of its own, not conftest.py, so that tests/mcp's harness can import it."""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sqlalchemy import URL, Engine

PG_SERVER = os.environ.get("GNO_TUI_TEST_PG")

# The folders whose tests run on the server too: the contract suites.
CONTRACT_SUITES = ("engine", "cli", "mcp", "http")


class _Template:
    """The session's template database on one server: made at first use, dropped at the end
    of the session (tests/conftest.py)."""

    name: str | None = None
    rows: dict[str, list[str]] = {}  # what every copy holds before its home writes

    @classmethod
    def on(cls, admin: Engine, server: URL) -> str:
        if cls.name is None:
            from engine.facade.factory import open_engine
            from engine.retrieval.embeddings import EmbedderStatus

            name = "gno_template_" + uuid.uuid4().hex[:12]
            _create(admin, name)
            url = server.set(database=name).render_as_string(hide_password=False)
            with tempfile.TemporaryDirectory() as home:
                status = EmbedderStatus(None, "no model")
                store = open_engine(home=Path(home), db_url=url, embedder_status=status)
                store.db.dispose()  # a template takes no copy while a session is connected
            cls.rows = rows_of(url)
            cls.name = name
        return cls.name

    @classmethod
    def drop(cls, admin: Engine) -> None:
        if cls.name is not None:
            _drop(admin, cls.name)
            cls.name = None


def _create(admin: Engine, name: str, *, template: str | None = None) -> None:
    from sqlalchemy import text

    copy = f' TEMPLATE "{template}"' if template else ""
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"{copy}'))


def _drop(admin: Engine, name: str) -> None:
    from sqlalchemy import text

    with admin.connect() as connection:
        connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def drop_template() -> None:
    """Drop the session's template database, if one was made."""
    if PG_SERVER and _Template.name is not None:
        databases = HomeDatabases(PG_SERVER)
        _Template.drop(databases.admin)
        databases.admin.dispose()


class HomeDatabases:
    """One test module's databases, each created on first use of a home (every test has homes
    of its own, in its own tmp_path) and all dropped when the module ends."""

    def __init__(self, server: str) -> None:
        from sqlalchemy import create_engine, make_url

        self.server = make_url(server).set(drivername="postgresql+psycopg")
        self.admin: Engine = create_engine(self.server, isolation_level="AUTOCOMMIT")
        self.urls: dict[Path, str] = {}

    def url_for(self, home: Path) -> str:
        key = home.resolve()
        if key not in self.urls:
            name = "gno_test_" + uuid.uuid4().hex[:12]
            _create(self.admin, name, template=_Template.on(self.admin, self.server))
            self.urls[key] = self.server.set(database=name).render_as_string(hide_password=False)
        return self.urls[key]

    def drop_all(self) -> None:
        from sqlalchemy import make_url

        for url in self.urls.values():
            _drop(self.admin, str(make_url(url).database))
        self.urls.clear()
        self.admin.dispose()


# The running module's databases, when it runs on the server (set by tests/conftest.py).
active: HomeDatabases | None = None


def server_mode() -> bool:
    """Whether the running test's homes are on the server (all of them are, on such a run)."""
    return active is not None


def database_of(home: Path) -> str | None:
    """The server database `home` uses in this test, if it has been given one."""
    return active.urls.get(home.resolve()) if active else None


def rows_of(url: str) -> dict[str, list[str]]:
    """Every table of the database at `url` with its rows, as text, sorted."""
    from sqlalchemy import create_engine, inspect, text

    engine = create_engine(url)
    try:
        with engine.connect() as connection:
            return {
                table: sorted(
                    repr(tuple(row)) for row in connection.execute(text(f'SELECT * FROM "{table}"'))
                )
                for table in inspect(connection).get_table_names()
            }
    finally:
        engine.dispose()


def as_made(home: Path) -> bool:
    """Whether `home`'s database holds what every new home's database holds (the template's
    tables and rows): nothing was written to it."""
    url = database_of(home)
    assert url is not None, "the home has no database on the server"
    return rows_of(url) == _Template.rows


def database_env(home: Path | None) -> dict[str, str]:
    """What a child process needs in its environment to use `home`'s server database:
    {"GNO_TUI_DB": url} when the test runs on the server, else nothing (the home's SQLite)."""
    if active is None or home is None:
        return {}
    return {"GNO_TUI_DB": active.url_for(home)}


def mirror_files(home: Path) -> list[Path]:
    """The fact files a user of a server-mode `home` would look at: `export --format gno` of its
    database, written afresh into `<home>-mirror/` at each call, sorted."""
    from engine.facade.factory import open_engine
    from engine.interop.transfer import export_gno
    from engine.retrieval.embeddings import EmbedderStatus

    assert active is not None, "the test does not run on a server"
    url = active.url_for(home)
    folder = home.parent / f"{home.name}-mirror"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    store = open_engine(home=home, db_url=url, embedder_status=EmbedderStatus(None, "no model"))
    try:
        export_gno(store, folder)
    finally:
        store.db.dispose()
    return sorted(folder.glob("facts/*/mem-*.md"))


def fact_files(home: Path) -> list[Path]:
    """A home's fact files: canonical ones in the embedded mode, the export mirror on a server."""
    if server_mode():
        return mirror_files(home)
    return sorted(home.glob("collections/*/facts/*/mem-*.md"))
