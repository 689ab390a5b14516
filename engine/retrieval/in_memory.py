"""The in-process backend of the retrieval seam: a Snapshot of the current facts (BM25, the
embedding matrix, word alignment, scope and collection postings) answering every question of
RetrievalIndex with numpy. Built by engine/retrieval/snapshot.py's SnapshotCache; opened, with
its declared name and capabilities, by its entry in engine/retrieval/registry.py."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from typing import TYPE_CHECKING, Any, overload

import numpy as np

from engine.retrieval.embeddings import Embedder
from engine.retrieval.lexical import fuzzy_text
from engine.retrieval.matching import (
    LEXICAL_TIERS,
    SEMANTIC_TIERS,
    ScoredCandidate,
    find_candidates,
    semantic_candidates_many,
    tier_of,
)
from engine.retrieval.pair_blocks import close_vectors, empty_pairs, fuzzy_similarities, listed
from engine.retrieval.ranking import RankedMatches, rank
from engine.retrieval.seam import (
    SEMANTIC,
    DuplicatePair,
    Match,
    PairsFound,
    Ranking,
    Visibility,
)
from engine.retrieval.snapshot import IndexedFact, Snapshot

if TYPE_CHECKING:
    from engine.retrieval.entry import Backend


class InMemoryIndex:
    def __init__(self, snapshot: Snapshot, embedder: Embedder | None, *, backend: Backend) -> None:
        self.snapshot = snapshot
        self._embedder = embedder
        self.name = backend.name
        self.capabilities = backend.usable(embedder is not None and snapshot.semantic)

    def _mask(self, visibility: Visibility) -> np.ndarray:
        snapshot = self.snapshot
        scopes: Sequence[str] = (
            visibility.scopes if visibility.scopes is not None else snapshot.scopes()
        )
        mask = snapshot.visible(
            scopes=scopes, collections=visibility.collections, now=visibility.now
        )
        for record_id in visibility.exclude:
            position = snapshot.position_of(record_id)
            if position is not None:
                mask[position] = False
        return mask

    def catch_up(self) -> None:
        """Nothing to do: the snapshot was caught up to the generation when this was made."""

    def rank(self, query: str, visibility: Visibility) -> Ranking:
        with self.snapshot.lock:
            return self._rank(query, visibility)

    def _rank(self, query: str, visibility: Visibility) -> Ranking:
        ranked = rank(self.snapshot, query, self._mask(visibility), self._embedder)
        return Ranking(MatchesTakenAsReached(self.snapshot, ranked), ranked.mode)

    def candidates(self, text: str, visibility: Visibility) -> list[ScoredCandidate]:
        with self.snapshot.lock:
            return find_candidates(
                self.snapshot, text=text, mask=self._mask(visibility), embedder=self._embedder
            )

    def candidates_many(
        self,
        texts: Sequence[str],
        visibilities: Sequence[Visibility],
        vectors: np.ndarray | None,
        *,
        least: str = "weak",
    ) -> list[list[ScoredCandidate]]:
        """`candidates` for many texts at once (BATCH_CANDIDATES): with the model, texts that
        see the same facts are scored in one matrix product or graph walk (`vectors`: their
        unit vectors, one row each), at `least` that tier; without it, one by one."""
        if vectors is None or SEMANTIC not in self.capabilities:
            return [self.candidates(t, v) for t, v in zip(texts, visibilities, strict=True)]
        found: list[list[ScoredCandidate]] = [[] for _ in texts]
        groups: dict[tuple[Any, ...], list[int]] = {}
        for index, visibility in enumerate(visibilities):
            key = (
                tuple(visibility.scopes) if visibility.scopes is not None else None,
                tuple(visibility.collections) if visibility.collections is not None else None,
                visibility.now,
                tuple(visibility.exclude),
            )
            groups.setdefault(key, []).append(index)
        with self.snapshot.lock:
            for members in groups.values():
                mask = self._mask(visibilities[members[0]])
                scored = semantic_candidates_many(
                    self.snapshot, mask=mask, queries=vectors[members], least=least
                )
                for index, candidates in zip(members, scored, strict=True):
                    found[index] = candidates
        return found

    def exact_duplicate(self, content_hash: str, visibility: Visibility) -> IndexedFact | None:
        with self.snapshot.lock:
            mask = self._mask(visibility)
            for position in self.snapshot.with_hash(content_hash):
                if mask[position]:
                    return self.snapshot.facts[position]
            return None

    def duplicate_pairs(
        self,
        visibility: Visibility,
        *,
        limit: int | None = None,
        skip: Collection[frozenset[str]] = (),
        newest: int | None = None,
    ) -> PairsFound:
        with self.snapshot.lock:
            found = self._duplicate_pairs(visibility, limit, skip, newest)
        # Each pair older fact first, and ties by the facts' age: the same list whatever
        # order the index learnt of the facts in.
        found[:] = [
            pair
            if _age(pair.left) <= _age(pair.right)
            else DuplicatePair(pair.right, pair.left, pair.similarity, pair.tier, pair.method)
            for pair in found
        ]
        found.sort(key=lambda pair: (-pair.similarity, _age(pair.left), _age(pair.right)))
        return found

    def _duplicate_pairs(
        self,
        visibility: Visibility,
        limit: int | None,
        skip: Collection[frozenset[str]],
        newest: int | None,
    ) -> PairsFound:
        snapshot = self.snapshot
        positions = np.flatnonzero(self._mask(visibility))
        visible = len(positions)
        # Oldest first: the same block, bit for bit, however the index learnt of the facts.
        created, ids = snapshot.order_keys(positions)
        positions = positions[np.lexsort((ids, created))]
        if newest is not None and visible > newest:
            positions = positions[visible - newest :]
        groups = snapshot.facts.values["collection"].codes.view()[positions]
        if SEMANTIC in self.capabilities and snapshot.semantic:
            block = snapshot.whole_vectors(positions)
            i, j, scores = close_vectors(block, groups, SEMANTIC_TIERS.weak)
            method, tiers = "semantic", SEMANTIC_TIERS
        else:
            i, j, scores = self._lexical_pairs(positions, groups)
            method, tiers = "lexical", LEXICAL_TIERS
        chosen, total = listed(i, j, scores, limit=limit, skip=self._skipped(positions, skip))
        facts = snapshot.facts.take(positions[np.concatenate([i[chosen], j[chosen]])].tolist())
        return PairsFound(
            (
                DuplicatePair(left, right, round(score, 4), tier_of(score, tiers) or "weak", method)
                for left, right, score in zip(
                    facts[: len(chosen)], facts[len(chosen) :], scores[chosen].tolist(), strict=True
                )
            ),
            total=total,
            compared=len(positions),
            visible=visible,
        )

    def _lexical_pairs(
        self, positions: np.ndarray, groups: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Pairs of one collection that share a word (BM25 above 0), scored by rapidfuzz."""
        snapshot = self.snapshot
        texts = snapshot.facts.texts["text"].take(positions.tolist())
        fuzzy = [fuzzy_text(text) for text in texts]
        found: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        for a, text in enumerate(texts):
            scores = snapshot.lexical.scores(text, len(snapshot.facts))
            later = np.flatnonzero(
                (scores[positions[a + 1 :]] > 0) & (groups[a + 1 :] == groups[a])
            )
            if not len(later):
                continue
            later += a + 1
            similar = fuzzy_similarities(fuzzy[a], [fuzzy[b] for b in later.tolist()])
            close = similar >= LEXICAL_TIERS.weak
            found.append((np.full(int(close.sum()), a), later[close], similar[close]))
        if not found:
            return empty_pairs()
        i, j, scores = (np.concatenate(parts) for parts in zip(*found, strict=True))
        return i.astype(np.int64), j.astype(np.int64), scores

    def _skipped(
        self, positions: np.ndarray, skip: Collection[frozenset[str]]
    ) -> list[tuple[int, int]]:
        """`skip`'s record-id pairs as pairs (i, j) of indices into `positions`."""
        if not skip:
            return []
        index = {p: n for n, p in enumerate(positions.tolist())}
        pairs = []
        for pair in skip:
            found = [index.get(self.snapshot.position_of(record_id), -1) for record_id in pair]
            if len(found) == 2 and min(found) >= 0:
                pairs.append((min(found), max(found)))
        return pairs


