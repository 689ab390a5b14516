"""Near-duplicate pairs among many facts as arrays, for both backends' `duplicate_pairs`: the
close pairs of a block of unit vectors, lexical similarities in one call per fact, and which
pairs a limited list shows.

A pair is (i, j) with i < j, indices into the facts in the order they were given (oldest
first), so i is the older fact and ties are broken by age without reading the facts. Only the
pairs listed are made into facts: at 10k facts across every scope there were 89k pairs, and
making them all took 12 of the 15 s the old pass cost."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any, TypeVar

import numpy as np

# Rows of the product at a time: 1024 x 10k float32 is 40 MB, where the whole 10k x 10k
# product (then its triangle, then clipped) held 1.2 GB and did every product twice.
BAND_ROWS = 1024

_Pair = TypeVar("_Pair", bound=tuple[Any, ...])


def close_vectors(
    block: np.ndarray, groups: np.ndarray, floor: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(i, j, cosine clipped to 1) of the rows i < j of `block` (unit vectors) of the same
    group (a collection's code) whose cosine is at least `floor`; a band of rows at a time
    against the rows from the band on."""
    found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    for start in range(0, max(len(block) - 1, 0), BAND_ROWS):
        band = block[start : start + BAND_ROWS] @ block[start:].T
        rows, cols = np.nonzero(band >= floor)
        above = cols > rows  # column c of the band is fact start + c: keep j > i
        rows, cols = rows[above], cols[above]
        i, j = rows + start, cols + start
        same = groups[i] == groups[j]
        found.append((i[same], j[same], np.minimum(band[rows[same], cols[same]], 1.0)))
    if not found:
        return empty_pairs()
    i, j, scores = (np.concatenate(parts) for parts in zip(*found, strict=True))
    return i.astype(np.int64), j.astype(np.int64), scores


def fuzzy_similarities(one: str, others: Sequence[str]) -> np.ndarray:
    """lexical.similarity of texts already made fuzzy (lexical.fuzzy_text): the same mean of
    the two rapidfuzz ratios, in float64 as there, for many texts in one call per ratio."""
    from rapidfuzz import fuzz, process

    if not one or not others:
        return np.zeros(len(others))
    ratios = [
        process.cdist([one], others, scorer=scorer, dtype=np.float64)[0]
        for scorer in (fuzz.token_sort_ratio, fuzz.token_set_ratio)
    ]
    scores: np.ndarray = (ratios[0] + ratios[1]) / 200.0
    scores[[not other for other in others]] = 0.0  # as similarity: an empty text matches none
    return scores


def empty_pairs() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float64)


def listed(
    i: np.ndarray,
    j: np.ndarray,
    scores: np.ndarray,
    *,
    limit: int | None,
    skip: Collection[tuple[int, int]] = (),
) -> tuple[np.ndarray, int]:
    """Which pairs a list of at most `limit` shows, best first (similarity as shown, rounded
    to 4 places, then the older pair), leaving out `skip` (pairs (i, j), i < j, a person kept
    both of); and how many pairs there are without `skip`."""
    keep = np.ones(len(i), dtype=bool)
    if skip and len(i):
        width = int(max(j.max(), max(b for _, b in skip))) + 1
        keys = np.fromiter((a * width + b for a, b in skip), np.int64, len(skip))
        keep = ~np.isin(i * width + j, keys)
    kept = np.flatnonzero(keep)
    # round() as DuplicatePair.similarity is rounded: numpy's rounding may differ in the last
    # place, and so order a tie differently from the list the caller sorts.
    shown = np.array([round(score, 4) for score in scores[kept].tolist()], dtype=np.float64)
    order = kept[np.lexsort((j[kept], i[kept], -shown))]
    return (order if limit is None else order[:limit]), len(kept)


def best_of(
    found: list[_Pair], limit: int | None, skip: Collection[frozenset[str]]
) -> tuple[list[_Pair], int]:
    """Of pairs (left id, right id, similarity, ...) in no order: those not in `skip`, best
    first, at most `limit` and any tied with the last of them (the caller breaks ties by the
    facts' age, then cuts); and how many there are without `skip`."""
    skipped = set(skip)
    kept = [pair for pair in found if frozenset(pair[:2]) not in skipped]
    kept.sort(key=lambda pair: -round(pair[2], 4))
    if limit is None or len(kept) <= limit:
        return kept, len(kept)
    last = round(kept[limit - 1][2], 4)
    return [pair for pair in kept if round(pair[2], 4) >= last], len(kept)
