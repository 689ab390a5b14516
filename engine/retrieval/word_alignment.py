"""Word alignment, the second part of the semantic leg.

Each content word of the query is matched to the closest word of every fact by the static
model's word vectors; the matches are averaged with BM25-style idf weights, so a rare word of
the question counts more than a common one (the recall half of BERTScore with idf weighting,
on static vectors).

Why: a static model averages a sentence into one vector, so the one telling word of a question
("destress") is diluted by the rest, and a fact that says it differently ("relax") scores like
any other fact about the same person. Aligning word by word keeps that evidence. On LoCoMo it
lifted hybrid recall@10 from 0.666 to 0.678 over turns and from 0.610 to 0.624 over
observations (docs/retrieval.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np

from engine.retrieval.array_runs import expand_runs
from engine.retrieval.embeddings import Embedder
from engine.retrieval.growing import GrowingRows, Postings
from engine.retrieval.lexical import content_words

# Word pairs less similar than this are not an alignment: below it a static model's word
# cosines are mostly noise, and skipping them keeps a query cheap (only a few words pass).
MIN_WORD_SIMILARITY = 0.4
# The word coverage (scores_and_coverage) counts closer words than this as 0: below it a pair is
# unrelated, and it bounds the scatter to a few vocabulary words. On LoCoMo pairs it admits 0.20
# of the gold facts that share no word with a keyword query against 0.23 with no floor, at 0.8 %
# false admissions instead of 1.1 % (docs/retrieval.md, "When a fact is a match").
COVERAGE_MIN_SIMILARITY = 0.15


class WordVectors:
    """Word -> unit vector for fact words, embedded once.

    The PostgreSQL backend keeps them here (`keep=True`) across queries: it has no matrix of
    its own. The in-memory index (engine/retrieval/index_cache.py, `keep=False`) holds each
    word's vector once, in its word alignment's matrix, and keeps none here. Kept here too,
    every word a long-lived process saw arrive was held twice: a reader that followed other
    processes' writes of made-up words to 15k facts held 94k of them, ~110 MiB of the ~210 it
    held beyond a reader started afterwards, which reads the matrix from disk. A rebuild
    takes the vectors of the words the index it replaces holds from that index (`reusing`),
    so it still embeds only the words that are new."""

    def __init__(self, embedder: Embedder, *, keep: bool = True) -> None:
        self.embedder = embedder
        self._keep = keep
        self._vectors: dict[str, np.ndarray] = {}
        self._reused: WordAlignment | None = None

    @contextmanager
    def reusing(self, alignment: WordAlignment | None) -> Iterator[None]:
        """Inside the block, a word `alignment` holds takes its vector from it (read, not
        kept: no reference to that index outlives the block)."""
        self._reused = alignment
        try:
            yield
        finally:
            self._reused = None

    def matrix(self, words: Sequence[str]) -> np.ndarray:
        if not words:
            return np.zeros((0, self.embedder.dims), dtype=np.float32)
        found: dict[str, np.ndarray] = {}
        missing: list[str] = []
        for word in words:
            vector = self._vectors.get(word)
            if vector is None and self._reused is not None:
                vector = self._reused.vector_of(word)
            if vector is None:
                missing.append(word)
            else:
                found[word] = vector
        if missing:
            embedded = dict(zip(missing, self.embedder.embed(missing), strict=True))
            found.update(embedded)
            if self._keep:
                self._vectors.update(embedded)
        return np.vstack([found[word] for word in words])


class FlatPostings:
    """Every word's positions in one array, word after word (`offsets` says where each word's
    run starts), so that a query gathers the postings of its hundreds of close words in a few
    numpy steps instead of a Python step per word (3.3 -> 2.7 ms per alignment at 100k facts).
    The persisted index holds this layout already (engine/retrieval/persisted.py hands it
    over); postings appended afterwards wait in `later_*` until they are a sixteenth of the
    whole, when the next query, or the next fact, drops the layout to be made again."""

    def __init__(self, offsets: np.ndarray, positions: np.ndarray) -> None:
        self.offsets = offsets.astype(np.int64, copy=False)
        self.positions = positions.astype(np.int64, copy=False)
        self.words = len(offsets) - 1
        self.later_words: list[int] = []
        self.later_positions: list[int] = []

    @classmethod
    def of(cls, postings: Sequence[Postings]) -> FlatPostings:
        runs = [lists.arrays()[0] for lists in postings]
        lengths = np.fromiter((len(run) for run in runs), np.int64, len(runs))
        offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(lengths)])
        return cls(offsets, np.concatenate(runs) if runs else np.zeros(0, np.int64))

    def stale(self) -> bool:
        return len(self.later_words) > max(4096, len(self.positions) // 16)

    def gather(self, columns: np.ndarray, row: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(position, similarity) of every posting of the words `columns`: the same pairs
        that reading each word's postings gives, in another order."""
        inside = columns[columns < self.words]
        starts = self.offsets[inside]
        lengths = self.offsets[inside + 1] - starts
        taken = expand_runs(starts, lengths)
        positions, values = self.positions[taken], np.repeat(row[inside], lengths)
        if not self.later_words:
            return positions, values
        words = np.asarray(self.later_words, np.int64)
        chosen = np.zeros(len(row), dtype=bool)
        chosen[columns] = True
        picked = chosen[words]
        return (
            np.concatenate([positions, np.asarray(self.later_positions, np.int64)[picked]]),
            np.concatenate([values, row[words[picked]]]),
        )


