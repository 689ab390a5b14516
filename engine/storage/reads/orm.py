"""StoreReads through SQLAlchemy (engine/storage/reads/__init__.py): StoreEngine's, on every
database. Each call is a session of its own, as the snapshot's reads were (every statement reads
what is committed; the index code orders its reads so that a write landing between them is applied
again, harmlessly, the next time).

On a SQLite file, what a reader writes never waits for a writer (one stopped while it holds
the database would hold up every reader): a recall's receipt waits at most
READER_WRITE_WAIT_MS, then goes to the pending folder (engine/storage/embedded/receipt_spool.py);
vectors a reader embedded and the store's id are written only if the database is free at
once. PostgreSQL locks rows, not the database: there each write is as before."""

from __future__ import annotations

import secrets
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Engine, Table, select
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session
from sqlmodel import col

from engine.contract import visibility
from engine.contract.normalize import parse_iso
from engine.retrieval.embeddings import vector_to_bytes
from engine.retrieval.snapshot import IndexedFact
from engine.storage.embedded import receipt_spool
from engine.storage.embedded.sqlite_settings import READER_WRITE_WAIT_MS, busy_timeout, is_locked
from engine.storage.reads import IN_CHUNK, CollectionInfo, StoredVector, public_receipt
from engine.storage.reads.snapshot_rows import SNAPSHOT_COLUMNS, store_vectors
from engine.storage.schema import tables
from engine.storage.schema.database import (
    changes_since,
    generation_of,
    last_change,
    sqlite_file_of,
    store_identity,
)

_FACTS = tables.FactRow


class OrmReads:
    def __init__(self, db: Engine, on_receipt: Callable[[], None] | None = None) -> None:
        self._db = db
        self._on_receipt = on_receipt  # told of each receipt (the engine's compaction counts)
        index = sqlite_file_of(db)
        self._sqlite = db.url.get_backend_name() == "sqlite"
        self._pending = receipt_spool.pending_folder(index) if index is not None else None

    @contextmanager
    def _waiting_at_most(self, wait_ms: int) -> Iterator[Connection]:
        """A connection whose statements wait at most `wait_ms` for SQLite's write lock."""
        with self._db.connect() as connection:
            driver = connection.connection.driver_connection
            assert isinstance(driver, sqlite3.Connection)
            with busy_timeout(driver, wait_ms):
                yield connection

    def generation(self) -> int:
        return generation_of(self._db)

    def store_identity(self) -> str | None:
        if not self._sqlite:
            return store_identity(self._db)
        with Session(self._db) as session:
            row = session.get(tables.StoreMetaRow, "store_id")
            if row is not None:
                return str(row.value)
        # Drawn once per database, the first process to draw it wins; not waited for: while
        # a writer holds the database, the index copy on disk goes unused instead.
        try:
            with self._waiting_at_most(0) as connection:
                connection.execute(
                    _DRAW_STORE_ID, {"name": "store_id", "value": secrets.randbits(31)}
                )
                connection.commit()
        except DBAPIError as exc:
            if is_locked(exc.orig):
                return None
            raise
        return store_identity(self._db)

    def last_change(self) -> int:
        with Session(self._db) as session:
            return last_change(session)

    def changes_since(self, seq: int, *, limit: int) -> list[tuple[int, str]] | None:
        with Session(self._db) as session:
            return changes_since(session, seq, limit=limit)

    def current_facts(self, record_ids: Sequence[str]) -> dict[str, IndexedFact]:
        found: dict[str, IndexedFact] = {}
        ids = list(record_ids)
        with Session(self._db) as session:
            for start in range(0, len(ids), IN_CHUNK):
                query = select(*SNAPSHOT_COLUMNS).where(
                    col(_FACTS.record_id).in_(ids[start : start + IN_CHUNK]),
                    visibility.live_clause(_FACTS),
                )
                for row in session.execute(query):
                    found[row.record_id] = IndexedFact.from_row(row)
        return found

    def all_current_facts(self) -> list[IndexedFact]:
        # Plain columns, not ORM objects: building 100k table instances was half of a rebuild.
        query = (
            select(*SNAPSHOT_COLUMNS)
            .where(visibility.live_clause(_FACTS))
            .order_by(col(_FACTS.created_at), col(_FACTS.record_id))
        )
        with Session(self._db) as session:
            return [IndexedFact.from_row(row) for row in session.execute(query)]

    def stored_vectors(self, model_id: str, record_ids: Sequence[str] | None) -> list[StoredVector]:
        embedding = tables.EmbeddingRow
        query = select(
            col(embedding.record_id), col(embedding.content_hash), col(embedding.vector)
        ).where(col(embedding.model_id) == model_id)
        with Session(self._db) as session:
            if record_ids is None:
                rows = list(session.execute(query))  # a rebuild: every vector, in one query
            else:
                ids, rows = list(record_ids), []
                for start in range(0, len(ids), IN_CHUNK):
                    chunk = ids[start : start + IN_CHUNK]
                    rows.extend(session.execute(query.where(col(embedding.record_id).in_(chunk))))
        return [StoredVector(row[0], row[1], row[2]) for row in rows]

    def keep_vectors(
        self, model_id: str, facts: Sequence[IndexedFact], blocks: Sequence[Any]
    ) -> None:
        if not self._sqlite:
            store_vectors(self._db, model_id, facts, blocks)
            return
        rows = [
            {
                "record_id": fact.record_id,
                "model_id": model_id,
                "content_hash": fact.content_hash,
                "vector": vector_to_bytes(block),
            }
            for fact, block in zip(facts, blocks, strict=True)
        ]
        # Best effort, without waiting: derived data, embedded again next time.
        with suppress(DBAPIError), self._waiting_at_most(0) as connection:
            connection.execute(_VECTOR_UPSERT, rows)
            connection.commit()

    def collections(self) -> dict[str, CollectionInfo]:
        with Session(self._db) as session:
            rows = session.scalars(select(tables.CollectionRow)).all()
            return {
                row.name: CollectionInfo(
                    row.name, row.root, row.policy, row.policy_source, row.policy_revision
                )
                for row in rows
            }

    def stored_receipt(self, digest: str) -> dict[str, Any] | None:
        with Session(self._db) as session:
            row = session.get(tables.ReceiptRow, digest)
            if row is None:
                if self._pending is None:
                    return None
                return receipt_spool.find(self._pending, digest)
            assert row.issued_at is not None
            return public_receipt(
                caller=row.caller,
                session=row.session,
                issued_at=row.issued_at,
                memory_ids=row.memory_ids,
                span_hashes=row.span_hashes,
                digest=row.digest,
            )

    def fact_texts(self, record_ids: Sequence[str]) -> dict[str, str]:
        ids = list(dict.fromkeys(record_ids))
        texts: dict[str, str] = {}
        with Session(self._db) as session:
            for start in range(0, len(ids), IN_CHUNK):
                rows = session.execute(
                    select(col(_FACTS.record_id), col(_FACTS.text)).where(
                        col(_FACTS.record_id).in_(ids[start : start + IN_CHUNK])
                    )
                )
                texts.update((row[0], row[1]) for row in rows)
        return texts

    def add_receipt(self, receipt: dict[str, Any], issued_at: datetime) -> None:
        """Store an issued receipt (the same digest again: the same fields, stored once). One
        upsert statement on SQLite and PostgreSQL: the ORM's merge, a read then a write in a
        session, was a twentieth of a 100k-fact recall."""
        if self._on_receipt is not None:
            self._on_receipt()
        values = _receipt_values(receipt, issued_at)
        if self._pending is None:
            with self._db.begin() as connection:
                connection.execute(_RECEIPT_UPSERTS[self._sqlite], values)
            return
        try:
            with self._waiting_at_most(READER_WRITE_WAIT_MS) as connection:
                connection.execute(_RECEIPT_UPSERTS[True], values)
                connection.commit()
        except DBAPIError as exc:
            if not is_locked(exc.orig):
                raise
            receipt_spool.keep(self._pending, receipt)  # stored; moved into the index later
            return
        self.store_pending_receipts()

    def pending_receipts(self) -> list[dict[str, Any]]:
        """The receipts waiting in the pending folder, in the shape their recalls issued."""
        if self._pending is None:
            return []
        return [pending.receipt for pending in receipt_spool.waiting(self._pending)]

    def store_pending_receipts(self, *, wait: bool = False) -> None:
        """Move the receipts waiting in the pending folder into the index. Best effort and
        without waiting (they count as stored where they are), unless `wait`: a caller that
        holds the write lock and must see them in the table (delete, purge) waits as long
        as any statement does."""
        if self._pending is None:
            return
        found = receipt_spool.waiting(self._pending)
        if not found:
            return
        rows = [_receipt_values(p.receipt, parse_iso(p.receipt["issuedAt"])) for p in found]
        if wait:
            with self._db.begin() as connection:
                connection.execute(_RECEIPT_UPSERTS[True], rows)
        else:
            try:
                with self._waiting_at_most(0) as connection:
                    connection.execute(_RECEIPT_UPSERTS[True], rows)
                    connection.commit()
            except DBAPIError:
                return  # left waiting for the next one
        receipt_spool.stored(found)


