"""Approximate nearest neighbours over the index's int8 rows: an HNSW graph (usearch), for when
a scan of every row costs more than a recall may spend (issue 38; docs/retrieval.md,
"Approximate neighbours: the library and why", has the measurements behind the choice).

The graph holds the engine's own int8 rows (engine/retrieval/quantized.py) and only chooses
which ids to score: every answer is scored again by quantized.cosines from those rows, so an
id's score is the exact scan's, bit for bit. What the graph can get wrong is which ids come
back (a close row it did not reach); benchmarks/results/ann_choice.md measures how often.

On disk (engine/retrieval/ann_file.py): usearch's serialisation and a checked trailer,
written atomically and opened by mapping; a damaged or stale file is refused and the caller
rebuilds.

A mapped graph cannot change (an add to a usearch view crashes the process), so changes made
after opening are kept beside it: added rows are scanned exactly, removed ids skipped. Past
PENDING_LIMIT of them the graph is loaded into memory and the changes applied to it.

Not thread-safe: the caller holds its index lock (Snapshot.lock) around every call."""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

# quantized (and so simsimd) must be imported before usearch: usearch loads numkong with
# RTLD_GLOBAL, and numkong's parse_tensor then shadows simsimd's in a simsimd loaded later,
# breaking every product of the exact scan. Loaded first, simsimd keeps its own. usearch itself
# is imported by the first graph made (_new_graph): it costs a fifth of a CLI call's imports
# (it loads urllib and tqdm), and a store below GRAPH_MIN_FACTS never makes one.
from engine.retrieval.quantized import QuantizedBlock, cosines, quantize  # isort: skip
from engine.retrieval.ann_file import (
    DamagedIndexFile,
    map_graph,
    write_graph,
)
from engine.retrieval.ann_walk import (
    RESCORE_MARGIN,
    Allowed,
    allowed_ids,
    first_count,
    reached_below,
    walk_all,
)

if TYPE_CHECKING:
    from usearch.index import Index

# The graph as measured (benchmarks/results/ann_choice.md, `module`): 32 links a node, a build
# expansion of 128. A search expansion of 1024 found 99.91 % of the exact top 64 at 100k
# facts (1.2 ms) and 98.39 % at 1M (7.6 ms); callers pass their own for other k.
CONNECTIVITY = 32
EXPANSION_ADD = 128
EXPANSION_SEARCH = 1024
SEED_ROWS = 2_000  # see add
# Changes kept beside a mapped graph before it is loaded and changed itself (an exact scan of
# this many rows is ~1 ms).
PENDING_LIMIT = 20_000
# prefer_exact, from the same measurements at 1M rows: the visible rows gathered and scanned
# cost ~72 ns a row on one core (10k rows: 0.72 ms), a top-64 search of the graph 7.6 ms, so
# under 100k visible rows the scan is as fast and exact. Under 5 % visible the graph must be
# asked for 20 times k to find k visible rows (1 % visible, k=64: 54 ms against 0.72).
EXACT_BELOW_VISIBLE = 100_000
EXACT_BELOW_SHARE = 0.05
# A batch of searches (an import's dedup) walks the graph on every core at once and, asking
# for likely-tier rows, only a few rows deep, so its cost hardly grows with the rows where the
# scan's does: 8,192 texts went through the graph at 2,595 a second against the scan's 3,449
# with 42k rows visible, and at 2,147 against 702 with 122k (benchmarks/results/
# import_dedup.md, import_dedup_1m.md); the two cross near 60k.
BATCH_EXACT_BELOW_VISIBLE = 60_000


def prefer_exact(visible_count: int, total: int, *, batch: bool = False) -> bool:
    """Whether an exact scan of the visible rows beats the graph: few visible rows (a small
    store is one) or a narrow filter (benchmarks/results/ann_choice.md). `batch`: for a
    batch of likely-tier searches, whose shallow walks cost less a search."""
    fewest = BATCH_EXACT_BELOW_VISIBLE if batch else EXACT_BELOW_VISIBLE
    return visible_count < fewest or visible_count < EXACT_BELOW_SHARE * total


def row_scales(values: np.ndarray) -> np.ndarray:
    """Each int8 row's factor, 1 / |values|, worked out as quantize does (the same bits)."""
    length = np.sqrt(np.einsum("ij,ij->i", values, values, dtype=np.int64).astype(np.float64))
    scales: np.ndarray = np.divide(1.0, length, out=np.zeros(len(values)), where=length > 0)
    return scales.astype(np.float32)


