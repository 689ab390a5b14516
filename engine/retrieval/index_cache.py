"""Keeping a process's index current: load the copy kept on disk or build it, then apply the
change log whenever the store's generation moves (engine/retrieval/snapshot.py says how the
index changes; engine/retrieval/persisted.py how it is kept on disk)."""

from __future__ import annotations

import threading
from contextlib import nullcontext
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from engine.retrieval import persisted
from engine.retrieval.embeddings import Embedder, embed_facts, vector_from_bytes
from engine.retrieval.heap import keep_scratch_in_heap
from engine.retrieval.index_saver import SAVER, SaveJob
from engine.retrieval.quantized import QuantizedBlock
from engine.retrieval.semantic_graph import SemanticGraph
from engine.retrieval.snapshot import IndexedFact, Snapshot
from engine.retrieval.word_alignment import WordVectors

if TYPE_CHECKING:
    from engine.retrieval.source import IndexSource

# A reader this far behind (changes against live facts) rebuilds instead of applying them.
REBUILD_FRACTION = 0.25
REBUILD_MIN_CHANGES = 2_000
# The copy on disk is written again once this many changes were applied since it (at least
# SAVE_BEHIND_MIN, else this fraction of the live facts). Every fresh process (each CLI call)
# applies all of them again, ~0.2-0.3 ms apiece at 10k facts (rows read, texts tokenised; ~1
# ms before the vector blocks were read with room to append, engine/retrieval/persisted.py),
# while a write costs one process about what reading the copy costs, ~0.1 s at 10k facts: so
# an agent adding a fact per turn pays at most ~0.05 s of catching up per call, not up to 2 s
# as with the tenth of the store (at least 2,000 changes) that was the rule before.
SAVE_BEHIND_MIN = 200
# The changes an importing process applies to its own index after the import, at most (the
# import's own facts, added at the end: cheaper to apply than a rebuild, which also rebuilds
# the approximate-neighbour graph).
UNBOUNDED = 2**62
SAVE_BEHIND_FRACTION = 0.02
# Rows an import may leave beside a mapped graph (each later query scans them exactly and
# filters them by its scopes); past this many it writes the graph whole (_settle_graph). A
# few thousand rows beside it cost a query well under a millisecond.
SETTLE_AFTER_IMPORT = 2_000


