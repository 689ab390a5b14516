"""Which earlier items of an import file each item nearly repeats, found while the import
decides its items in file order (engine/interop/import_plan.py), in memory bounded by a chunk.

Only the earlier items the import *adds* count: a decision reads whether an added item is a
likely duplicate (and which is the best), and a proposal names the best MAX_CANDIDATES of
them (any tier). So each item is compared with the items added so far in every group it
belongs to (a target collection and a scope): by the cosine of their vectors with the model,
else by rapidfuzz (groups of up to LEXICAL_GROUP_LIMIT items) or by fence form (larger
groups). A chunk of items is scored at once against the group's added items (one matrix
product per block of them), and against each other as each one is decided.

What is kept is bounded: per item of the chunk, its best candidates; per group, its added
items' vectors (or words, or fence forms), and only while the file still has members of the
group to come (`sizes`, counted by the import's check pass). Before, every pair at or above the
weak tier was kept for the whole file: 12,500 near-identical lines made 78M pairs and 7.9 GB.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from rapidfuzz import fuzz, process

from engine.contract.normalize import fence_form
from engine.interop.earlier_groups import AddedItems
from engine.retrieval.lexical import fuzzy_text
from engine.retrieval.matching import LEXICAL_TIERS, MAX_CANDIDATES, SEMANTIC_TIERS, Tiers

# Items compared pairwise by rapidfuzz without a model; a larger group compares fence forms.
LEXICAL_GROUP_LIMIT = 2_000
# How far under a floor a score can be and still round up to it (4 places).
_ROUNDS_UP = 5e-5
# Group key: (target collection, scope).
GroupKey = tuple[str, str]


@dataclass(frozen=True)
class Earlier:
    """An earlier item of the same file that this one nearly repeats (its record id once
    written; None in a dry run)."""

    item: int
    similarity: float
    tier: str
    record_id: str | None = None


@dataclass(frozen=True)
class Found:
    """What an item's earlier added items say: `best`, the best likely (or exact) one as
    (similarity, item), the highest item label winning a tie as the reason's max() picks
    it; `repeats`, the best of those that were written (any tier), best first, then file
    order."""

    best: tuple[float, int] | None
    repeats: list[Earlier]


def tier_name(score: float, tiers: Tiers) -> str:
    return "exact" if score >= tiers.exact else "likely" if score >= tiers.likely else "weak"


def rounded(values: np.ndarray) -> np.ndarray:
    """Each score rounded to 4 places exactly as Python's round() rounds it (the scores of
    remember's dedup), as float64. numpy rounds x * 10**4 to an integer and divides; for a
    float32 score (every score here is one, or 1.0) that product is exact in float64 (24 + 14
    bits), so both round the same number, half to even, and end on the same double."""
    return np.round(values.astype(np.float64), 4)


_rounded = rounded  # the name tests/engine/test_import_speed_rounding.py checks


def _label_wins(item: int, other: int) -> bool:
    """Whether "item <item + 1> of this file" sorts after the other's label (max() of the
    reason's (similarity, label) pairs compares labels on a tie)."""
    return str(item + 1) > str(other + 1)


def better(a: tuple[float, int] | None, b: tuple[float, int] | None) -> tuple[float, int] | None:
    if a is None or b is None:
        return a or b
    if a[0] != b[0]:
        return a if a[0] > b[0] else b
    return a if _label_wins(a[1], b[1]) else b


