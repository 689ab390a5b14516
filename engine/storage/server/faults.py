"""The server mode's PostgreSQL connections, and what a call answers when the server fails
under it: a contract error with a code, never a driver exception.

`postgres_engine` makes the engine every server-mode store uses. Its pool tests a connection
before handing it out (`pool_pre_ping`), so a connection the server ended while it sat in the
pool (a restart, `pg_terminate_backend`, a failover) is replaced without the call noticing, and
SQLAlchemy drops the whole pool on the first lost connection it sees: after a restart the
next call connects again by itself, in the same process. A connection attempt gives up after
CONNECT_DEFAULTS' connect_timeout and TCP keepalives find a peer that vanished silently, so
no call waits on a dead server without end.

What cannot be hidden is a failure in the middle of a call: the server went away (or ended
the session) during a statement or a commit, cut a statement short (statement_timeout), or
refused a new connection (down, starting up, or every slot taken: max_connections). A
`handle_error` hook turns each of these into a MemoryFailure at the place it happens, so
every surface (CLI, MCP, HTTP, the workbench) answers the same code, and code between the
database and the surface (`except MemoryFailure`) handles it as any contract error:

- MEMORY_QUERY_FAILED (exit 2, HTTP 503): the database is unreachable, full, restarting, or
  failed this call; the message says which and that the call may be retried;
- MEMORY_WRITE_LEASE_BUSY (exit 4, HTTP 409): another session held a lock longer than
  `lock_timeout` (the write lock's own wait, engine/storage/server/parts.py, is one).

Every other database error (a constraint, a bad statement) is left as it was: the code that
runs the statement knows what it means. A failure while the pool tests a connection is left
to the pool too (a dead connection there is replaced, not an error)."""

from __future__ import annotations

from typing import Any

import psycopg
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import ExceptionContext

from engine.contract.errors import MemoryFailure, ServerUnavailable

# libpq settings for every connection to the server, unless the URL sets them: a connection
# attempt gives up after this long, and TCP keepalives notice a silently dropped peer in
# about a minute (libpq ignores them on Unix sockets, which a server restart closes loudly).
CONNECT_DEFAULTS: dict[str, Any] = {
    "connect_timeout": 10,
    "keepalives": 1,
    "keepalives_idle": 30,
    "keepalives_interval": 10,
    "keepalives_count": 3,
}

# SQLSTATEs by what they mean for the caller (PostgreSQL's appendix A).
QUERY_CANCELED = "57014"  # statement_timeout, or pg_cancel_backend
LOCK_NOT_AVAILABLE = "55P03"  # lock_timeout
TOO_MANY_CONNECTIONS = "53300"  # max_connections, or a role's or database's connection limit
_SESSION_ENDED = {"57P01", "57P02", "57P04", "57P05"}  # admin or crash shutdown, dropped, idle
_NOT_ACCEPTING = "57P03"  # the server is starting up or shutting down
_ROLLED_BACK = {"40001", "40P01"}  # serialization failure, deadlock
_REFUSED_LOGIN = ("28", "3D")  # authentication, no such database: the URL, not the server
# psycopg gives no SQLSTATE for a failed connection attempt: the server's words tell these.
_REFUSED_LOGIN_WORDS = ("authentication failed", "does not exist", "no pg_hba.conf entry")
# How much of the server's own message a contract message quotes.
_DETAIL_CHARS = 240

# Retrying is safe: an add whose first attempt was stored after all answers `existing`, and
# a write sent with a requestId answers its first outcome (docs/server.md, "Retries").
_RETRY_LATER = (
    "Retry the call (a retried add answers `existing` if an earlier attempt was stored); "
    "this process connects again by itself once the server answers. If it keeps failing, "
    "check that PostgreSQL is running and that the URL (--db or $GNO_TUI_DB) is right."
)


def postgres_engine(url: str) -> Engine:
    """The engine of a server-mode store on `url` (postgresql+psycopg://...)."""
    engine = create_engine(url, pool_pre_ping=True)
    event.listen(engine, "do_connect", _connect_defaults)
    event.listen(engine, "handle_error", coded_failure)
    return engine


def _connect_defaults(_dialect: Any, _record: Any, _args: Any, params: dict[str, Any]) -> None:
    for name, value in CONNECT_DEFAULTS.items():
        params.setdefault(name, value)


