"""The group commit's statements on SQLite's own driver, under the group's transaction.

A single add holds the home's write lock for about 2 ms, and every other writer of the home
waits that long; SQLAlchemy's execution of one statement (its context, result and parameter
handling) cost 15-40 µs more than the driver's, and the session's connection lookup as much
again, for some eight statements a write. So inside a group commit on SQLite the write's
statements go to the DBAPI cursor of the group's own connection: the same SQL, compiled
once from the same Core statements the other paths run (records.py, database.py), with
values already in the stored form (`stored_fact`), in the same transaction; a driver error
is raised as SQLAlchemy's, so that callers handle it exactly as before. PostgreSQL (the server
mode) keeps SQLAlchemy's execution: its writes wait on the network, not on this."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

from sqlalchemy import exc as sa_exc
from sqlalchemy.dialects import sqlite
from sqlalchemy.orm import Session
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

# Named parameters (:name), which the driver takes from a dict as they are.
_DIALECT = sqlite.dialect(paramstyle="named")


class _Compiled:
    __slots__ = ("defaults", "sql")

    def __init__(self, statement: ClauseElement, columns: Sequence[str] | None) -> None:
        compiled = statement.compile(
            dialect=_DIALECT, column_keys=list(columns) if columns is not None else None
        )
        assert isinstance(compiled, SQLCompiler)
        self.sql = str(compiled)
        # The values the statement carries itself (a LIMIT, the generation row's name).
        self.defaults = {
            name: value
            for name, value in compiled.params.items()
            if value is not None and not compiled.binds[name].required
        }


# By the statement's identity and the columns inserted; the statement is kept with its SQL,
# so that an id is never reused for another (the write path's statements are module-level
# and live as long as the process; the cache stays that small).
_compiled: dict[tuple[int, tuple[str, ...] | None], tuple[ClauseElement, _Compiled]] = {}


def _compile(statement: ClauseElement, columns: Sequence[str] | None) -> _Compiled:
    key = (id(statement), tuple(columns) if columns is not None else None)
    found = _compiled.get(key)
    if found is None or found[0] is not statement:
        found = _compiled[key] = (statement, _Compiled(statement, columns))
    return found[1]


class DriverStatements:
    """A group's statements on its connection's sqlite3 cursor (`for_session` gives None on
    any other database)."""

    def __init__(self, cursor: sqlite3.Cursor) -> None:
        self._cursor = cursor

    @classmethod
    def for_session(cls, session: Session) -> DriverStatements | None:
        connection = session.connection()
        if connection.dialect.name != "sqlite":
            return None
        driver = connection.connection.driver_connection
        if not isinstance(driver, sqlite3.Connection):
            return None
        return cls(driver.cursor())

    def rows(self, statement: ClauseElement, values: dict[str, Any]) -> list[Any]:
        """A query's rows as the driver gives them (stored values: times as ISO text)."""
        compiled = _compile(statement, None)
        return self._run(compiled, {**compiled.defaults, **values}).fetchall()

    def change(self, statement: ClauseElement, values: dict[str, Any] | None = None) -> int:
        """An UPDATE (or DELETE): the number of rows it changed."""
        compiled = _compile(statement, None)
        return self._run(compiled, {**compiled.defaults, **(values or {})}).rowcount

    def insert(self, statement: ClauseElement, rows: Sequence[dict[str, Any]]) -> None:
        """An INSERT of rows that all have the first row's columns."""
        if not rows:
            return
        compiled = _compile(statement, list(rows[0]))
        try:
            if len(rows) == 1:
                self._cursor.execute(compiled.sql, rows[0])
            else:
                self._cursor.executemany(compiled.sql, rows)
        except sqlite3.Error as exc:
            raise _as_sqlalchemy(exc, compiled.sql) from exc

    def _run(self, compiled: _Compiled, values: dict[str, Any]) -> sqlite3.Cursor:
        try:
            return self._cursor.execute(compiled.sql, values)
        except sqlite3.Error as exc:
            raise _as_sqlalchemy(exc, compiled.sql) from exc


def _as_sqlalchemy(error: sqlite3.Error, sql: str) -> sa_exc.DBAPIError:
    """The error SQLAlchemy would have raised for the same driver error."""
    wrapped = sa_exc.DBAPIError.instance(sql, None, error, sqlite3.Error)
    assert isinstance(wrapped, sa_exc.DBAPIError)
    return wrapped
