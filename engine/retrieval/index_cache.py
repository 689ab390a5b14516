"""Keeping a process's index current: load the copy kept on disk or build it, then apply the
change log whenever the store's generation moves (engine/retrieval/snapshot.py says how the
index changes; engine/retrieval/persisted.py how it is kept on disk)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine, select
from sqlalchemy.orm import Session

from engine.retrieval import persisted
from engine.retrieval.embeddings import Embedder, embed_facts, vector_from_bytes
from engine.retrieval.snapshot import SNAPSHOT_COLUMNS, IndexedFact, Snapshot, store_vectors
from engine.retrieval.word_alignment import WordVectors
from engine.storage import tables
from engine.storage.database import (
    changes_since,
    last_change,
    read_generation,
    store_identity,
)

_STATE_COLUMNS = (tables.FactRow.superseded_by, tables.FactRow.retired_at)
# A reader this far behind (changes against live facts) rebuilds instead of applying them.
REBUILD_FRACTION = 0.25
REBUILD_MIN_CHANGES = 2_000
_IN_CHUNK = 500  # record ids per IN (...) query
# The copy on disk is written again once this many changes were applied since it (at least
# SAVE_BEHIND_MIN, else this fraction of the live facts). Every fresh process (each CLI call)
# applies all of them again, ~1 ms apiece at 10k facts (rows read, texts embedded), while a
# write costs one process about what reading the copy costs, ~0.1 s at 10k facts: so an agent
# adding a fact per turn pays at most ~0.2 s of catching up per call, not up to 2 s as with
# the tenth of the store (at least 2,000 changes) that was the rule before.
SAVE_BEHIND_MIN = 200
SAVE_BEHIND_FRACTION = 0.02


class SnapshotCache:
    """Keeps the index and brings it up to date when the generation counter has moved: the
    changes since it, applied; or, the first time and when too far behind, a rebuild."""

    def __init__(
        self, db: Engine, embedder: Embedder | None, index_path: Path | None = None
    ) -> None:
        self._db = db
        self._embedder = embedder
        self._word_vectors = WordVectors(embedder) if embedder is not None else None
        self._snapshot: Snapshot | None = None
        self._lock = threading.Lock()
        self.rebuilds = 0  # how many times the whole index was built (for tests, benchmarks)
        # The index kept on disk (engine/retrieval/persisted.py), None to keep none.
        self._index_path = index_path
        self._saved_at = 0  # change_seq of the last index this process wrote or read
        self.saving: threading.Thread | None = None

    def get(self) -> Snapshot:
        with self._lock:
            with Session(self._db, expire_on_commit=False) as session:
                generation = read_generation(session)
                if self._snapshot is None and self._index_path is not None:
                    self._snapshot = self._load(session)
                snapshot = self._snapshot
                if snapshot is not None and snapshot.generation == generation:
                    return snapshot
                if snapshot is not None and self._catch_up(session, snapshot, generation):
                    self._save_if_far(snapshot)
                    return snapshot
                self._snapshot = self._build(session, generation)
                self._save_if_far(self._snapshot, rebuilt=True)
                return self._snapshot

    def _load(self, session: Session) -> Snapshot | None:
        assert self._index_path is not None
        loaded = persisted.load(
            self._index_path,
            store_id=store_identity(self._db),
            model_id=self._embedder.model_id if self._embedder is not None else None,
            dims=self._embedder.dims if self._embedder is not None else 0,
            word_vectors=self._word_vectors,
            newest_change=last_change(session),
        )
        if loaded is not None:
            self._saved_at = loaded.change_seq
        return loaded

    def _save_if_far(self, snapshot: Snapshot, *, rebuilt: bool = False) -> None:
        """Keep the index on disk for the next process: after a rebuild, or once the changes
        applied since the copy there reach SAVE_BEHIND_MIN or SAVE_BEHIND_FRACTION of the
        store. Written by a thread, so the query that caused it does not wait for the file."""
        if self._index_path is None or snapshot.live_count < persisted.PERSIST_MIN_FACTS:
            return
        behind = snapshot.change_seq - self._saved_at
        far = max(SAVE_BEHIND_MIN, int(snapshot.live_count * SAVE_BEHIND_FRACTION))
        if not rebuilt and behind < far:
            return
        if self.saving is not None and self.saving.is_alive():
            return
        self._saved_at = snapshot.change_seq
        model_id = self._embedder.model_id if self._embedder is not None else None
        store_id = store_identity(self._db)
        path = self._index_path

        def save() -> None:
            try:
                with snapshot.lock:
                    arrays = persisted.prepare(snapshot, store_id, model_id)
                persisted.write(arrays, path)
            except OSError:  # a read-only home keeps no copy; the next process rebuilds
                return

        self.saving = threading.Thread(target=save, name="gno-tui index save")
        self.saving.start()

    def _catch_up(self, session: Session, snapshot: Snapshot, generation: int) -> bool:
        limit = max(REBUILD_MIN_CHANGES, int(snapshot.live_count * REBUILD_FRACTION))
        changes = changes_since(session, snapshot.change_seq, limit=limit)
        if changes is None:
            return False
        changed = list(dict.fromkeys(record_id for _, record_id in changes))
        rows: dict[str, Any] = {}
        for start in range(0, len(changed), _IN_CHUNK):
            chunk = changed[start : start + _IN_CHUNK]
            for row in session.execute(
                select(*SNAPSHOT_COLUMNS, *_STATE_COLUMNS).where(  # type: ignore[call-overload]
                    tables.FactRow.record_id.in_(chunk)  # type: ignore[attr-defined]
                )
            ):
                if row.superseded_by is None and row.retired_at is None:
                    rows[row.record_id] = row
        with snapshot.lock:
            arriving: list[IndexedFact] = []
            for record_id in changed:
                position = snapshot.positions.get(record_id)
                live = position is not None and bool(snapshot.live[position])
                current = rows.get(record_id)
                fact = IndexedFact.from_row(current) if current is not None else None
                if position is not None and fact == snapshot.facts[position]:
                    if not live:
                        snapshot.come_back(position)
                    continue
                if live:
                    assert position is not None
                    snapshot.leave(position)
                if fact is not None:
                    arriving.append(fact)
            arriving.sort(key=lambda f: (f.created_at, f.record_id))
            snapshot.add_many(arriving, self._blocks(session, arriving, snapshot))
            if changes:
                snapshot.change_seq = changes[-1][0]
            snapshot.generation = generation
        return True

    def _build(self, session: Session, generation: int) -> Snapshot:
        self.rebuilds += 1
        # The log's position first: a write that lands while the rows are read is in the
        # rows and in the log after it, and applying it again changes nothing.
        change_seq = last_change(session)
        # Plain columns, not ORM objects: building 100k table instances was half of a rebuild.
        rows = session.execute(
            select(*SNAPSHOT_COLUMNS)
            .where(tables.FactRow.superseded_by.is_(None))  # type: ignore[union-attr]
            .where(tables.FactRow.retired_at.is_(None))  # type: ignore[union-attr]
            .order_by(tables.FactRow.created_at, tables.FactRow.record_id)  # type: ignore[arg-type]
        ).all()
        facts = [IndexedFact.from_row(row) for row in rows]
        embedder = self._embedder
        snapshot = Snapshot(
            generation,
            change_seq,
            embedder.dims if embedder is not None else 0,
            self._word_vectors,
            semantic=embedder is not None,
        )
        blocks = self._blocks(session, facts, None)
        with snapshot.lock:
            snapshot.add_many(facts, blocks)
        return snapshot

    def _blocks(
        self, session: Session, facts: list[IndexedFact], snapshot: Snapshot | None
    ) -> list[np.ndarray | None]:
        """Each fact's vector block: kept in the index already (same record, same text), or
        stored by the writer, or embedded now (and stored for the next reader)."""
        if self._embedder is None:
            return [None] * len(facts)
        dims = self._embedder.dims
        blocks: list[np.ndarray | None] = [None] * len(facts)
        wanted: dict[str, int] = {}
        for index, fact in enumerate(facts):
            old = snapshot.positions.get(fact.record_id) if snapshot is not None else None
            if (
                snapshot is not None
                and old is not None
                and snapshot.facts[old].content_hash == fact.content_hash
            ):
                blocks[index] = snapshot.block_of(old)
                continue
            wanted[fact.record_id] = index
        embedding = tables.EmbeddingRow
        query = select(embedding.record_id, embedding.content_hash, embedding.vector).where(  # type: ignore[call-overload]
            embedding.model_id == self._embedder.model_id
        )
        ids = list(wanted)
        if snapshot is None:
            stored = list(session.execute(query))  # a rebuild: every vector, in one query
        else:
            stored = []
            for start in range(0, len(ids), _IN_CHUNK):
                chunk = ids[start : start + _IN_CHUNK]
                stored.extend(session.execute(query.where(embedding.record_id.in_(chunk))))  # type: ignore[attr-defined]
        for row in stored:
            index_of = wanted.get(row.record_id)
            if index_of is not None and row.content_hash == facts[index_of].content_hash:
                blocks[index_of] = vector_from_bytes(row.vector, dims)
        missing = [index for index in wanted.values() if blocks[index] is None]
        if missing:
            # Facts written by a process without the model (or another model): embed them now
            # and keep the vectors, so the next reader does not pay again.
            fresh = embed_facts(self._embedder, [facts[i].text for i in missing])
            for index, block in zip(missing, fresh, strict=True):
                blocks[index] = block
            store_vectors(self._db, self._embedder.model_id, [facts[i] for i in missing], fresh)
        return blocks
