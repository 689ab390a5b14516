"""The server store's parts (engine/storage/server/store.py: a PostgreSQL database is
canonical): the write lock as a database advisory lock, collections as rows without a
folder, the keyed API's cursor secret in the database, and reindex as a rebuild of derived
data only.

Homes on many machines share one database, so nothing that orders writes or that every
process must agree on may live in a home: the write lock is `pg_advisory_lock` on one key of
the database (every engine on it takes the same key, whatever its home), waited for up to the
engine's lock timeout with PostgreSQL's own `lock_timeout`, so no process polls."""

from __future__ import annotations

import logging
import secrets
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, Engine, select, text
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.orm import Session
from sqlmodel import col

from engine.contract.errors import MemoryFailure
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation

if TYPE_CHECKING:
    from engine.storage.mode import StoreEngine

log = logging.getLogger("engine.storage")

# One advisory lock key for every engine writing to this database (the schema migration and
# the derived tables use keys of their own: engine/storage/schema/version.py,
# retrieval/pg_derived.py).
WRITE_LOCK_KEY = zlib.crc32(b"gno-tui:write")
# The lock under which the keyed API's cursor key is drawn, once per database.
SECRET_LOCK_KEY = zlib.crc32(b"gno-tui:keyed-secret")
# PostgreSQL's SQLSTATE for a lock wait cut short by lock_timeout.
LOCK_NOT_AVAILABLE = "55P03"
# The keyed API's cursor key: this many store_meta rows of 31 random bits each (the table
# holds integers), 248 bits in all.
_SECRET_PARTS = 8


def lease_busy(timeout: float) -> MemoryFailure:
    return MemoryFailure(
        "MEMORY_WRITE_LEASE_BUSY",
        f"Another gno-tui writing to this database held its write lock for {timeout:g} s. "
        "Retry shortly; if a writer is stuck, its session shows in pg_stat_activity "
        "(pg_locks, locktype 'advisory') and ending it frees the lock.",
    )


@contextmanager
def advisory_write_lock(db: Engine, timeout: float) -> Iterator[None]:
    """Hold the database's write lock (a session-level advisory lock on a connection of its
    own) for the block; MEMORY_WRITE_LEASE_BUSY when another session holds it for longer
    than `timeout` seconds. The block's writes commit on other connections while it is held,
    so they are ordered by it; if this process dies, the server frees the lock with its
    connection."""
    connection = db.connect()
    try:
        try:
            # lock_timeout 0 would mean "wait forever": at least one millisecond.
            wait_ms = max(1, round(timeout * 1000))
            connection.execute(text(f"SET lock_timeout = {wait_ms}"))
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": WRITE_LOCK_KEY})
            connection.execute(text("RESET lock_timeout"))
            connection.commit()  # not idle in a transaction while the block runs
        except MemoryFailure as failure:  # lock_timeout, coded by engine/storage/server/faults.py
            if failure.code == "MEMORY_WRITE_LEASE_BUSY":
                raise lease_busy(timeout) from None
            raise
        except DBAPIError as exc:  # an engine made without pg_faults' hook
            if getattr(exc.orig, "sqlstate", None) == LOCK_NOT_AVAILABLE:
                raise lease_busy(timeout) from None
            raise
        try:
            yield
        finally:
            _unlock(connection)
    finally:
        connection.close()


def _unlock(connection: Connection) -> None:
    """Let the write lock go. When its connection fails here (the server restarted or ended
    the session, perhaps after the block's writes committed), the connection is dropped
    rather than pooled: PostgreSQL frees a session's advisory locks when the session ends, so
    the lock goes either way, and the block's own outcome (its result, or its error) stands
    instead of this failure, which would have hidden a committed write behind an error."""
    try:
        connection.rollback()  # a failed statement of the block must not stop the unlock
        connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": WRITE_LOCK_KEY})
        connection.commit()
    except (MemoryFailure, DBAPIError) as exc:
        log.warning("gno-tui: the write lock's connection failed (%s); dropped it", exc)
        connection.invalidate()  # the session ends, and its advisory lock with it


def add_database_collection(
    engine: StoreEngine, name: str, path: str | Path | None, policy: str, policy_source: str
) -> tables.CollectionRow:
    """A collection in the server mode, under the write lock the caller holds: a row with an
    empty root and no folder. A folder would be one machine's, while the collection is every
    home's: --path is refused."""
    if path:
        raise MemoryFailure(
            "MEMORY_COLLECTION_INVALID",
            f"--path does not apply in the server mode: collection {name!r} lives in the "
            "database, shared by every home, and has no folder. Drop --path; to get its "
            "facts as files, run `gno-tui export --format gno --output DIR`. No collection "
            "was added.",
        )
    with Session(engine.db, expire_on_commit=False) as session:
        if session.get(tables.CollectionRow, name) is not None:
            raise MemoryFailure(
                "MEMORY_COLLECTION_INVALID",
                f"Collection {name!r} already exists; pick another name or change its "
                f"policy with `gno-tui collection set-policy {name} POLICY`.",
            )
        row = tables.CollectionRow(
            name=name, root="", policy=policy, policy_source=policy_source, created_at=engine.now()
        )
        session.add(row)
        bump_generation(session)
        session.commit()
        session.refresh(row)
        session.expunge(row)
    return row