class EarlierMatcher:
    """Earlier items for a file's eligible items, asked in file order: `chunk` scores a chunk
    against what was added before it; then for each item of the chunk, in order, `found`
    says what it repeats and `decided` says whether it was added (and its record id)."""

    def __init__(
        self,
        *,
        semantic: bool,
        sizes: dict[GroupKey, int] | None = None,
        keep: int | None = MAX_CANDIDATES,
    ) -> None:
        self.tiers = SEMANTIC_TIERS if semantic else LEXICAL_TIERS
        self._semantic = semantic
        self._sizes = sizes  # members per group; None: every group is kept to the end
        self._keep = keep  # repeats kept per item (None: all, for tests and small files)
        self._groups: dict[GroupKey, AddedItems] = {}
        self._clear([])

    def _clear(self, items: Sequence[int]) -> None:
        self._order = list(items)
        self._position = {item: row for row, item in enumerate(items)}
        self._keys: list[Sequence[GroupKey]] = []
        self._texts: list[str] = []
        self._vectors: np.ndarray | None = None
        self._words: list[str] = []
        self._forms: dict[int, bytes] = {}
        self._kinds: dict[GroupKey, str] = {}
        self._best: list[tuple[float, int] | None] = [None] * len(items)
        self._found: list[dict[int, tuple[float, str | None]]] = [{} for _ in items]
        # group -> its rows of the chunk, their scores, pairs that may count, rows with any
        self._inner: dict[GroupKey, tuple[np.ndarray, np.ndarray, np.ndarray, list[bool]]] = {}
        self._added = np.zeros(len(items), dtype=bool)  # rows of this chunk added so far
        self._records: list[str | None] = [None] * len(items)

    def _group(self, key: GroupKey) -> AddedItems:
        group = self._groups.get(key)
        if group is None:
            size = None if self._sizes is None else self._sizes.get(key, 0)
            group = self._groups[key] = AddedItems(size)
        return group

    # -- a chunk ------------------------------------------------------------------------------

    def chunk(
        self,
        items: Sequence[int],
        keys: Sequence[Sequence[GroupKey]],
        texts: Sequence[str],
        vectors: np.ndarray | None,
    ) -> None:
        """The next items in file order (numbers, groups, texts, unit vectors with the model),
        scored against every item added before them in a shared group."""
        self._clear(items)
        self._keys, self._texts, self._vectors = list(keys), list(texts), vectors
        rows_of: dict[GroupKey, list[int]] = {}
        for row, groups in enumerate(keys):
            for key in groups:
                rows_of.setdefault(key, []).append(row)
        if not self._semantic:
            self._words = [fuzzy_text(text) for text in texts]
        for key, rows in rows_of.items():
            group, at = self._groups.get(key), np.asarray(rows, dtype=np.int64)
            if self._semantic:
                assert vectors is not None
                block = vectors[rows]
                if group is not None:
                    for added, offset in group.vector_blocks():
                        self._fold(at, block @ added.T, group, offset)
                if len(rows) > 1:
                    self._within_chunk(key, at, np.minimum(block @ block.T, np.float32(1.0)))
                continue
            size = self._sizes.get(key, len(rows)) if self._sizes is not None else len(rows)
            self._kinds[key] = "fuzzy" if size <= LEXICAL_GROUP_LIMIT else "fence"
            if self._kinds[key] == "fence":
                continue  # compared one by one in `found`, by fence form
            words = [self._words[row] for row in rows]
            if group is not None and group.words:
                self._fold(at, _fuzzy(words, group.words, group.words), group, 0)
            if len(rows) > 1:
                mine = _has_words(words)
                self._within_chunk(key, at, _fuzzy(words, words, words) * mine[:, None])

    def _within_chunk(self, key: GroupKey, rows: np.ndarray, similarity: np.ndarray) -> None:
        """Keep a group's scores among the chunk's rows, and which pairs (later, earlier) can
        reach the weak tier: `_within` looks at those only."""
        near = np.tril(similarity >= self.tiers.weak - _ROUNDS_UP, -1)
        rows_near: list[bool] = np.any(near, axis=1).tolist()
        self._inner[key] = (rows, similarity, near, rows_near)

    def _fold(
        self, rows: np.ndarray, similarity: np.ndarray, group: AddedItems, offset: int
    ) -> None:
        """One block of scores (chunk rows x added items) into each row's best and candidates:
        the pairs at or above the weak tier, each row's best `keep` of them (vectorised)."""
        if self._semantic:
            similarity = np.minimum(similarity, np.float32(1.0))
        elif not all(self._words[row] for row in rows.tolist()):
            similarity = similarity * _has_words([self._words[r] for r in rows.tolist()])[:, None]
        hit = similarity >= self.tiers.weak - _ROUNDS_UP
        flat = np.flatnonzero(hit)
        if not len(flat):
            return
        at, column = np.divmod(flat, hit.shape[1])
        scores = rounded(similarity[at, column])
        kept = scores >= self.tiers.weak
        at, column, scores = at[kept], column[kept], scores[kept]
        items = np.asarray(group.items[offset : offset + hit.shape[1]], dtype=np.int64)[column]
        # Row by row, best first, then file order: a row's first entry is its best score.
        order = np.lexsort((items, -scores, at))
        at, items, scores, column = at[order], items[order], scores[order], column[order]
        starts = np.flatnonzero(np.r_[True, at[1:] != at[:-1]])
        ends = np.r_[starts[1:], len(at)]
        for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
            top = float(scores[start])
            if top < self.tiers.likely:
                continue
            best = int(items[start])
            for tie in items[start:end][scores[start:end] == top].tolist():
                best = tie if _label_wins(tie, best) else best
            row = int(rows[at[start]])
            self._best[row] = better(self._best[row], (top, best))
        records = group.records[offset : offset + hit.shape[1]]
        written = np.asarray([record is not None for record in records], dtype=bool)[column]
        if self._keep is not None:
            at, items, scores, column = (
                at[written],
                items[written],
                scores[written],
                column[written],
            )
            starts = np.searchsorted(at, at, side="left")
            rank = np.arange(len(at)) - starts
            near = rank < self._keep
            at, items, scores, column = at[near], items[near], scores[near], column[near]
        for row, item, score, col in zip(
            at.tolist(), items.tolist(), scores.tolist(), column.tolist(), strict=True
        ):
            self._offer(int(rows[row]), item, score, records[col])

    def _offer(self, row: int, item: int, score: float, record: str | None) -> None:
        found = self._found[row]
        known = found.get(item)
        if known is None or score > known[0]:
            found[item] = (score, record)
        if self._keep is not None and len(found) > 4 * self._keep:
            best = sorted(found.items(), key=lambda pair: (-pair[1][0], pair[0]))
            self._found[row] = dict(best[: self._keep])

    # -- one item at a time --------------------------------------------------------------------

    def found(self, item: int) -> Found:
        """What `item` (the next of the chunk) repeats among the items added before it."""
        row = self._position[item]
        for key in self._keys[row]:
            inner = self._inner.get(key)
            if inner is not None:
                self._within(row, *inner)
            elif self._kinds.get(key) == "fence":
                self._fence(row, item, key)
        if not self._found[row]:
            return Found(self._best[row], [])
        found = sorted(self._found[row].items(), key=lambda pair: (-pair[1][0], pair[0]))
        if self._keep is not None:
            found = found[: self._keep]
        repeats = [
            Earlier(first, score, tier_name(score, self.tiers), record)
            for first, (score, record) in found
        ]
        return Found(self._best[row], repeats)

    def _within(
        self,
        row: int,
        rows: np.ndarray,
        similarity: np.ndarray,
        near: np.ndarray,
        any_near: list[bool],
    ) -> None:
        """This group's items of the chunk before `row` that were added, scored against it."""
        at = int(np.searchsorted(rows, row))
        if not any_near[at]:
            return
        earlier = np.flatnonzero(near[at, :at] & self._added[rows[:at]])
        if not len(earlier):
            return
        scores = rounded(similarity[at, earlier])
        for column, score in zip(earlier.tolist(), scores.tolist(), strict=True):
            if score < self.tiers.weak:
                continue
            first_row = int(rows[column])
            first = self._order[first_row]
            if score >= self.tiers.likely:
                self._best[row] = better(self._best[row], (score, first))
            record = self._records[first_row]
            if record is not None or self._keep is None:
                self._offer(row, first, score, record)

    def _fence(self, row: int, item: int, key: GroupKey) -> None:
        """A large lexical group: the same fence form as an earlier item is an exact repeat of
        the first item of that form, if that one was added."""
        group = self._group(key)
        form = self._forms.get(row)
        if form is None:
            form = self._forms[row] = hashlib.blake2b(
                fence_form(self._texts[row]).encode(), digest_size=16
            ).digest()
        first = group.first_of.setdefault(form, item)
        if first == item:
            return
        if first in group.first_added:
            self._best[row] = better(self._best[row], (1.0, first))
            record = group.first_added[first]
            if record is not None or self._keep is None:
                self._offer(row, first, 1.0, record)
        elif first in self._position and self._added[self._position[first]]:
            self._best[row] = better(self._best[row], (1.0, first))
            record = self._records[self._position[first]]
            if record is not None or self._keep is None:
                self._offer(row, first, 1.0, record)

    def decided(self, item: int, *, added: bool, record_id: str | None = None) -> None:
        """`item` was added (with this record id; None: not written) or not. Its groups keep
        it while they have members to come."""
        row = self._position[item]
        if added:
            self._added[row] = True
            self._records[row] = record_id
        for key in self._keys[row]:
            group = self._group(key)
            if group.remaining is not None:
                group.remaining -= 1
                if group.remaining <= 0:
                    del self._groups[key]  # no member of it is left to compare
                    continue
            if not added:
                continue
            if self._semantic:
                assert self._vectors is not None
                group.add_vector(self._vectors[row])
            elif self._kinds.get(key) == "fuzzy":
                group.words.append(self._words[row])
            else:
                if group.first_of.get(self._forms.get(row, b"")) == item:
                    group.first_added[item] = record_id
                continue
            group.items.append(item)
            group.records.append(record_id)


