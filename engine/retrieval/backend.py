"""When the PostgreSQL backend of the retrieval seam applies (its entry in
engine/retrieval/registry.py): the database is PostgreSQL with the pgvector extension
installed, or creatable by this user. Where `$GNO_TUI_RETRIEVAL=postgres` insists on it and it
cannot be had, the refusal says how to install pgvector; under `auto` the store ranks in
process instead."""

from __future__ import annotations

import logging

from sqlalchemy import Engine, text
from sqlalchemy.exc import DBAPIError

from engine.contract.errors import MemoryFailure
from engine.retrieval.seam import RETRIEVAL_ENV

INSTALL_PGVECTOR = (
    "Install pgvector on the server (Debian/Ubuntu: apt install postgresql-<major>-pgvector; "
    "macOS: brew install pgvector; managed services: enable the `vector` extension), then have "
    "a superuser or the database owner run CREATE EXTENSION vector; in that database. Or set "
    f"{RETRIEVAL_ENV}=memory to rank in process."
)

log = logging.getLogger("engine.retrieval")


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


def pgvector_ready(db: Engine, insisted: bool) -> bool:
    """Whether this PostgreSQL database can rank inside itself; where that was `insisted` on
    and it cannot, MEMORY_QUERY_FAILED saying how to install pgvector."""
    problem = vector_problem(db)
    if problem is None:
        return True
    if insisted:
        raise MemoryFailure(
            "MEMORY_QUERY_FAILED", f"Cannot rank inside the database: {problem}. {INSTALL_PGVECTOR}"
        )
    log.info("gno-tui: ranking in process, as %s", problem)
    return False
