"""The lexical leg: tokens, a light stemmer, BM25 over an in-memory inverted index, and
rapidfuzz for typos and near-identical wording.

No query term is required to occur: every term that matches adds evidence (BM25 is a sum), so
a question phrased differently from the fact still finds it by the words they share, and a
misspelt term is widened to the vocabulary words rapidfuzz finds close to it.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

import numpy as np

from engine.retrieval.growing import Postings

_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)

# Function words carry no evidence in short facts; questions are full of them.
STOPWORDS = frozenset(
    """
    a an the and or but if of to in on at by for with from as into about over under is are was
    were be been being am do does did doing have has had having i me my mine we our ours you
    your yours he him his she her hers it its they them their theirs this that these those what
    which who whom whose when where why how there here then than so not no nor too very can
    could should would will shall may might must just also any some each every all both few
    more most other such only own same s t d ll m o re ve y ever yet up down out off again
    further once let lets get got
    """.split()  # noqa: SIM905 - a word list reads better as text
)

_SUFFIXES = (
    ("ational", "ate"),
    ("ization", "ize"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("iveness", "ive"),
    ("ingly", ""),
    ("ments", ""),
    ("ment", ""),
    ("ness", ""),
    ("ings", ""),
    ("edly", ""),
    ("ence", ""),
    ("ance", ""),
    ("sses", "ss"),
    ("ies", "y"),
    ("ied", "y"),
    ("ing", ""),
    ("ers", "er"),
    ("ed", ""),
    ("ly", ""),
)


@lru_cache(maxsize=65_536)  # a store's vocabulary is small next to its word count
def stem(word: str) -> str:
    """Strip one common English suffix, then a final e and a doubled consonant, so that
    like/likes/liked, prefer/prefers/preferred/preference and run/running meet."""
    if len(word) <= 3 or not word.isalpha():
        return word
    base = word
    for suffix, replacement in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)] + replacement
            break
    else:
        if word.endswith("s") and not word.endswith(("ss", "us", "is")):
            base = word[:-1]
    if len(base) > 3 and base.endswith("e"):
        base = base[:-1]
    if len(base) > 3 and base[-1] == base[-2] and base[-1] not in "aeiouls":
        base = base[:-1]
    return base


def tokenize(text: str) -> list[str]:
    """Lowercased, stemmed content words."""
    folded = unicodedata.normalize("NFKC", text).lower()
    return [stem(tok) for tok in _TOKEN.findall(folded) if tok not in STOPWORDS]


def content_words(text: str) -> list[str]:
    """Lowercased content words as written (not stemmed), each once, in order: the units the
    semantic leg aligns by their word vectors."""
    folded = unicodedata.normalize("NFKC", text).lower()
    return list(dict.fromkeys(tok for tok in _TOKEN.findall(folded) if tok not in STOPWORDS))


def fuzzy_text(text: str) -> str:
    """The string rapidfuzz compares: lowercased words only."""
    return " ".join(_TOKEN.findall(unicodedata.normalize("NFKC", text).lower()))


def similarity(left: str, right: str) -> float:
    """Lexical similarity in [0, 1] for dedup when no model is available: the mean of a
    token-sort ratio (word order ignored) and a token-set ratio (one text inside the other)."""
    from rapidfuzz import fuzz  # loaded where it is used: a recall of known words never is

    a, b = fuzzy_text(left), fuzzy_text(right)
    if not a or not b:
        return 0.0
    return (fuzz.token_sort_ratio(a, b) + fuzz.token_set_ratio(a, b)) / 200.0


class Bm25Index:
    """BM25 (k1=1.2, b=0.75) over documents given by position, kept up to date one document at
    a time: `add` a new document, `remove` one that left, `restore` one that came back.

    Postings keep term frequencies, not weights: idf and length normalisation depend on the
    whole index (documents, average length), so they are applied per query from live counts.
    A removed document's postings stay (its position never matches: callers mask by
    liveness) but it no longer counts in any statistic, so scores equal those of an index
    built from the live documents alone."""

    K1 = 1.2
    B = 0.75
    # A misspelt query term is widened to vocabulary words at least this close (rapidfuzz ratio).
    FUZZY_TERM_CUTOFF = 84
    FUZZY_TERM_LIMIT = 3

    def __init__(self, documents: Sequence[str] = ()) -> None:
        self.size = 0  # live documents
        self._total_length = 0  # of live documents
        self._lengths = np.zeros(max(16, len(documents)), dtype=np.float32)
        self._postings: dict[str, Postings] = {}
        self._vocabulary: list[str] = []  # every term ever seen, in order of arrival
        self.positions_seen = 0  # one past the highest position added
        for position, text in enumerate(documents):
            self.add(position, text)

    def add(self, position: int, text: str) -> None:
        counts = Counter(tokenize(text))
        length = sum(counts.values())
        if position >= len(self._lengths):
            grown = np.zeros(max(position + 1, 2 * len(self._lengths)), dtype=np.float32)
            grown[: len(self._lengths)] = self._lengths
            self._lengths = grown
        self._lengths[position] = length
        self.positions_seen = max(self.positions_seen, position + 1)
        for term, tf in counts.items():
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = Postings(np.float32)
                self._vocabulary.append(term)
            postings.append(position, tf)
            postings.live += 1
        self.size += 1
        self._total_length += length

    def remove(self, text: str) -> None:
        """The document `text` (added before) leaves the statistics."""
        self._count(text, -1)

    def restore(self, text: str) -> None:
        """A removed document `text` is back (its postings never left)."""
        self._count(text, +1)

    def _count(self, text: str, step: int) -> None:
        counts = Counter(tokenize(text))
        for term in counts:
            self._postings[term].live += step
        self.size += step
        self._total_length += step * sum(counts.values())

    def _idf(self, df: int) -> float:
        return math.log(1 + (self.size - df + 0.5) / (df + 0.5))

    def expand(self, terms: Sequence[str]) -> dict[str, float]:
        """Query terms with a weight; unknown terms map to close vocabulary words (typos):
        the FUZZY_TERM_LIMIT closest live words, ties by the word itself, so the choice does
        not depend on the order the words arrived in."""
        weights: dict[str, float] = {}
        for term in terms:
            postings = self._postings.get(term)
            if postings is not None and postings.live > 0:
                weights[term] = max(weights.get(term, 0.0), 1.0)
                continue
            if len(term) < 4 or not self._vocabulary:
                continue
            from rapidfuzz import fuzz, process  # only for a word the index does not hold

            close = [
                (score, word)
                for word, score, _ in process.extract(
                    term,
                    self._vocabulary,
                    scorer=fuzz.ratio,
                    score_cutoff=self.FUZZY_TERM_CUTOFF,
                    limit=None,
                )
                if self._postings[word].live > 0
            ]
            for score, word in sorted(close, key=lambda item: (-item[0], item[1]))[
                : self.FUZZY_TERM_LIMIT
            ]:
                weights[word] = max(weights.get(word, 0.0), score / 100.0)
        return weights

    def ceiling(self, query: str) -> float:
        """The most BM25 any document could score for this query (every term matched at
        saturation): dividing by it keeps a match on one common word a weak match."""
        total = 0.0
        for term, weight in self.expand(tokenize(query)).items():
            total += weight * self._idf(self._postings[term].live) * (self.K1 + 1)
        return total

    def scores(self, query: str, capacity: int | None = None) -> np.ndarray:
        """BM25 of every position for the query (0 where no term matches; a removed
        document's value is meaningless, callers mask it), `capacity` long (default: every
        position seen)."""
        size = capacity if capacity is not None else self.positions_seen
        total = np.zeros(size, dtype=np.float32)
        average = self._total_length / self.size if self.size else 1.0
        for term, weight in self.expand(tokenize(query)).items():
            postings = self._postings[term]
            ids, tfs = postings.arrays()
            norm = self.K1 * (1 - self.B + self.B * self._lengths[ids] / max(average, 1e-9))
            term_weights = self._idf(postings.live) * tfs * (self.K1 + 1) / (tfs + norm)
            total[ids] += weight * term_weights.astype(np.float32)
        return total