class MatchesTakenAsReached(Sequence[Match]):
    """Ranked matches whose facts are made from the index's columns a page at a time, as a
    reader reaches them: a recall returns the first few of up to MATCH_WINDOW, and making all
    of them was a sixth of a 10k-fact recall. The first page is made at once; a fact that left
    the index in between is still returned as it was (its position keeps its columns)."""

    PAGE = 32

    def __init__(self, snapshot: Snapshot, ranked: RankedMatches) -> None:
        self._snapshot, self._ranked = snapshot, ranked
        self._matches: list[Match] = []
        self._reach(self.PAGE)

    def _reach(self, count: int) -> None:
        ranked, done = self._ranked, len(self._matches)
        if count <= done or done == len(ranked.positions):
            return
        end = min(len(ranked.positions), max(count, done + self.PAGE))
        with self._snapshot.lock:
            facts = self._snapshot.facts.take(ranked.positions[done:end])
        self._matches.extend(
            Match(fact, ranked.scores[done + i], ranked.part(done + i))
            for i, fact in enumerate(facts)
        )

    def __len__(self) -> int:
        return len(self._ranked.positions)

    def __iter__(self) -> Iterator[Match]:
        for position in range(len(self)):
            self._reach(position + 1)
            yield self._matches[position]

    @overload
    def __getitem__(self, index: int) -> Match: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Match]: ...
    def __getitem__(self, index: int | slice) -> Match | Sequence[Match]:
        wanted = index + 1 if isinstance(index, int) and index >= 0 else len(self)
        self._reach(wanted)
        return self._matches[index]


def _age(fact: IndexedFact) -> tuple[object, str]:
    return (fact.created_at, fact.record_id)