def _has_words(words: list[str]) -> np.ndarray:
    """1 for a text with words, 0 for one without (a text without words matches nothing)."""
    return np.asarray([bool(word) for word in words], dtype=np.float32)


def _fuzzy(left: list[str], right: list[str], right_words: list[str]) -> np.ndarray:
    """As the lexical dedup scores a pair (engine/retrieval/lexical.py `similarity`): the mean
    of rapidfuzz's token-sort and token-set ratios over the texts' words; a pair where either
    text has no words scores 0."""
    sort = process.cdist(left, right, scorer=fuzz.token_sort_ratio, dtype=np.float32)
    kept = process.cdist(left, right, scorer=fuzz.token_set_ratio, dtype=np.float32)
    similarity: np.ndarray = (sort + kept) / 200.0
    if not all(right_words):
        similarity = similarity * _has_words(right_words)[None, :]
    return similarity


class EarlierPairs:
    """Every earlier item of every item (all of them added): the whole list, for tests and
    small inputs. The import itself asks an EarlierMatcher as it decides."""

    def __init__(self, found: dict[int, Found], tiers: Tiers) -> None:
        self._found = found
        self.tiers = tiers

    def likely(self, item: int) -> list[Earlier]:
        """The earlier items `item` repeats at the likely or exact tier, best first."""
        return [e for e in self._found[item].repeats if e.tier != "weak"]

    def repeats(self, item: int, added: np.ndarray) -> list[Earlier]:
        """The earlier items `item` repeats (any tier) among those `added` marks, best first."""
        return [e for e in self._found[item].repeats if added[e.item]]


def earlier_pairs(
    texts: list[str],
    scopes: list[list[str]],
    targets: list[str],
    members: list[int],
    vectors: np.ndarray | None,
) -> EarlierPairs:
    """The pairs among `members` (items of the file) that share a target collection and a
    scope, each scored as remember would score the later item against the earlier one."""
    matcher = EarlierMatcher(semantic=vectors is not None, keep=None)
    keys = [[(targets[i], scope) for scope in dict.fromkeys(scopes[i])] for i in members]
    matcher.chunk(members, keys, [texts[i] for i in members], vectors)
    found = {}
    for item in members:
        found[item] = matcher.found(item)
        matcher.decided(item, added=True)
    return EarlierPairs(found, matcher.tiers)
