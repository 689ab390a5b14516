"""The index's approximate-neighbour graph (engine/retrieval/ann_index.py) over its vector
rows, for stores where scanning every row costs more than a recall may spend.

The graph holds each distinct text once: a fact's rows (its whole text, then its sentences)
go in when no earlier position holds the same content hash. Copies of a text (one persona
fact in eight scopes) have the same rows, and copies crowd each other out of a graph's
neighbour lists (docs/retrieval.md, "Approximate neighbours"). Graph ids are row numbers in
the index, so a row found names its position, and that position's copies are found by hash.

The graph only grows: positions are stable and a fact that leaves recall keeps its rows, so
nothing is removed. Which rows may answer is the caller's visibility mask, applied to what the
graph returns (a text answers when any visible position holds it). Every row returned is
scored exactly (ann_index.py), so a fact's score is the exact scan's; what the graph can get
wrong is which texts come back.

Kept on disk beside the index file, stamped with how many positions it holds and a
fingerprint of which facts those are: a cold process maps it instead of building it (a
million rows took minutes of CPU to build) and adds the positions indexed since, which are
kept beside the mapped graph and scanned exactly. So the file stays valid as the index grows,
and is written again only once the graph is held in memory (built, or loaded past
ann_index.PENDING_LIMIT changes). A file torn, of a rebuilt index (other positions), or
holding other rows than those positions' distinct ones is refused, and the graph is built
again from the index's rows."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from engine.retrieval.ann_file import IndexFileRefused
from engine.retrieval.ann_index import AnnIndex, prefer_exact
from engine.retrieval.array_runs import expand_runs
from engine.retrieval.quantized import QuantizedBlock

# Below this many live facts an exact scan is as fast (ann_index.prefer_exact's measure), so no
# graph is kept at all: a small store pays nothing for it.
GRAPH_MIN_FACTS = 100_000
# How widely a propose's (and an import's) search looks: at 1M rows an expansion of 128 found
# 99.86 % of the likely-tier candidates (benchmarks/results/ann_choice.md).
CANDIDATE_EXPANSION = 128


class SemanticGraph:
    """An AnnIndex over the distinct rows of the index's first `positions` positions."""

    def __init__(
        self,
        index: AnnIndex,
        positions: int,
        *,
        saved: int = 0,
        first: np.ndarray | None = None,
    ) -> None:
        self.index = index
        self.positions = positions  # positions [0, positions) are in the graph
        self.saved = saved  # the positions the file on disk holds (0: none of this graph's)
        # Whole-text rows held (one per distinct text; the rest are sentences): a search of
        # whole texts only lets this share of the graph's rows through.
        self.texts = _texts_in(first, 0, positions) if first is not None else 0

    @classmethod
    def build(
        cls, dims: int, rows: QuantizedBlock, starts: np.ndarray, first: np.ndarray
    ) -> SemanticGraph:
        graph = cls(AnnIndex(dims), 0)
        graph.extend(rows, starts, first)
        return graph

    @classmethod
    def open(
        cls,
        path: Path,
        *,
        dims: int,
        rows: QuantizedBlock,
        starts: np.ndarray,
        first: np.ndarray,
        keys: np.ndarray,
    ) -> SemanticGraph | None:
        """The graph saved at `path`, grown by the positions indexed after those it holds;
        None when there is none or it is refused: damaged, or not of this index's first
        positions (their record and content keys, `keys`, are fingerprinted in the file: an
        index rebuilt since has other positions) or not of their distinct rows."""
        try:
            index = AnnIndex.open(path, dims=dims)
        except (IndexFileRefused, OSError):
            return None
        held, fingerprint = divmod(index.generation, 2**64)
        if (
            held > len(starts)
            or fingerprint != positions_fingerprint(keys, held)
            or len(index) != len(distinct_rows(starts, first, len(rows), 0, held))
        ):
            index.close()
            return None
        graph = cls(index, held, saved=held, first=first)
        graph.extend(rows, starts, first)
        return graph

    @property
    def unsaved(self) -> bool:
        """Whether the file lacks what this graph holds in memory. A graph mapped from its
        file keeps the positions indexed since beside it, and the file stays valid for every
        later index of the same positions (open extends it), so only a graph built or loaded
        into memory is written again."""
        return not self.index.mapped and self.positions > self.saved

    def save(self, path: Path, keys: np.ndarray) -> None:
        """Write the graph, stamped with how many positions it holds and their fingerprint."""
        stamp = (self.positions << 64) | positions_fingerprint(keys, self.positions)
        self.index.save(path, generation=stamp)
        self.saved = self.positions

    def close(self) -> None:
        self.index.close()

    def extend(self, rows: QuantizedBlock, starts: np.ndarray, first: np.ndarray) -> None:
        """Add the distinct rows of the positions indexed since the graph last grew."""
        end = len(starts)
        if end <= self.positions:
            return
        ids = distinct_rows(starts, first, len(rows), self.positions, end)
        if len(ids):
            self.index.add(ids, QuantizedBlock(rows.values[ids], rows.scales[ids]))
        self.texts += _texts_in(first, self.positions, end)
        self.positions = end

    def nearest(
        self,
        query: np.ndarray,
        k: int,
        *,
        starts: np.ndarray,
        reachable: Callable[[np.ndarray], np.ndarray],
        share: float,
        whole_only: bool = False,
        expansion: int | None = None,
        floor: float | None = None,
    ) -> tuple[np.ndarray, float]:
        """The positions holding the graph's k closest rows to `query` that `reachable`
        (positions -> bool) lets through, closest first, each once; and the k-th row's
        cosine, which no row left out exceeds (-1 when every reachable row came back).
        `whole_only`: whole-text rows only (dedup compares whole texts); `floor`: rows under
        this cosine are of no use to the caller (fewer than k may then come back)."""
        ids, scores = self.index.search(
            query, k, allowed=_rows_allowed(starts, reachable, whole_only),
            share=self._share(share, whole_only), expansion=expansion, floor=floor,
        )  # fmt: skip
        return _held(starts, ids, scores, k)

    def nearest_many(
        self,
        queries: np.ndarray,
        k: int,
        *,
        starts: np.ndarray,
        reachable: Callable[[np.ndarray], np.ndarray],
        share: float,
        whole_only: bool = False,
        expansion: int | None = None,
        floor: float | None = None,
    ) -> list[np.ndarray]:
        """`nearest`'s positions for each row of `queries`, the graph walked for all at once."""
        found = self.index.search_many(
            queries, k, allowed=_rows_allowed(starts, reachable, whole_only),
            share=self._share(share, whole_only), expansion=expansion, floor=floor,
        )  # fmt: skip
        return [_held(starts, ids, scores, k)[0] for ids, scores in found]

    def _share(self, text_share: float, whole_only: bool) -> float:
        """The share of the graph's rows a filter lets through, from the share of its texts:
        every row of a text, or (whole_only) the one whole-text row of each."""
        if not whole_only:
            return text_share
        return text_share * self.texts / max(len(self.index), 1)