class SnapshotCache:
    """Keeps the index and brings it up to date when the generation counter has moved: the
    changes since it, applied; or, the first time and when too far behind, a rebuild. It
    reads the store through `reads` (engine/storage/reads/__init__.py): the ORM's, or sqlite3's on a
    cold CLI call, the same answers either way."""

    def __init__(
        self, reads: IndexSource, embedder: Embedder | None, index_path: Path | None = None
    ) -> None:
        keep_scratch_in_heap()  # a recall's temporaries reused (engine/retrieval/heap.py)
        self._reads = reads
        self._embedder = embedder
        # Word vectors live in the index's word alignment only (engine/retrieval/
        # word_alignment.py, WordVectors): a copy here grew with every word other processes add.
        self._word_vectors = WordVectors(embedder, keep=False) if embedder is not None else None
        self._snapshot: Snapshot | None = None
        self._lock = threading.Lock()
        self.rebuilds = 0  # how many times the whole index was built (for tests, benchmarks)
        # The index kept on disk (engine/retrieval/persisted.py), None to keep none.
        self._index_path = index_path
        self._saved_at = 0  # change_seq of the last index this process wrote or read
        self.saving: SaveJob | None = None  # the last save handed to the process's saver
        self._graph_unsaved = False  # a graph was built that the file beside the index lacks
        self.building: threading.Thread | None = None  # the graph being built, if one is

    @property
    def held(self) -> bool:
        """Whether this process has an index (built, read, or caught up) to keep current."""
        return self._snapshot is not None

    def get(self, *, after_bulk: bool = False) -> Snapshot:
        """The index, current. `after_bulk`: this process has just written many facts (an
        import): it applies them however many, where another reader that far behind would
        rebuild, and so leaves the index (and its graph) for the next process to read."""
        building = self.building
        if after_bulk and building is not None:
            # A graph being built (since the import began) is waited for and adopted, not
            # built a second time beside it: at a million rows each build is minutes of CPU.
            # Outside the lock, which the build takes to adopt.
            building.join()
        with self._lock:
            generation = self._reads.generation()
            if self._snapshot is None and self._index_path is not None:
                self._snapshot = self._load()
            snapshot = self._snapshot
            if snapshot is not None and snapshot.generation == generation:
                if snapshot.wants_graph:
                    self._keep_graph(snapshot)
                return snapshot
            if snapshot is not None and self._catch_up(snapshot, generation, after_bulk):
                self._keep_graph(snapshot, wait=after_bulk)
                if after_bulk:
                    self._settle_graph(snapshot)
                self._save_if_far(snapshot)
                return snapshot
            self._snapshot = self._build(generation)
            self._keep_graph(self._snapshot, wait=after_bulk)
            self._save_if_far(self._snapshot, rebuilt=True)
            return self._snapshot

    def _keep_graph(self, snapshot: Snapshot, *, wait: bool = False) -> None:
        """Give a large index its approximate-neighbour graph when it has none (the one saved
        beside the index file was refused or is missing): built from the index's rows on a
        thread of its own while queries scan exactly, as before (at a million rows a build
        takes minutes of CPU), then written with the index. `wait`: built here (an import,
        which leaves the graph for the next process)."""
        if not snapshot.wants_graph:
            return
        if wait:
            with snapshot.lock:
                snapshot.keep_graph()
            self._graph_unsaved = snapshot.graph is not None
            return
        if self.building is not None and self.building.is_alive():
            return
        self.building = threading.Thread(
            target=self._build_graph, args=(snapshot,), name="gno-tui-graph", daemon=True
        )
        self.building.start()

    def _settle_graph(self, snapshot: Snapshot) -> None:
        """After an import: a mapped graph that holds the import's rows beside it is loaded
        and written whole, so that later processes map them in the graph instead of
        scanning (and filtering) them exactly on every query (at 956k facts, 19k rows left
        beside the graph took a propose from 17 to 33 ms)."""
        graph = snapshot.graph
        if graph is None or graph.index.changes_beside < SETTLE_AFTER_IMPORT:
            return
        with snapshot.lock:
            graph.index.load_into_memory()
        self._graph_unsaved = graph.unsaved

    def _build_graph(self, snapshot: Snapshot) -> None:
        with snapshot.lock:
            if not snapshot.wants_graph:
                return
            rows = snapshot.graph_rows()
        # Outside the index's lock: the rows of positions already there never change, and
        # the positions added meanwhile are added to the graph when it is adopted.
        graph = SemanticGraph.build(*rows)
        with snapshot.lock:
            snapshot.adopt_graph(graph)
        with self._lock:
            if snapshot is self._snapshot:
                self._graph_unsaved = True
                self._save_if_far(snapshot)

    def _load(self) -> Snapshot | None:
        assert self._index_path is not None
        store_id = self._reads.store_identity()
        if store_id is None:  # not drawn yet, and a writer holds the database: no copy is ours
            return None
        loaded = persisted.load(
            self._index_path,
            store_id=store_id,
            model_id=self._embedder.model_id if self._embedder is not None else None,
            dims=self._embedder.dims if self._embedder is not None else 0,
            word_vectors=self._word_vectors,
            newest_change=self._reads.last_change(),
        )
        if loaded is not None:
            self._saved_at = loaded.change_seq
            loaded.open_graph(persisted.graph_file(self._index_path))
        return loaded

    def _save_if_far(self, snapshot: Snapshot, *, rebuilt: bool = False) -> None:
        """Keep the index on disk for the next process: after a rebuild, or once the changes
        applied since the copy there reach SAVE_BEHIND_MIN or SAVE_BEHIND_FRACTION of the
        store. Written by the process's saver thread (engine/retrieval/index_saver.py), so the
        query that caused it does not wait for the file."""
        if self._index_path is None or snapshot.live_count < persisted.PERSIST_MIN_FACTS:
            return
        behind = snapshot.change_seq - self._saved_at
        far = max(SAVE_BEHIND_MIN, int(snapshot.live_count * SAVE_BEHIND_FRACTION))
        if not rebuilt and behind < far and not self._graph_unsaved:
            return
        # One save at a time is enough for the index (the next one writes what this one
        # missed), but a graph just built is written after it rather than dropped.
        if self.saving is not None and self.saving.is_alive() and not self._graph_unsaved:
            return
        store_id = self._reads.store_identity()
        if store_id is None:  # see _load: saved by a later query instead
            return
        self._saved_at = snapshot.change_seq
        model_id = self._embedder.model_id if self._embedder is not None else None
        path = self._index_path

        self._graph_unsaved = False

        def write() -> None:
            try:
                with snapshot.lock:
                    arrays = persisted.prepare(snapshot, store_id, model_id)
                    # The graph, when the file lacks what it holds (semantic_graph.py).
                    if snapshot.graph is not None and snapshot.graph.unsaved:
                        snapshot.graph.save(persisted.graph_file(path), snapshot.position_keys())
                persisted.write(arrays, path)
            except OSError:  # a read-only home keeps no copy; the next process rebuilds
                return

        self.saving = SAVER.submit(write)  # engine/retrieval/index_saver.py: one thread

    def _catch_up(self, snapshot: Snapshot, generation: int, after_bulk: bool = False) -> bool:
        limit = max(REBUILD_MIN_CHANGES, int(snapshot.live_count * REBUILD_FRACTION))
        if after_bulk:
            limit = UNBOUNDED
        changes = self._reads.changes_since(snapshot.change_seq, limit=limit)
        if changes is None:
            return False
        changed = list(dict.fromkeys(record_id for _, record_id in changes))
        current = self._reads.current_facts(changed)
        with snapshot.lock:
            arriving: list[IndexedFact] = []
            for record_id in changed:
                position = snapshot.position_of(record_id)
                live = position is not None and bool(snapshot.live[position])
                fact = current.get(record_id)
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
            snapshot.add_many(arriving, self._blocks(arriving, snapshot))
            if changes:
                snapshot.change_seq = changes[-1][0]
            snapshot.generation = generation
        return True

    def _build(self, generation: int) -> Snapshot:
        self.rebuilds += 1
        # The log's position first: a write that lands while the rows are read is in the
        # rows and in the log after it, and applying it again changes nothing.
        change_seq = self._reads.last_change()
        facts = self._reads.all_current_facts()
        embedder = self._embedder
        snapshot = Snapshot(
            generation,
            change_seq,
            embedder.dims if embedder is not None else 0,
            self._word_vectors,
            semantic=embedder is not None,
        )
        blocks = self._blocks(facts, None)
        # The words the index being replaced holds keep their vectors: only new ones embed.
        replaced = self._snapshot.alignment if self._snapshot is not None else None
        vectors = self._word_vectors
        reusing = vectors.reusing(replaced) if vectors is not None else nullcontext()
        with snapshot.lock, reusing:
            snapshot.add_many(facts, blocks)
        return snapshot

    def _blocks(
        self, facts: list[IndexedFact], snapshot: Snapshot | None
    ) -> list[np.ndarray | QuantizedBlock | None]:
        """Each fact's vector block: kept in the index already (same record, same text), or
        stored by the writer, or embedded now (and stored for the next reader)."""
        if self._embedder is None:
            return [None] * len(facts)
        dims = self._embedder.dims
        blocks: list[np.ndarray | QuantizedBlock | None] = [None] * len(facts)
        wanted: dict[str, int] = {}
        for index, fact in enumerate(facts):
            old = snapshot.position_of(fact.record_id) if snapshot is not None else None
            if (
                snapshot is not None
                and old is not None
                and snapshot.facts.content_hash(old) == fact.content_hash
            ):
                blocks[index] = snapshot.block_of(old)
                continue
            wanted[fact.record_id] = index
        model_id = self._embedder.model_id
        # A rebuild reads every vector in one query; a catch-up those of the facts it adds.
        stored = self._reads.stored_vectors(model_id, None if snapshot is None else list(wanted))
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
            self._reads.keep_vectors(model_id, [facts[i] for i in missing], fresh)
        return blocks