def _receipt_values(receipt: dict[str, Any], issued_at: datetime) -> dict[str, Any]:
    return {
        "digest": receipt["digest"],
        "caller": receipt["caller"],
        "session": receipt["session"],
        "issued_at": issued_at,
        "memory_ids": list(receipt["memoryIds"]),
        "span_hashes": list(receipt["spanHashes"]),
    }


_RECEIPTS: Table = tables.ReceiptRow.__table__  # type: ignore[attr-defined]
_EMBEDDINGS: Table = tables.EmbeddingRow.__table__  # type: ignore[attr-defined]
_META: Table = tables.StoreMetaRow.__table__  # type: ignore[attr-defined]


def _upsert(dialect_insert: Any, table: Table, key: str, fields: Sequence[str]) -> Any:
    """An upsert on `key`, built once per dialect (building one per recall cost 0.3 ms)."""
    statement = dialect_insert(table)
    return statement.on_conflict_do_update(
        index_elements=[table.c[key]], set_={name: statement.excluded[name] for name in fields}
    )


_RECEIPT_FIELDS = ("caller", "session", "issued_at", "memory_ids", "span_hashes")
# Indexed by "is the database SQLite".
_RECEIPT_UPSERTS = {
    True: _upsert(sqlite_insert, _RECEIPTS, "digest", _RECEIPT_FIELDS),
    False: _upsert(postgresql_insert, _RECEIPTS, "digest", _RECEIPT_FIELDS),
}
_VECTOR_UPSERT = _upsert(
    sqlite_insert, _EMBEDDINGS, "record_id", ("model_id", "content_hash", "vector")
)
# The store's id, drawn by whichever process asks first (the same name again: nothing).
_DRAW_STORE_ID = sqlite_insert(_META).on_conflict_do_nothing()