def database_cursor_secret(engine: StoreEngine) -> bytes:
    """The keyed API's cursor key for this database, drawn once by whichever engine asks first
    (under SECRET_LOCK_KEY), so a cursor cut by one home verifies on every other."""

    def read() -> bytes | None:
        with Session(engine.db) as session:
            rows = session.scalars(
                select(tables.StoreMetaRow).where(
                    col(tables.StoreMetaRow.name).in_(_secret_names())
                )
            ).all()
        values = {row.name: row.value for row in rows}
        if len(values) != _SECRET_PARTS:
            return None
        return b"".join(int(values[name]).to_bytes(4, "big") for name in _secret_names())

    found = read()
    if found is not None:
        return found
    # Drawn under a lock of its own, held for the draw only, not the write lock: a keyed read
    # must not wait for a writer (one stopped while it holds the write lock included).
    with Session(engine.db) as session:
        session.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": SECRET_LOCK_KEY})
        if read() is None:
            for name in _secret_names():
                session.merge(tables.StoreMetaRow(name=name, value=secrets.randbits(31)))
            try:
                session.commit()
            except IntegrityError:  # drawn by an engine of another gno-tui meanwhile
                session.rollback()
    found = read()
    if found is None:
        raise MemoryFailure("MEMORY_INTERNAL", "Could not store the keyed API's cursor secret.")
    return found


def _secret_names() -> list[str]:
    return [f"keyed_secret_{part}" for part in range(_SECRET_PARTS)]


def rebuild_derived(
    engine: StoreEngine, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """reindex in the server mode, under the write lock: every fact's vector recomputed where
    it is missing or belongs to another model or text, and the database's search tables
    (engine/retrieval/pg_derived.py, with their per-sentence vector rows) rebuilt from the
    facts. No fact row is added, changed or removed: the rows are the facts."""
    from engine.retrieval.embeddings import embed_facts, vector_to_bytes

    embedder = engine.embedder_status.embedder
    with Session(engine.db) as session:
        facts = session.execute(
            text("SELECT record_id, content_hash, text FROM facts ORDER BY record_id")
        ).all()
        vectors = {
            row.record_id: (row.model_id, row.content_hash)
            for row in session.execute(
                text("SELECT record_id, model_id, content_hash FROM embeddings")
            )
        }
    embedded = 0
    if embedder is not None:
        stale = [
            fact
            for fact in facts
            if vectors.get(fact.record_id) != (embedder.model_id, fact.content_hash)
        ]
        for start in range(0, len(stale), 1000):
            chunk = stale[start : start + 1000]
            blocks = embed_facts(embedder, [fact.text for fact in chunk])
            with Session(engine.db) as session:
                for fact, block in zip(chunk, blocks, strict=True):
                    session.merge(
                        tables.EmbeddingRow(
                            record_id=fact.record_id,
                            model_id=embedder.model_id,
                            content_hash=fact.content_hash,
                            vector=vector_to_bytes(block),
                        )
                    )
                session.commit()
            embedded += len(chunk)
            if progress:
                progress(embedded, len(stale))
    with engine.db.begin() as connection:
        # The search tables' state rows say what they reflect; without them the next query
        # rebuilds fact_search and fact_vectors from the facts (absent tables: nothing to do).
        exists = connection.scalar(text("SELECT to_regclass('fact_search_state') IS NOT NULL"))
        if exists:
            connection.execute(text("DELETE FROM fact_search_state"))
    index = engine.retrieval()
    index.catch_up()  # the search tables rebuilt now rather than by the next query
    searched = (
        "rebuilt the search tables"
        if index.name == "postgres"
        else "ranks in process (no pgvector), from the rows"
    )
    notes = [
        f"server mode: the facts are the database's rows, so reindex changed none of the "
        f"{len(facts)} facts; it recomputed {embedded} vectors and {searched}."
    ]
    return {
        "files": 0,
        "indexed": len(facts),
        "added": 0,
        "changed": 0,
        "removed": 0,
        "problems": [],
        "forks": [],
        "duplicates": [],
        "notes": notes,
    }