def coded_failure(context: ExceptionContext) -> MemoryFailure | None:
    """SQLAlchemy's handle_error hook: the contract error a failure of the server is, raised
    in the driver error's place (which stays its __cause__, for the log); None leaves the
    error as it is."""
    error = context.original_exception
    if context.is_pre_ping or not isinstance(error, psycopg.Error):
        return None
    connecting = context.connection is None
    if not (connecting or context.is_disconnect or isinstance(error, psycopg.OperationalError)):
        return None
    lost, ending = context.is_disconnect, context.statement is None
    return failure_of(error, connecting=connecting, lost=lost, ending=ending)


def failure_of(
    error: psycopg.Error, *, connecting: bool, lost: bool, ending: bool
) -> MemoryFailure:
    """The contract error for `error`: raised while `connecting`, with the connection `lost`,
    or while `ending` a transaction (its commit or rollback rather than a statement)."""
    state = error.sqlstate or ""
    detail = _detail(error)
    if state == TOO_MANY_CONNECTIONS or "too many clients" in detail:
        return ServerUnavailable(
            f"The database server refused a new connection: every connection slot is taken "
            f"(max_connections, or the role's connection limit) ({detail}). Retry once other "
            "sessions end; if it keeps happening, end idle sessions (pg_stat_activity) or "
            "raise max_connections.",
        )
    refused_login = state.startswith(_REFUSED_LOGIN) or any(
        words in detail for words in _REFUSED_LOGIN_WORDS
    )
    if connecting and refused_login:
        return MemoryFailure(
            "MEMORY_QUERY_FAILED",
            f"The database server refused the login ({detail}). Check the user, password "
            "and database name in the URL (--db or $GNO_TUI_DB).",
        )
    if connecting or state == _NOT_ACCEPTING:
        return ServerUnavailable(
            f"The database server cannot be reached ({detail}): it may be down or "
            f"restarting. {_RETRY_LATER}",
        )
    if state == QUERY_CANCELED:
        return MemoryFailure(
            "MEMORY_QUERY_FAILED",
            f"The database cancelled a statement of this call ({detail}): it ran past "
            "statement_timeout, or waited that long for a lock another session holds, or an "
            "operator cancelled it. The transaction it ran in was rolled back. Retry; if it "
            "keeps happening, look in pg_stat_activity for a session holding locks, or raise "
            "statement_timeout.",
        )
    if state == LOCK_NOT_AVAILABLE:
        return MemoryFailure(
            "MEMORY_WRITE_LEASE_BUSY",
            f"Another database session held a lock this call needed for longer than "
            f"lock_timeout ({detail}); the transaction it ran in was rolled back. Retry "
            "shortly; a stuck session shows in pg_stat_activity and pg_locks.",
        )
    if state in _ROLLED_BACK:
        return MemoryFailure(
            "MEMORY_QUERY_FAILED",
            f"The database rolled back a transaction of this call to settle a conflict with "
            f"another session ({detail}). Retry it.",
        )
    if lost or state in _SESSION_ENDED or state.startswith("08"):
        if ending:
            return ServerUnavailable(
                f"The database connection was lost as this call ended its transaction "
                f"({detail}), so whether its write (if any) was stored is unknown. "
                f"{_RETRY_LATER}",
            )
        return ServerUnavailable(
            f"The database connection was lost during this call ({detail}): the server "
            "restarted or ended the session and rolled back the transaction in progress. "
            f"{_RETRY_LATER}",
        )
    return MemoryFailure(
        "MEMORY_QUERY_FAILED",
        f"The database failed this call ({detail}). Retry it; if it keeps failing, tell the "
        "person running PostgreSQL.",
    )


def _detail(error: psycopg.Error) -> str:
    """The server's own words (its primary message, without the statement), else libpq's
    reason (what follows its last "failed:", without the host or socket it names: an agent
    on another machine is told why, the operator knows where), on one line and bounded."""
    text = error.diag.message_primary or ""
    if not text:
        first = next((line for line in str(error).splitlines() if line.strip()), "")
        text = first.rsplit("failed: ", 1)[-1].removeprefix("FATAL:").strip()
    text = text.strip() or type(error).__name__
    return text if len(text) <= _DETAIL_CHARS else text[: _DETAIL_CHARS - 1] + "…"
