"""An in-memory view of the current facts for ranking: the BM25 index, the embedding matrix and
per-scope / per-collection positions. Rebuilt when the store's generation counter moves, so a
write by any process is seen by every other process's next query.

Visibility (scopes, collection, egress, expiry) becomes a boolean mask that is applied before
any ranking or top-k cut, never as a post-filter over a truncated window.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

import numpy as np
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from engine.retrieval.embeddings import Embedder, embed_facts, vector_from_bytes, vector_to_bytes
from engine.retrieval.lexical import Bm25Index
from engine.retrieval.word_alignment import WordAlignment, WordVectors
from engine.storage import tables
from engine.storage.database import read_generation


@dataclass(frozen=True, slots=True)
class IndexedFact:
    record_id: str
    docid: str
    uri: str
    collection: str
    text: str
    content_hash: str
    scopes: tuple[str, ...]
    caller: str
    session: str
    created_at: datetime
    source: str | None
    supersedes: tuple[str, ...]
    expires_at: datetime | None

    @classmethod
    def from_row(cls, row: Any) -> IndexedFact:
        """From a FactRow, or a result row of its SNAPSHOT_COLUMNS (same attribute names)."""
        assert row.created_at is not None
        return cls(
            record_id=row.record_id,
            docid=row.docid,
            uri=row.uri,
            collection=row.collection,
            text=row.text,
            content_hash=row.content_hash,
            scopes=tuple(row.scopes),
            caller=row.caller,
            session=row.session,
            created_at=row.created_at,
            source=row.source,
            supersedes=tuple(row.supersedes),
            expires_at=row.expires_at,
        )


class Snapshot:
    def __init__(
        self,
        generation: int,
        facts: list[IndexedFact],
        blocks: list[np.ndarray] | None,
        dims: int = 0,
        word_vectors: WordVectors | None = None,
    ) -> None:
        self.generation = generation
        self.facts = facts
        # (n, dims) whole-text unit vectors, or None without a model; `rows` stacks every
        # fact's block (whole text, then its sentences) and `starts` says where each begins.
        self.vectors: np.ndarray | None = None
        self.rows: np.ndarray | None = None
        self.starts: np.ndarray | None = None
        if blocks is not None and blocks:
            self.vectors = np.vstack([block[0] for block in blocks])
            self.rows = np.vstack(blocks)
            self.starts = np.cumsum([0] + [len(block) for block in blocks[:-1]])
        elif blocks is not None:
            self.vectors = self.rows = np.zeros((0, dims), dtype=np.float32)
            self.starts = np.zeros(0, dtype=np.int64)
        self.lexical = Bm25Index([fact.text for fact in facts])
        # The semantic leg's word alignment; None without a model, like `vectors`.
        self.alignment = (
            WordAlignment([fact.text for fact in facts], word_vectors)
            if word_vectors is not None
            else None
        )
        self.positions = {fact.record_id: i for i, fact in enumerate(facts)}
        self._by_hash: dict[str, list[int]] = {}
        for position, fact in enumerate(facts):
            self._by_hash.setdefault(fact.content_hash, []).append(position)
        by_scope: dict[str, list[int]] = {}
        by_collection: dict[str, list[int]] = {}
        for position, fact in enumerate(facts):
            for scope in fact.scopes:
                by_scope.setdefault(scope, []).append(position)
            by_collection.setdefault(fact.collection, []).append(position)
        # Index arrays, not lists: numpy would convert a list on every query.
        self._by_scope = {k: np.asarray(v, dtype=np.int64) for k, v in by_scope.items()}
        self._by_collection = {k: np.asarray(v, dtype=np.int64) for k, v in by_collection.items()}
        self._expiry = np.array(
            [fact.expires_at.timestamp() if fact.expires_at else np.inf for fact in facts],
            dtype=np.float64,
        )

    def with_hash(self, content_hash: str) -> list[int]:
        """Positions of the facts with this content hash, oldest first."""
        return self._by_hash.get(content_hash, [])

    def best_cosine(self, query: np.ndarray) -> np.ndarray:
        """Per fact, the cosine of its best row (whole text or one of its sentences)."""
        assert self.rows is not None and self.starts is not None
        if not len(self.facts):
            return np.zeros(0, dtype=np.float32)
        return np.maximum.reduceat(self.rows @ query, self.starts)

    def visible(
        self, *, scopes: Sequence[str], collections: Iterable[str] | None, now: datetime
    ) -> np.ndarray:
        """Mask of facts sharing a scope, in one of `collections` (None: any), not expired."""
        mask = np.zeros(len(self.facts), dtype=bool)
        for scope in scopes:
            if scope in self._by_scope:
                mask[self._by_scope[scope]] = True
        if collections is not None:
            allowed = np.zeros(len(self.facts), dtype=bool)
            for name in collections:
                if name in self._by_collection:
                    allowed[self._by_collection[name]] = True
            mask &= allowed
        mask &= self._expiry > now.timestamp()
        return mask


# What a snapshot reads of each current fact: the FactRow columns named like IndexedFact's fields.
SNAPSHOT_COLUMNS = tuple(getattr(tables.FactRow, field.name) for field in fields(IndexedFact))


class SnapshotCache:
    """Keeps the last snapshot and rebuilds it when the generation counter has moved."""

    def __init__(self, db: Engine, embedder: Embedder | None) -> None:
        self._db = db
        self._embedder = embedder
        self._word_vectors = WordVectors(embedder) if embedder is not None else None
        self._snapshot: Snapshot | None = None
        self._lock = threading.Lock()

    def get(self) -> Snapshot:
        with self._lock:
            with Session(self._db, expire_on_commit=False) as session:
                generation = read_generation(session)
                if self._snapshot is None or self._snapshot.generation != generation:
                    self._snapshot = self._build(session, generation)
            return self._snapshot

    def _build(self, session: Session, generation: int) -> Snapshot:
        # Plain columns, not ORM objects: building 100k table instances was half of a rebuild.
        rows = session.execute(
            select(*SNAPSHOT_COLUMNS)
            .where(tables.FactRow.superseded_by.is_(None))
            .where(tables.FactRow.retired_at.is_(None))
            .order_by(tables.FactRow.created_at, tables.FactRow.record_id)
        ).all()
        facts = [IndexedFact.from_row(row) for row in rows]
        if self._embedder is None:
            return Snapshot(generation, facts, None)
        return Snapshot(
            generation,
            facts,
            self._vectors(session, facts),
            self._embedder.dims,
            self._word_vectors,
        )

    def _vectors(self, session: Session, facts: list[IndexedFact]) -> list[np.ndarray]:
        assert self._embedder is not None
        dims = self._embedder.dims
        embedding = tables.EmbeddingRow
        stored = {
            row.record_id: row
            for row in session.execute(
                select(embedding.record_id, embedding.content_hash, embedding.vector).where(
                    embedding.model_id == self._embedder.model_id
                )
            )
        }
        blocks: list[np.ndarray] = []
        missing: list[int] = []
        for position, fact in enumerate(facts):
            row = stored.get(fact.record_id)
            if row is not None and row.content_hash == fact.content_hash:
                blocks.append(vector_from_bytes(row.vector, dims))
            else:
                blocks.append(np.zeros((1, dims), dtype=np.float32))
                missing.append(position)
        if missing:
            # Facts written by a process without the model (or another model): embed them now
            # and keep the vectors, so the next snapshot does not pay again.
            fresh = embed_facts(self._embedder, [facts[i].text for i in missing])
            for position, block in zip(missing, fresh, strict=True):
                blocks[position] = block
            store_vectors(self._db, self._embedder.model_id, [facts[i] for i in missing], fresh)
        return blocks


def store_vectors(
    db: Engine, model_id: str, facts: Sequence[IndexedFact], vectors: Sequence[np.ndarray]
) -> None:
    """Best effort: a vector is derived data, so failing to keep it loses nothing."""
    try:
        with Session(db, expire_on_commit=False) as session:
            for fact, vector in zip(facts, vectors, strict=True):
                session.merge(
                    tables.EmbeddingRow(
                        record_id=fact.record_id,
                        model_id=model_id,
                        content_hash=fact.content_hash,
                        vector=vector_to_bytes(vector),
                    )
                )
            session.commit()
    except Exception:  # noqa: BLE001 - a locked or read-only index must not break a query
        pass
