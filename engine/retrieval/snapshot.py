"""An in-memory index of the current facts for ranking: BM25, the embedding rows (in int8:
engine/retrieval/quantized.py), word alignment and per-scope / per-collection positions, kept
up to date incrementally.

Every write to `facts` leaves a row in the change log (`fact_changes`, written by triggers:
engine/storage/schema/database.py). When the store's generation counter has moved, a process reads
the changes after the last one it applied and reconciles only those facts with the index
(added, left recall, came back, changed), so another process's write costs a reader
O(changes), not O(store). A reader too far behind (more changes than a quarter of the
store, or changes already pruned from the log) rebuilds once. An index built by applying
changes ranks exactly as one built afresh (tests/engine/test_incremental_index.py): facts
keep their positions, ties are broken by (created_at, record id), never by position, and
the statistics (BM25's document counts and lengths, word alignment's idf) count live facts
only.

Visibility (scopes, collection, egress, expiry, liveness) becomes a boolean mask that is
applied before any ranking or top-k cut, never as a post-filter over a truncated window.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import cast

import numpy as np

from engine.contract import visibility
from engine.retrieval.fact_columns import (
    FactColumns,
    IndexedFact,
    KeyedPositions,
    hash_key,
    record_id_key,
)
from engine.retrieval.growing import GrowingArray, Postings
from engine.retrieval.lexical import Bm25Index
from engine.retrieval.quantized import QuantizedBlock, QuantizedRows, cosines, quantize
from engine.retrieval.semantic_graph import SemanticGraph, graph_pays, worth_a_graph
from engine.retrieval.word_alignment import WordAlignment, WordVectors


class Snapshot:
    """The index. Positions are stable: a fact that leaves recall keeps its position, marked
    not live (its postings stay but count nowhere); one that comes back is live again; one
    whose indexed fields changed leaves and is added anew at the end."""

    def __init__(
        self,
        generation: int,
        change_seq: int,
        dims: int = 0,
        word_vectors: WordVectors | None = None,
        semantic: bool = False,
    ) -> None:
        self.generation = generation
        self.change_seq = change_seq  # the last change log entry this index reflects
        self.lock = threading.RLock()  # held while the index is read or changed
        self.facts = FactColumns()  # by position: a fact is made an object when asked for
        self._semantic = semantic
        # Every position's block (its whole text, then its sentences), in int8; a position's
        # whole-text vector is its block's first row.
        self._dims = max(dims, 1)
        self._rows = QuantizedRows(self._dims)
        self._starts = GrowingArray(np.int64)  # where each position's block begins in _rows
        self._live = GrowingArray(np.bool_, False)
        self._expiry = GrowingArray(np.float64, np.inf)
        # The tie-breaks are the facts' created_at (microseconds, in `facts`), then this: the
        # record id as a number, which also finds a record's positions.
        self._id_key = GrowingArray(np.uint64)
        self._hash_key = GrowingArray(np.uint64)  # the content hash's first 64 bits
        self._by_id = KeyedPositions(self._id_key)
        self.lexical = Bm25Index()
        # The semantic leg's word alignment; None without a model, like `vectors`.
        self.alignment = WordAlignment([], word_vectors) if word_vectors is not None else None
        self._by_hash = KeyedPositions(self._hash_key)
        # The first position holding each position's text (its content hash): the one whose
        # rows the approximate-neighbour graph holds (engine/retrieval/semantic_graph.py).
        self._first = GrowingArray(np.int64)
        self.graph: SemanticGraph | None = None
        self.distinct_texts = 0  # positions that are the first to hold their text
        self._by_scope: dict[str, Postings] = {}
        self._by_collection: dict[str, Postings] = {}
        self.live_count = 0

    # -- reading ----------------------------------------------------------------------------

    @property
    def semantic(self) -> bool:
        """Whether the index holds vectors (a model is loaded)."""
        return self._semantic

    @property
    def rows(self) -> QuantizedBlock | None:
        """Every position's vector rows (int8), or None without a model."""
        return self._rows.view() if self._semantic else None

    def rows_block(self) -> QuantizedBlock:
        """Every position's vector rows (int8; empty rows without a model)."""
        return self._rows.view()

    @property
    def starts(self) -> np.ndarray:
        """Where each position's block begins in `rows` (its whole-text row)."""
        return self._starts.view()

    def whole_vectors(self, positions: np.ndarray) -> np.ndarray:
        """(len(positions), dims) float32: the whole-text vectors of these positions, as the
        products see them (dequantized)."""
        return self._rows.take(self._starts.view()[positions]).floats()

    def whole_rows(self, positions: np.ndarray) -> QuantizedBlock:
        """The whole-text rows (int8) of these positions (a copy)."""
        return self._rows.take(self._starts.view()[positions])

    def whole_cosines(self, query: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """The cosine of each position's whole text with the unit vector `query`."""
        starts = self._starts.view()
        if 4 * len(positions) < len(starts):  # a few: their rows alone
            return cosines(self._rows.take(starts[positions]), query)
        return cast(np.ndarray, cosines(self._rows.view(), query)[starts[positions]])

    @property
    def live(self) -> np.ndarray:
        return self._live.view()

    def order_keys(self, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(created_at, record id) of `positions` as numbers: the order ties are broken in."""
        return self.facts.created_us.view()[positions], self._id_key.view()[positions]

    def position_of(self, record_id: str) -> int | None:
        """The latest position of this record (None: never indexed)."""
        found = self._by_id.matching(record_id_key(record_id), self.facts.record_id, record_id)
        return found[-1] if found else None

    def with_hash(self, content_hash: str) -> list[int]:
        """Live positions of the facts with this content hash, oldest first."""
        key = hash_key(content_hash)
        live = self._live.view()
        found = [
            p for p in self._by_hash.matching(key, self.facts.content_hash, content_hash) if live[p]
        ]
        created, ids = self.facts.created_us.view(), self._id_key.view()
        return sorted(found, key=lambda p: (created[p], ids[p]))

    def best_cosine(self, query: np.ndarray) -> np.ndarray:
        """Per position, the cosine of its best row (whole text or one of its sentences)."""
        if not self.facts:
            return np.zeros(0, dtype=np.float32)
        # Integer products (engine/retrieval/quantized.py): a fact scores the same bits wherever
        # its rows sit, in an index built afresh or grown.
        return np.maximum.reduceat(cosines(self._rows.view(), query), self._starts.view())

    def best_cosine_at(self, query: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """`best_cosine` of these positions only (increasing), reading their rows alone: the
        same values, since a row's product does not depend on which rows are read with it."""
        if not len(positions):
            return np.zeros(0, dtype=np.float32)
        starts = self._starts.view()
        begins = starts[positions]
        # A block ends where the next position's begins; the last one where the rows end.
        following = np.minimum(positions + 1, len(starts) - 1)
        ends = np.where(positions + 1 < len(starts), starts[following], self._rows.filled)
        counts = ends - begins
        # The rows are gathered (copied) a bounded batch at a time: a broad query's candidates
        # can be most of the store, and one gather of them all held a second copy of the int8
        # rows (~470 MiB at 727k facts).
        reached = np.cumsum(counts)
        cuts = np.searchsorted(
            reached, np.arange(1, -(-int(reached[-1]) // GATHER_ROWS)) * GATHER_ROWS, side="right"
        )
        best = np.empty(len(positions), dtype=np.float32)
        for first, last in zip([0, *cuts.tolist()], [*cuts.tolist(), len(positions)], strict=True):
            if first == last:
                continue
            part = counts[first:last]
            offsets = np.cumsum(part) - part  # where each position's rows begin in the gather
            rows = np.repeat(begins[first:last] - offsets, part) + np.arange(int(part.sum()))
            best[first:last] = np.maximum.reduceat(cosines(self._rows.take(rows), query), offsets)
        return best

    def scopes(self) -> list[str]:
        return sorted(scope for scope, postings in self._by_scope.items() if postings.live > 0)

    def visible(
        self, *, scopes: Sequence[str], collections: Iterable[str] | None, now: datetime
    ) -> np.ndarray:
        """Mask of live facts sharing a scope, in one of `collections` (None: any), not
        expired."""
        mask = np.zeros(len(self.facts), dtype=bool)
        for scope in scopes:
            if scope in self._by_scope:
                mask[self._by_scope[scope].arrays()[0]] = True
        if collections is not None:
            allowed = np.zeros(len(self.facts), dtype=bool)
            for name in collections:
                if name in self._by_collection:
                    allowed[self._by_collection[name].arrays()[0]] = True
            mask &= allowed
        return visibility.current_mask(self._live.view(), self._expiry.view(), now, within=mask)

    # -- changing ---------------------------------------------------------------------------

    def add_many(
        self, facts: Sequence[IndexedFact], blocks: Sequence[np.ndarray | QuantizedBlock | None]
    ) -> None:
        """Index current facts at new positions, in order; their new words are embedded for
        the word alignment in one batch."""
        positions = [
            self.add(fact, block, align=False) for fact, block in zip(facts, blocks, strict=True)
        ]
        if self.alignment is not None:
            self.alignment.add_many([(p, f.text) for p, f in zip(positions, facts, strict=True)])
        if self.graph is not None:
            self.graph.extend(self._rows.view(), self._starts.view(), self._first.view())

    def add(
        self, fact: IndexedFact, block: np.ndarray | QuantizedBlock | None, *, align: bool = True
    ) -> int:
        """Index a current fact at a new position (its block: whole text, then sentences; float
        rows are quantized here, a block taken from another index is kept as it is)."""
        position = len(self.facts)
        self.facts.append(fact)
        if self._semantic:
            assert block is not None
            quantized = block if isinstance(block, QuantizedBlock) else quantize(block)
            self._starts.append(self._rows.append(quantized))
        self._live.append(True)
        self._expiry.append(fact.expires_at.timestamp() if fact.expires_at else np.inf)
        id_key, content_key = record_id_key(fact.record_id), hash_key(fact.content_hash)
        self._id_key.append(id_key)
        self._hash_key.append(content_key)
        self._by_id.added(position, id_key)
        earlier = self._by_hash.positions(content_key)
        self._first.append(min(earlier) if earlier else position)
        self.distinct_texts += not earlier
        self._by_hash.added(position, content_key)
        for scope in fact.scopes:
            self._by_scope.setdefault(scope, Postings(np.int8)).append(position, 0)
        self._by_collection.setdefault(fact.collection, Postings(np.int8)).append(position, 0)
        self._count(position, +1)
        self.lexical.add(position, fact.text)
        if align and self.alignment is not None:
            self.alignment.add_many([(position, fact.text)])
        return position

    def leave(self, position: int) -> None:
        """The fact at `position` left recall (superseded, retired, deleted or changed)."""
        text = self.facts.text(position)
        self._live[position] = False
        self._count(position, -1)
        self.lexical.remove(text)
        if self.alignment is not None:
            self.alignment.remove(text)

    def come_back(self, position: int) -> None:
        """The fact at `position` is current again, unchanged (restored, a revert)."""
        text = self.facts.text(position)
        self._live[position] = True
        self._count(position, +1)
        self.lexical.restore(text)
        if self.alignment is not None:
            self.alignment.restore(text)

    def _count(self, position: int, step: int) -> None:
        self.live_count += step
        for scope in self.facts.scopes(position):
            self._by_scope[scope].live += step
        self._by_collection[self.facts.collection(position)].live += step

    # -- the approximate-neighbour graph ----------------------------------------------------

    @property
    def first_holders(self) -> np.ndarray:
        """Per position, the first position holding the same text."""
        return self._first.view()

    @property
    def wants_graph(self) -> bool:
        """Whether the store is large enough to want a graph and has none yet."""
        return self.graph is None and self._semantic and worth_a_graph(self.live_count)

    def graph_rows(self) -> tuple[int, QuantizedBlock, np.ndarray, np.ndarray]:
        """What a graph is built from: the dims, every row, the positions' starts and first
        holders, as they are now (views: the rows of these positions never change)."""
        return self._dims, self._rows.view(), self._starts.view(), self._first.view()

    def adopt_graph(self, graph: SemanticGraph) -> None:
        """Take a graph built from `graph_rows` (on another thread), grown by the positions
        indexed since."""
        graph.extend(self._rows.view(), self._starts.view(), self._first.view())
        self.graph = graph

    def keep_graph(self) -> None:
        """Build the graph when the index wants one (a graph kept is grown by add_many as
        facts arrive)."""
        if self.wants_graph:
            self.graph = SemanticGraph.build(
                self._dims,
                self._rows.view(),
                self._starts.view(),
                self._first.view(),
            )

    def open_graph(self, path: Path) -> None:
        """Take the graph saved at `path` when the store wants one and the file is of this
        index's positions; a file refused leaves none, for keep_graph to build."""
        if self.wants_graph:
            self.graph = SemanticGraph.open(
                path,
                dims=self._dims,
                rows=self._rows.view(),
                starts=self._starts.view(),
                first=self._first.view(),
                keys=self.position_keys(),
            )

    def position_keys(self) -> np.ndarray:
        """Per position, its record id's key and its content hash's, mixed into one 64-bit
        key: what a graph file's fingerprint is made of."""
        with np.errstate(over="ignore"):
            mixed: np.ndarray = self._id_key.view() * np.uint64(0x9E3779B97F4A7C15)
            keys: np.ndarray = mixed ^ self._hash_key.view()
        return keys

    def graph_for(self, mask: np.ndarray, *, batch: bool = False) -> SemanticGraph | None:
        """The graph, when a query that sees `mask` is better asked of it than scanned
        (`batch`: a batch of queries that see it)."""
        visible = int(np.count_nonzero(mask))
        if self.graph is None or not graph_pays(visible, len(mask), batch=batch):
            return None
        return self.graph

    def reachable(self, mask: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """For the graph's filter: whether each (first-holding) position's text is visible,
        at that position or at one of its copies (looked up for the texts the graph returns
        whose own position is not visible)."""
        keys, first = self._hash_key.view(), self._first.view()

        def visible(positions: np.ndarray) -> np.ndarray:
            seen: np.ndarray = mask[positions]
            hidden = np.flatnonzero(~seen)
            if len(hidden):
                held = positions[hidden]
                found, owners = self._by_hash.positions_many(keys[held])
                copied = mask[found] & (first[found] == held[owners])
                seen[hidden[owners[copied]]] = True  # a text visible through a copy
            return seen

        return visible

    def reachable_texts(self, mask: np.ndarray) -> tuple[Callable[[np.ndarray], np.ndarray], float]:
        """`reachable` worked out for every text at once (a pass over the store, ~4 ms at 1M
        facts: for a batch of searches), and the share of the graph's texts it lets through
        (a text copied into every scope is reachable from each, where a scope's own share of
        the positions would have the graph asked for several times too many)."""
        shown = np.zeros(len(mask), dtype=bool)
        shown[self._first.view()[mask]] = True
        share = int(np.count_nonzero(shown)) / max(self.distinct_texts, 1)
        return (lambda positions: shown[positions]), share

    def text_share(self, mask: np.ndarray) -> float:
        """About how many of the graph's texts a query that sees `mask` can reach, without a
        pass over the store: its visible positions against the distinct texts (each visible
        position a text of its own at most), so the graph is asked for enough at once; a
        search asks again, wider, when too few come back."""
        return min(1.0, max(int(np.count_nonzero(mask)), 1) / max(self.distinct_texts, 1))

    def copies(self, positions: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The visible positions holding the texts of these (first-holding) positions, in
        increasing order."""
        keys, first = self._hash_key.view(), self._first.view()
        found, owners = self._by_hash.positions_many(keys[positions])
        kept = mask[found] & (first[found] == positions[owners])
        return np.unique(found[kept])

    def block_of(self, position: int) -> QuantizedBlock | None:
        if not self._semantic:
            return None
        start = int(self._starts.view()[position])
        end = (
            int(self._starts.view()[position + 1])
            if position + 1 < len(self.facts)
            else self._rows.filled
        )
        return self._rows.span(start, end)


# Rows gathered at once by best_cosine_at: 16 MiB of int8 rows at 256 dimensions.
GATHER_ROWS = 65_536
# The names other modules take from here: the index's fact type lives with its columns.
__all__ = ["IndexedFact", "Snapshot", "record_id_key"]