class AnnIndex:
    """Ids (non-negative ints: the caller's row numbers) with one int8 row each. Give it one
    row per distinct vector (the engine: one per content hash, its copies found by the hash):
    copies of a row crowd each other out of the graph's neighbour lists, and at 100k facts
    (70 % copies) a node per copy missed 4 % of the top 10 at ef 512, a node per distinct
    row 1.8 % (docs/retrieval.md, "Approximate neighbours")."""

    def __init__(self, dims: int, *, generation: int = 0) -> None:
        self.dims = dims
        self.generation = generation  # what the caller says the rows reflect (saved with them)
        self._graph = self._new_graph()
        # The file a viewed graph reads, and the view of its graph's bytes.
        self._mapped: mmap.mmap | None = None
        self._blob: memoryview | None = None
        # Changes since a mapped graph was opened: rows added, and graph ids removed.
        self._pending: dict[int, np.ndarray] = {}
        self._pending_block: tuple[np.ndarray, np.ndarray] | None = None
        self._hidden: set[int] = set()

    def _new_graph(self) -> Index:
        from usearch.index import Index

        return Index(
            ndim=self.dims,
            metric="cos",
            dtype="i8",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )

    def __len__(self) -> int:
        return len(self._graph) - len(self._hidden) + len(self._pending)

    @property
    def mapped(self) -> bool:
        """Whether the graph is read from its file (changes kept beside it)."""
        return self._blob is not None

    # -- changing ---------------------------------------------------------------------------

    def add(self, ids: np.ndarray, rows: np.ndarray | QuantizedBlock) -> None:
        """Add rows (float unit vectors, quantized here, or int8 rows as the index keeps
        them); an id already present is replaced."""
        keys = _keys(ids)
        values = rows.values if isinstance(rows, QuantizedBlock) else quantize(rows).values
        if len(keys) != len(values) or values.shape[1] != self.dims:
            raise ValueError(f"{len(keys)} ids for rows of shape {values.shape}")
        if len(np.unique(keys)) != len(keys):
            raise ValueError("an id is given twice")
        if self.mapped and len(self._pending) + len(keys) <= PENDING_LIMIT:
            in_graph = self._graph.contains(keys)
            self._hidden.update(keys[in_graph].tolist())
            self._pending.update(zip(keys.tolist(), np.ascontiguousarray(values), strict=True))
            self._pending_block = None
            return
        self._load_into_memory()
        present = keys[self._graph.contains(keys)]
        if len(present):
            self._graph.remove(present)
        values = np.ascontiguousarray(values)
        # An empty graph's first rows go in on one thread: usearch's threads, racing over the
        # first entry points, built graphs missing 2-4 % of the top 256 at 5,000 rows.
        seed = SEED_ROWS if not len(self._graph) and len(keys) > SEED_ROWS else 0
        if seed:
            self._graph.add(keys[:seed], values[:seed], threads=1)
        self._graph.add(keys[seed:], values[seed:], threads=_threads(len(keys) - seed))

    def remove(self, ids: np.ndarray) -> None:
        """Remove rows; an id not present is ignored."""
        keys = _keys(ids)
        if self.mapped and len(self._hidden) + len(keys) <= PENDING_LIMIT:
            for key in keys.tolist():
                self._pending.pop(key, None)
            self._pending_block = None
            self._hidden.update(keys[self._graph.contains(keys)].tolist())
            return
        self._load_into_memory()
        present = keys[self._graph.contains(keys)]
        if len(present):
            self._graph.remove(present)

    @property
    def changes_beside(self) -> int:
        """Rows added or removed beside a mapped graph (each query scans the added exactly)."""
        return len(self._pending) + len(self._hidden)

    def load_into_memory(self) -> None:
        """Hold the graph in memory, the changes kept beside it applied (then `save` writes
        them into the file)."""
        self._load_into_memory()

    def _load_into_memory(self) -> None:
        """A mapped graph copied into memory, with the changes kept beside it applied."""
        if self._blob is None:
            return
        graph = self._new_graph()
        graph.load(self._blob)
        self._graph = graph  # the view is dropped (freed at once) before its file is unmapped
        self._unmap()
        if self._hidden:
            self._graph.remove(np.fromiter(self._hidden, np.uint64))
        if self._pending:
            keys = np.fromiter(self._pending, np.uint64)
            self._graph.add(keys, np.vstack(list(self._pending.values())))
        self._pending, self._pending_block, self._hidden = {}, None, set()

    # -- searching --------------------------------------------------------------------------

    def search(
        self,
        query: np.ndarray,
        k: int,
        *,
        allowed: Allowed | None = None,
        share: float | None = None,
        expansion: int | None = None,
        floor: float | None = None,
    ) -> tuple[np.ndarray, np.ndarray]:
        """The k closest allowed ids to the unit vector `query` (float32) and their cosines,
        best first (ties by id), scored exactly as quantized.cosines scores them. `allowed`:
        a boolean mask indexed by id (an id past its end is not allowed), or a function of an
        id array giving such a mask; `share`: the part of the ids it lets through, when known
        (a mask's is counted), so that the graph is asked for enough ids at once; `floor`:
        the caller keeps no row scoring below it, so fewer than k ids are enough once every
        row the graph found closer than the floor is in."""
        if k <= 0 or not len(self):
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        if share is None and isinstance(allowed, np.ndarray):
            share = max(float(np.count_nonzero(allowed)), 1.0) / max(len(allowed), 1)
        asked = quantize(query).values[0]
        want = k + RESCORE_MARGIN
        found = self._search_graph(asked, want, allowed, share or 1.0, expansion, floor)
        pending_ids, pending_values = self._pending_rows()
        kept = allowed_ids(pending_ids, allowed)
        ids = np.concatenate([found, pending_ids[kept]])
        values = np.vstack([self._stored(found), pending_values[kept]])
        scores = cosines(QuantizedBlock(values, row_scales(values)), query)
        order = np.lexsort((ids, -scores))[:k]
        return ids[order], scores[order]

    def search_many(
        self,
        queries: np.ndarray,
        k: int,
        *,
        allowed: Allowed | None = None,
        share: float = 1.0,
        expansion: int | None = None,
        floor: float | None = None,
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """`search` for each row of `queries` (unit vectors, float32), the graph walked for
        all of them at once on every core (an import's dedup). A query whose walk lets too
        few ids through (and, with a `floor`, found rows above it to its end) is walked
        again, wider, with the others of its kind, never alone: walks grow as `search`'s do.
        With a floor, the first walk is of `expansion` rows only: a high floor (an import's
        likely tier) is usually reached within them, whatever the filter's share."""
        if k <= 0 or not len(self) or not len(queries):
            return [(np.zeros(0, np.int64), np.zeros(0, np.float32)) for _ in queries]
        size = len(self._graph)
        want = k + RESCORE_MARGIN
        hidden_share = 1.0 - len(self._hidden) / size if size else 1.0
        widest = first_count(size, want, share * hidden_share, expansion or EXPANSION_SEARCH)
        count = min(widest, expansion or EXPANSION_SEARCH) if floor is not None else widest
        pending_ids, pending_values = self._pending_rows()
        kept_pending = allowed_ids(pending_ids, allowed)
        pending_block = QuantizedBlock(
            pending_values[kept_pending], row_scales(pending_values[kept_pending])
        )
        found: list[tuple[np.ndarray, np.ndarray]] = [
            (np.zeros(0, np.int64), np.zeros(0, np.float32)) for _ in queries
        ]
        asking = np.arange(len(queries))
        while len(asking):
            # usearch's types call the property read-only; it has a setter. The count is at
            # least the expansion unless the walk is exhaustive.
            setattr(self._graph, "expansion_search", count)  # noqa: B010
            rows, ids, short = walk_all(
                self._graph, quantize(queries[asking]).values, count,
                want=want, hidden=self._hidden, allowed=allowed, floor=floor,
                threads=_threads(1_000),
            )  # fmt: skip
            held = np.bincount(rows, minlength=len(asking))
            bounds = np.concatenate([np.zeros(1, np.int64), np.cumsum(held)])
            stored = self._stored(ids)
            scales = row_scales(stored)
            for row in np.flatnonzero(~short).tolist():
                mine = slice(int(bounds[row]), int(bounds[row + 1]))
                candidates = np.concatenate([ids[mine], pending_ids[kept_pending]])
                block = QuantizedBlock(
                    np.vstack([stored[mine], pending_block.values]),
                    np.concatenate([scales[mine], pending_block.scales]),
                )
                scores = cosines(block, queries[asking[row]])
                order = np.lexsort((candidates, -scores))[:k]
                found[int(asking[row])] = (candidates[order], scores[order])
            asking = asking[short]
            count = widest if count < widest else min(size, 2 * count)
        return found

    def _stored(self, ids: np.ndarray) -> np.ndarray:
        """The int8 rows the graph holds for these ids (each present)."""
        if not len(ids):
            return np.zeros((0, self.dims), np.int8)
        got = self._graph.get(ids.astype(np.uint64), "i8")
        rows = [row for row in (got if isinstance(got, tuple) else (got,)) if row is not None]
        if len(rows) != len(ids):
            raise KeyError("an id the graph returned has no row")
        return np.vstack(rows)

    def _pending_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows kept beside a mapped graph, as arrays (made once per change)."""
        if self._pending_block is None:
            ids = np.fromiter(self._pending, np.int64, len(self._pending))
            values = np.zeros((len(ids), self.dims), np.int8)
            for row, key in enumerate(ids.tolist()):
                values[row] = self._pending[key]
            self._pending_block = ids, values
        return self._pending_block

    def _search_graph(
        self,
        asked: np.ndarray,
        want: int,
        allowed: Allowed | None,
        share: float,
        expansion: int | None,
        floor: float | None = None,
    ) -> np.ndarray:
        """Up to `want` allowed, not hidden ids the graph finds closest. A filter is applied
        to what the graph returns, so it is asked for more (by the share it lets through),
        doubling until enough are allowed; past the graph's size it scans every row."""
        size = len(self._graph)
        if not size:
            return np.zeros(0, np.int64)
        share *= 1.0 - len(self._hidden) / size  # hidden ids come back from the graph too
        count = first_count(size, want, share, expansion or EXPANSION_SEARCH)
        while True:
            exhaustive = count >= size
            # usearch's types call the property read-only; it has a setter. The count is at
            # least the expansion (first_count, then doubled) unless the search is exhaustive.
            setattr(self._graph, "expansion_search", count)  # noqa: B010
            matches = self._graph.search(asked, count, threads=1, exact=exhaustive)
            found: np.ndarray = np.asarray(matches.keys, dtype=np.int64)
            if self._hidden:
                found = found[~np.isin(found, np.fromiter(self._hidden, np.int64))]
            found = found[allowed_ids(found, allowed)]
            if len(found) >= want or exhaustive or reached_below(matches.distances, floor):
                return found[:want]
            count = min(size, 2 * count)

    # -- the file ---------------------------------------------------------------------------

    def save(self, path: Path, *, generation: int | None = None) -> None:
        """Write the index to `path` atomically (engine/retrieval/ann_file.py), with the
        generation its rows reflect (the caller's: e.g. the change log position)."""
        if generation is not None:
            self.generation = generation
        self._load_into_memory()
        write_graph(
            path,
            self._graph.save,
            {"generation": self.generation, "rows": len(self._graph), "dims": self.dims},
        )

    @classmethod
    def open(cls, path: Path, *, dims: int, generation: int | None = None) -> AnnIndex:
        """The index saved at `path`, its graph mapped from the file. Refused
        (IndexFileRefused) when the file is damaged, of other dims, or of a generation other
        than `generation` (None: any; the index's `generation` says which)."""
        mapped, blob, header = map_graph(path, dims=dims, generation=generation)
        index = cls(dims, generation=header["generation"])
        index._mapped, index._blob = mapped, blob
        try:
            index._graph.view(index._blob)
            if len(index._graph) != header["rows"] or index._graph.ndim != dims:
                raise DamagedIndexFile(f"{path}: the graph does not hold what the trailer says")
        except BaseException:
            index.close()
            raise
        return index

    def close(self) -> None:
        """Let go of the graph and its file (the index is empty afterwards)."""
        self._graph = self._new_graph()  # the old graph, and its view, freed at once
        self._unmap()
        self._pending, self._pending_block, self._hidden = {}, None, set()

    def _unmap(self) -> None:
        if self._blob is not None:
            self._blob.release()
            self._blob = None
        if self._mapped is not None:
            self._mapped.close()
            self._mapped = None


def _keys(ids: np.ndarray) -> np.ndarray:
    keys = np.asarray(ids).reshape(-1)
    if len(keys) and (keys.dtype.kind not in "iu" or int(keys.min()) < 0):
        raise ValueError("ids are non-negative integers")
    return keys.astype(np.uint64)


def _threads(rows: int) -> int:
    """A bulk add uses the machine's cores; a write's few rows stay on this thread."""
    return 0 if rows >= 1_000 else 1