def _rows_allowed(
    starts: np.ndarray, reachable: Callable[[np.ndarray], np.ndarray], whole_only: bool
) -> Callable[[np.ndarray], np.ndarray]:
    """The graph's filter over row numbers: rows of reachable positions (whole texts only)."""

    def allowed(ids: np.ndarray) -> np.ndarray:
        positions = row_positions(starts, ids)
        keep = np.asarray(reachable(positions), dtype=bool)
        if whole_only:
            keep &= starts[positions] == ids
        return keep

    return allowed


def _held(
    starts: np.ndarray, ids: np.ndarray, scores: np.ndarray, k: int
) -> tuple[np.ndarray, float]:
    """The positions of the rows found, each once at its best row (a whole text and one of
    its sentences can both be found), and the bound: the k-th row's cosine."""
    positions = row_positions(starts, ids)
    _, first_seen = np.unique(positions, return_index=True)
    bound = float(scores[-1]) if len(ids) >= k else -1.0
    return positions[np.sort(first_seen)], bound


def _texts_in(first: np.ndarray, begin: int, end: int) -> int:
    """How many positions in [begin, end) are the first to hold their text."""
    return int(np.count_nonzero(first[begin:end] == np.arange(begin, end)))


def positions_fingerprint(keys: np.ndarray, count: int) -> int:
    """A 64-bit sum of the first `count` positions' keys (each a (record id, content hash)
    key pair), weighted by position: which facts are where."""
    weights = np.arange(1, count + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return int((keys[:count] * weights).sum(dtype=np.uint64))


def row_positions(starts: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The position each row number belongs to."""
    return np.searchsorted(starts, ids, side="right").astype(np.int64) - 1


def distinct_rows(
    starts: np.ndarray, first: np.ndarray, filled: int, begin: int, end: int
) -> np.ndarray:
    """Row numbers of the positions in [begin, end) that are the first to hold their text."""
    positions = np.arange(begin, end, dtype=np.int64)
    own = positions[first[begin:end] == positions]
    if not len(own):
        return np.zeros(0, np.int64)
    after = np.append(starts, filled)
    return expand_runs(starts[own], after[own + 1] - starts[own])


def first_holders(keys: np.ndarray) -> np.ndarray:
    """Per position, the first position with the same key (a content hash's first 64 bits):
    what Snapshot.add records one fact at a time, for a whole index read from its file."""
    order = np.argsort(keys, kind="stable")
    ordered = keys[order]
    begins = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]]) if len(keys) else order
    counts = np.diff(np.append(begins, len(keys)))
    first = np.empty(len(keys), dtype=np.int64)
    first[order] = np.repeat(order[begins], counts)
    return first


def worth_a_graph(live_facts: int) -> bool:
    return live_facts >= GRAPH_MIN_FACTS


def graph_pays(visible: int, total: int, *, batch: bool = False) -> bool:
    """Whether a query that sees `visible` of `total` positions is better asked of the graph
    (`batch`: one of a batch of queries asked at once)."""
    return not prefer_exact(visible, total, batch=batch)