class WordAlignment:
    """The facts' vocabulary with its word vectors and postings (word -> fact positions), kept
    up to date one fact at a time like the BM25 index (engine/retrieval/lexical.py): a removed
    fact's postings stay, but it no longer counts in the idf."""

    _flat: FlatPostings | None = None  # built at the first query (the persisted index sets
    # the other fields itself, engine/retrieval/persisted.py)

    def __init__(self, texts: Sequence[str], vectors: WordVectors) -> None:
        self.size = 0  # live facts
        self.positions_seen = 0
        self._vectors = vectors
        self._embedder = vectors.embedder
        self._index: dict[str, int] = {}
        self._postings: list[Postings] = []
        self._matrix = GrowingRows(self._embedder.dims)
        self.add_many(list(enumerate(texts)))

    def add_many(self, items: Sequence[tuple[int, str]]) -> None:
        """Add facts (position, text); their new words are embedded in one batch."""
        new_words: list[str] = []
        for position, text in items:
            for word in content_words(text):
                slot = self._index.get(word)
                if slot is None:
                    slot = self._index[word] = len(self._postings)
                    self._postings.append(Postings(np.int64))
                    new_words.append(word)
                postings = self._postings[slot]
                postings.append(position, 0)
                postings.live += 1
                if self._flat is not None:
                    self._flat.later_words.append(slot)
                    self._flat.later_positions.append(position)
            self.size += 1
            self.positions_seen = max(self.positions_seen, position + 1)
        if self._flat is not None and self._flat.stale():
            self._flat = None  # a process that only applies changes keeps no growing lists
        if new_words:
            self._matrix.append(self._vectors.matrix(new_words))

    def vector_of(self, word: str) -> np.ndarray | None:
        """The vector this alignment holds for `word` (a view of its matrix), or None."""
        slot = self._index.get(word)
        return None if slot is None else self._matrix.view()[slot]

    def remove(self, text: str) -> None:
        self._count(text, -1)

    def restore(self, text: str) -> None:
        self._count(text, +1)

    def _count(self, text: str, step: int) -> None:
        for word in content_words(text):
            self._postings[self._index[word]].live += step
        self.size += step

    def _idf(self, word: str) -> float:
        slot = self._index.get(word)
        df = self._postings[slot].live if slot is not None else 0
        return math.log(1 + (self.size - df + 0.5) / (df + 0.5))

    def scores(self, query: str, capacity: int | None = None) -> np.ndarray:
        """Per position, in [0, 1]: the idf-weighted mean over the query's content words of the
        similarity of the fact's closest word (0 where none reaches MIN_WORD_SIMILARITY)."""
        return self.scores_and_coverage(query, capacity)[0]

    def scores_and_coverage(
        self, query: str, capacity: int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """Per position, the alignment (`scores`) and the word coverage: the plain mean over
        the query's content words of the fact's closest word's similarity, counting those
        under COVERAGE_MIN_SIMILARITY as 0. The coverage decides whether a fact sharing no
        word is a match at all (engine/retrieval/ranking.py); flat weights keep it the same
        in a store of one fact as in one of 100k, where idf would differ."""
        size = capacity if capacity is not None else self.positions_seen
        total = np.zeros(size, np.float32)
        coverage = np.zeros(size, np.float32)
        words = content_words(query)
        if not words or not self._index:
            return total, coverage
        # einsum: a word's similarity does not depend on where the vocabulary holds it.
        similarities = np.einsum("ij,kj->ik", self._embedder.embed(words), self._matrix.view())
        weights = [self._idf(word) for word in words]
        flat = self._flat
        if flat is None or flat.stale():
            flat = self._flat = FlatPostings.of(self._postings)
        for row, weight in zip(similarities, weights, strict=True):
            # One scatter serves both: a fact's closest word, when at or above the alignment's
            # floor, is also its closest among the words at the coverage's lower floor.
            columns = np.flatnonzero(row >= COVERAGE_MIN_SIMILARITY)
            if not columns.size:
                continue
            best = np.zeros(size, dtype=np.float32)
            np.maximum.at(best, *flat.gather(columns, row))
            best = np.minimum(best, 1.0)
            coverage += best
            total += weight * np.where(best >= MIN_WORD_SIMILARITY, best, 0.0)
        return total / sum(weights), coverage / len(words)
