"""Which backend of the retrieval seam a store uses.

`$GNO_TUI_RETRIEVAL` chooses: `auto` (the default) ranks inside the database when it is
PostgreSQL with the pgvector extension installed, or creatable by this user, and in process
otherwise; `postgres` insists on the database (and says how to install pgvector where it is
missing); `memory` always ranks in process. `gno-tui status` shows the choice."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from engine.contract.errors import MemoryFailure
from engine.retrieval.embeddings import Embedder

if TYPE_CHECKING:
    from engine.retrieval.postgres import PostgresIndex

RETRIEVAL_ENV = "GNO_TUI_RETRIEVAL"
CHOICES = ("auto", "postgres", "memory")
IN_MEMORY = "in-memory"
INSTALL_PGVECTOR = (
    "Install pgvector on the server (Debian/Ubuntu: apt install postgresql-<major>-pgvector; "
    "macOS: brew install pgvector; managed services: enable the `vector` extension), then have "
    "a superuser or the database owner run CREATE EXTENSION vector; in that database. Or set "
    f"{RETRIEVAL_ENV}=memory to rank in process."
)

log = logging.getLogger("engine.retrieval")


def chosen() -> str:
    choice = (os.environ.get(RETRIEVAL_ENV) or "auto").strip().lower()
    if choice not in CHOICES:
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID",
            f"${RETRIEVAL_ENV} is {choice!r}; use one of {', '.join(CHOICES)}.",
        )
    return choice


def vector_problem(db: Engine) -> str | None:
    """None when the vector extension is in the database (created here if it can be), else why
    not."""
    exists = "SELECT 1 FROM pg_extension WHERE extname = 'vector'"
    with db.connect() as connection:
        if connection.scalar(text(exists)):
            return None
        available = connection.scalar(
            text("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
        )
    if available is None:
        return "the PostgreSQL server has no pgvector extension installed"
    try:
        with db.begin() as connection:
            connection.execute(text("CREATE EXTENSION IF NOT EXISTS vector"))
    except DBAPIError as exc:
        with db.connect() as connection:
            if connection.scalar(text(exists)):  # another process created it meanwhile
                return None
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        return f"pgvector is installed but CREATE EXTENSION vector failed ({reason})"
    return None


def server_index(db: Engine, embedder: Embedder | None) -> PostgresIndex | None:
    """The in-database index where the choice and the database allow it, else None (rank in
    process). Raises MEMORY_QUERY_FAILED when `postgres` was asked for and cannot be had."""
    choice = chosen()
    if choice == "memory":
        return None
    if db.dialect.name != "postgresql":
        if choice == "postgres":
            raise MemoryFailure(
                "MEMORY_QUERY_FAILED",
                f"{RETRIEVAL_ENV}=postgres needs a PostgreSQL database: pass --db "
                "postgresql://user@host/db (or set $GNO_TUI_DB).",
            )
        return None
    problem = vector_problem(db)
    if problem is None:
        # Imported here: a store on SQLite (every CLI call on one) never loads the PostgreSQL
        # backend's modules.
        from engine.retrieval.postgres import PostgresIndex

        return PostgresIndex(db, embedder)
    if choice == "postgres":
        raise MemoryFailure(
            "MEMORY_QUERY_FAILED", f"Cannot rank inside the database: {problem}. {INSTALL_PGVECTOR}"
        )
    log.info("gno-tui: ranking in process, as %s", problem)
    return None
