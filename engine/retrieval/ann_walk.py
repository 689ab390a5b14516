"""How far a search of the approximate-neighbour graph (engine/retrieval/ann_index.py) walks,
and which of the ids it returns a caller's filter lets through.

A filter (a query's scopes; whole-text rows only for dedup) is applied to what the graph
returns, so a walk asks for more rows than it needs: `first_count`. A walk that comes back
with too few allowed rows is walked again, wider, unless the caller keeps nothing under a
floor and the walk already reached below it (`reached_below`): every row above the floor
that the graph finds is in."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

# Rows asked of the graph beyond k, scored exactly with the rest, so that rows tied (or
# within float32 rounding) at the k-th place are ordered by their exact scores.
RESCORE_MARGIN = 16
# A search with a floor (only rows at or above a cosine matter: dedup's weak tier) stops
# widening once the walk's farthest row is this far below the floor: the graph's distances
# are of the int8 query, the exact scores of the float one, which differ by less.
FLOOR_MARGIN = 0.02
# A first walk asks for this many times the rows a filter's share says it needs: at 1M facts
# a scope's dedup batch walked again for 62 % of its texts asking for exactly that.
WALK_HEADROOM = 2.0

Allowed = np.ndarray | Callable[[np.ndarray], np.ndarray]


def first_count(size: int, want: int, share: float, expansion: int) -> int:
    """How many rows the first walk returns: WALK_HEADROOM times what `want` allowed ones
    take at the filter's `share` (ask for exactly that and half the walks come back short,
    each walked again), and never fewer than the walk visits anyway (its `expansion`):
    returning those costs nothing more, and lets a filter's unlucky walk through without a
    second one."""
    needed = int(WALK_HEADROOM * want / max(share, 1e-6)) + 1
    return min(size, max(needed, expansion))


def reached_below(distances: Any, floor: float | None) -> bool:
    """Whether a walk that found rows at these cosine distances (closest first) reached past
    `floor`: every row above it that the graph finds is among them."""
    found = np.asarray(distances, dtype=np.float64).reshape(-1)
    return floor is not None and len(found) > 0 and 1.0 - found[-1] < floor - FLOOR_MARGIN


def allowed_ids(ids: np.ndarray, allowed: Allowed | None) -> np.ndarray:
    """Which of `ids` the filter lets through: a boolean mask indexed by id (an id past its
    end is not allowed), or a function of an id array giving one."""
    if allowed is None:
        return np.ones(len(ids), dtype=bool)
    if isinstance(allowed, np.ndarray):
        inside = ids < len(allowed)
        keep = np.zeros(len(ids), dtype=bool)
        keep[inside] = allowed[ids[inside]]
        return keep
    return np.asarray(allowed(ids), dtype=bool)


def allowed_walked(
    walked: np.ndarray,
    counts: np.ndarray,
    hidden: set[int],
    allowed: Allowed | None,
    want: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Of a batch walk's ids (a row per query, the first `counts` of each valid), those
    neither `hidden` nor filtered out, at most `want` a query in walk order: (the query's
    row, the id) pairs, grouped by row."""
    valid = np.arange(walked.shape[1]) < counts[:, None]
    rows, ids = np.nonzero(valid)[0], walked[valid]
    keep = np.ones(len(ids), dtype=bool)
    if hidden:
        keep &= ~np.isin(ids, np.fromiter(hidden, np.int64))
    keep[keep] = allowed_ids(ids[keep], allowed)
    rows, ids = rows[keep], ids[keep]
    place = np.arange(len(rows)) - np.searchsorted(rows, rows, side="left")
    return rows[place < want], ids[place < want]


def walk_all(
    graph: Any,
    queries: np.ndarray,
    count: int,
    *,
    want: int,
    hidden: set[int],
    allowed: Allowed | None,
    floor: float | None,
    threads: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One walk of the graph (a usearch index, its expansion set by the caller) for all the
    int8 `queries`, `count` rows each: the (query, id) pairs allowed (at most `want` a query,
    grouped by query), and which queries came back short (too few allowed, the floor not
    reached, and rows left unwalked)."""
    if not len(graph):  # every row is beside it (a mapped graph emptied, then added to)
        nothing = np.zeros(0, np.int64)
        return nothing, nothing, np.zeros(len(queries), dtype=bool)
    exhaustive = count >= len(graph)
    matches = graph.search(queries, count, threads=threads, exact=exhaustive)
    walked = np.asarray(matches.keys, dtype=np.int64).reshape(len(queries), -1)
    counts = np.asarray(getattr(matches, "counts", [walked.shape[1]])).reshape(-1)
    farthest = np.asarray(matches.distances, dtype=np.float64).reshape(len(queries), -1)
    # Every walk's allowed ids at once, each query's first `want` (closest first): one filter
    # for the batch, and the caller gathers their rows in one call.
    rows, ids = allowed_walked(walked, counts, hidden, allowed, want)
    held = np.bincount(rows, minlength=len(queries))
    short = np.zeros(len(queries), dtype=bool)
    if not exhaustive:
        for row in np.flatnonzero(held < want).tolist():
            short[row] = not reached_below(farthest[row, : counts[row]], floor)
    return rows, ids, short
