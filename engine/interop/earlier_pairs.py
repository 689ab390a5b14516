"""Which earlier items of an import file each item nearly repeats (engine/interop/import_plan.py
decides with them).

Items are compared within groups that share a target collection and a scope: by one matrix
product per chunk of rows with the model, else by rapidfuzz (small groups) or by fence form
(large ones). The pairs at or above the weak tier are kept as flat arrays, grouped by the later
item and best first, not as an object per pair: a 100k-line file of persona facts has ~900k
such pairs, and only the items that become proposals ever read theirs in full.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

import numpy as np
from rapidfuzz import fuzz, process

from engine.contract.normalize import fence_form
from engine.retrieval.lexical import fuzzy_text
from engine.retrieval.matching import LEXICAL_TIERS, SEMANTIC_TIERS, Tiers

# Items compared pairwise by rapidfuzz without a model; a larger group compares fence forms.
LEXICAL_GROUP_LIMIT = 2_000
# Rows of one group's similarity matrix computed at once (memory: rows x group size floats).
ROW_CHUNK = 256
# A pair's tier by code: what tier_of names it, "weak" below the weak floor once rounded.
TIER_NAMES = ("weak", "likely", "exact")
LIKELY_CODE = 1
# Within a chunk of rows, the columns of the same chunk that come strictly before each row.
_BEFORE = np.tri(ROW_CHUNK, ROW_CHUNK, -1, dtype=bool)


@dataclass(frozen=True)
class Earlier:
    """An earlier item of the same file that this one nearly repeats."""

    item: int
    similarity: float
    tier: str


class Repeats(Sequence[Earlier]):
    """Some earlier items of one item, best first, made into `Earlier` only when read."""

    def __init__(self, items: np.ndarray, scores: np.ndarray, tiers: np.ndarray) -> None:
        self._items = items.tolist()
        self._scores = scores.tolist()
        self._tiers = tiers.tolist()

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Earlier: ...

    @overload
    def __getitem__(self, index: slice) -> list[Earlier]: ...

    def __getitem__(self, index: int | slice) -> Earlier | list[Earlier]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return Earlier(self._items[index], self._scores[index], TIER_NAMES[self._tiers[index]])

    def __iter__(self) -> Iterator[Earlier]:
        for item, score, tier in zip(self._items, self._scores, self._tiers, strict=True):
            yield Earlier(item, score, TIER_NAMES[tier])


class EarlierPairs:
    """Per item of the file, its earlier items at or above the weak tier, best first (similarity
    down, then file order); an item sharing several groups with another counts it once, with
    the best similarity."""

    def __init__(
        self, later: np.ndarray, first: np.ndarray, score: np.ndarray, size: int, tiers: Tiers
    ) -> None:
        order = np.lexsort((first, -score, later))
        self._later = later[order]
        self._first = first[order]
        self._score = score[order]
        self._tier = np.zeros(len(order), dtype=np.int8)
        # The thresholds compare the rounded score, as tier_of does.
        self._tier[self._score >= tiers.likely] = LIKELY_CODE
        self._tier[self._score >= tiers.exact] = LIKELY_CODE + 1
        self._bounds = np.searchsorted(self._later, np.arange(size + 1)).tolist()
        # An item's pairs come best first, so its likely and exact ones are the first of them:
        # how many, per item (made into `Earlier` only when asked, for the few items with any).
        likely = self._later[self._tier >= LIKELY_CODE]
        self._likely_count = np.bincount(likely, minlength=size).tolist()

    def likely(self, item: int) -> list[Earlier]:
        """The earlier items `item` repeats at the likely or exact tier, best first."""
        count = self._likely_count[item]
        if not count:
            return []
        low = self._bounds[item]
        return list(Repeats(self._first[low : low + count], self._score[low : low + count],
                            self._tier[low : low + count]))  # fmt: skip

    def repeats(self, item: int, added: np.ndarray) -> Repeats:
        """The earlier items `item` repeats (any tier) among those `added` marks, best first."""
        low, high = self._bounds[item], self._bounds[item + 1]
        first = self._first[low:high]
        kept = added[first]
        return Repeats(first[kept], self._score[low:high][kept], self._tier[low:high][kept])


def earlier_pairs(
    texts: list[str],
    scopes: list[list[str]],
    targets: list[str],
    members: list[int],
    vectors: np.ndarray | None,
) -> EarlierPairs:
    """The pairs among `members` (items of the file) that share a target collection and a
    scope, each scored as remember would score the later item against the earlier one."""
    tiers = SEMANTIC_TIERS if vectors is not None else LEXICAL_TIERS
    groups: dict[tuple[str, str], list[int]] = {}  # (target, scope) -> rows of `members`
    for row, item in enumerate(members):
        for scope in scopes[item]:
            groups.setdefault((targets[item], scope), []).append(row)
    items = np.asarray(members, dtype=np.int64)
    laters, firsts, scores = [], [], []
    for rows in groups.values():
        if len(rows) < 2:
            continue
        if vectors is not None:
            later, first, score = _semantic_pairs(vectors[rows], tiers)
        elif len(rows) <= LEXICAL_GROUP_LIMIT:
            later, first, score = _lexical_pairs([texts[members[r]] for r in rows], tiers)
        else:
            later, first, score = _fence_pairs([texts[members[r]] for r in rows])
        group = np.asarray(rows, dtype=np.int64)
        laters.append(items[group[later]])
        firsts.append(items[group[first]])
        scores.append(score)
    if not laters:
        empty = np.zeros(0, dtype=np.int64)
        return EarlierPairs(empty, empty, np.zeros(0), len(texts), tiers)
    later_all, first_all = np.concatenate(laters), np.concatenate(firsts)
    score_all = _rounded(np.concatenate(scores))
    # The floor compares the rounded score, as tier_of does (0.65998 is weak: it shows 0.66).
    floor = score_all >= tiers.weak
    later_all, first_all, score_all = later_all[floor], first_all[floor], score_all[floor]
    if sum(len(rows) for rows in groups.values()) > len(members):
        # Items in several groups: one pair per (later, first), its best similarity.
        order = np.lexsort((-score_all, first_all, later_all))
        later_all, first_all, score_all = later_all[order], first_all[order], score_all[order]
        keep = np.ones(len(order), dtype=bool)
        keep[1:] = (later_all[1:] != later_all[:-1]) | (first_all[1:] != first_all[:-1])
        later_all, first_all, score_all = later_all[keep], first_all[keep], score_all[keep]
    return EarlierPairs(later_all, first_all, score_all, len(texts), tiers)


def _rounded(values: np.ndarray) -> np.ndarray:
    """Each score rounded to 4 places exactly as Python's round() rounds it (the scores of
    remember's dedup), as float64. numpy rounds x * 10**4 to an integer and divides; for a
    float32 score (every score here is one, or 1.0) that product is exact in float64 (24 + 14
    bits), so both round the same number, half to even, and end on the same double."""
    return np.round(values.astype(np.float64), 4)


# How far under a floor a score can be and still round up to it (4 places).
_ROUNDS_UP = 5e-5


def _semantic_pairs(block: np.ndarray, tiers: Tiers) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(later rows, earlier rows, cosines clipped to 1) of every pair at or above the weak
    tier, later row by later row."""
    laters, firsts, scores = [], [], []
    for start in range(0, len(block), ROW_CHUNK):
        end = min(start + ROW_CHUNK, len(block))
        similarity = block[start:end] @ block[:end].T
        hit = similarity >= tiers.weak - _ROUNDS_UP
        hit[:, start:end] &= _BEFORE[: end - start, : end - start]
        rows, cols = _hits(hit)
        laters.append(rows + start)
        firsts.append(cols)
        scores.append(np.minimum(similarity[rows, cols], 1.0))
    return np.concatenate(laters), np.concatenate(firsts), np.concatenate(scores)


def _lexical_pairs(texts: list[str], tiers: Tiers) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """As the lexical dedup scores a pair (engine/retrieval/lexical.py `similarity`): the mean
    of rapidfuzz's token-sort and token-set ratios over the texts' words; a text without words
    matches nothing."""
    words = [fuzzy_text(text) for text in texts]
    sort = process.cdist(words, words, scorer=fuzz.token_sort_ratio, dtype=np.float32)
    kept = process.cdist(words, words, scorer=fuzz.token_set_ratio, dtype=np.float32)
    similarity = (sort + kept) / 200.0
    hit = np.tril(similarity >= tiers.weak - _ROUNDS_UP, -1)
    has_words = np.asarray([bool(w) for w in words])
    hit &= has_words[:, None] & has_words[None, :]
    rows, cols = _hits(hit)
    return rows, cols, similarity[rows, cols]


def _hits(hit: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The (row, column) of every true cell of a C-ordered matrix, row by row: as np.nonzero
    gives them, at a tenth of its cost on a sparse matrix (it unravels two dimensions)."""
    flat = np.flatnonzero(hit)
    rows, cols = np.divmod(flat, hit.shape[1])
    return rows, cols


def _fence_pairs(texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Items whose fence forms are equal (the same sentence, differently written) pair with the
    first item of that form, as exact duplicates."""
    first_of: dict[str, int] = {}
    laters: list[int] = []
    firsts: list[int] = []
    for later, text in enumerate(texts):
        form = fence_form(text)
        if form in first_of:
            laters.append(later)
            firsts.append(first_of[form])
        else:
            first_of[form] = later
    later_rows = np.asarray(laters, dtype=np.int64)
    return later_rows, np.asarray(firsts, dtype=np.int64), np.ones(len(laters))
