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
from rapidfuzz import fuzz, process

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
    a, b = fuzzy_text(left), fuzzy_text(right)
    if not a or not b:
        return 0.0
    return (fuzz.token_sort_ratio(a, b) + fuzz.token_set_ratio(a, b)) / 200.0


class Bm25Index:
    """BM25 (k1=1.2, b=0.75) over documents given by position; scoring is numpy over postings."""

    K1 = 1.2
    B = 0.75
    # A misspelt query term is widened to vocabulary words at least this close (rapidfuzz ratio).
    FUZZY_TERM_CUTOFF = 84
    FUZZY_TERM_LIMIT = 3

    def __init__(self, documents: Sequence[str]) -> None:
        self.size = len(documents)
        postings: dict[str, tuple[list[int], list[int]]] = {}
        lengths = np.zeros(self.size, dtype=np.float32)
        for position, text in enumerate(documents):
            counts = Counter(tokenize(text))
            lengths[position] = sum(counts.values())
            for term, tf in counts.items():
                ids, tfs = postings.setdefault(term, ([], []))
                ids.append(position)
                tfs.append(tf)
        average = float(lengths.mean()) if self.size else 1.0
        norm = self.K1 * (1 - self.B + self.B * lengths / max(average, 1e-9))
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        for term, (ids, tfs) in postings.items():
            id_array = np.asarray(ids, dtype=np.int64)
            tf_array = np.asarray(tfs, dtype=np.float32)
            idf = math.log(1 + (self.size - len(ids) + 0.5) / (len(ids) + 0.5))
            weights = idf * tf_array * (self.K1 + 1) / (tf_array + norm[id_array])
            self._postings[term] = (id_array, weights.astype(np.float32))
        self._vocabulary = list(self._postings)

    def expand(self, terms: Sequence[str]) -> dict[str, float]:
        """Query terms with a weight; unknown terms map to close vocabulary words (typos)."""
        weights: dict[str, float] = {}
        for term in terms:
            if term in self._postings:
                weights[term] = max(weights.get(term, 0.0), 1.0)
                continue
            if len(term) < 4 or not self._vocabulary:
                continue
            for word, score, _ in process.extract(
                term,
                self._vocabulary,
                scorer=fuzz.ratio,
                score_cutoff=self.FUZZY_TERM_CUTOFF,
                limit=self.FUZZY_TERM_LIMIT,
            ):
                weights[word] = max(weights.get(word, 0.0), score / 100.0)
        return weights

    def ceiling(self, query: str) -> float:
        """The most BM25 any document could score for this query (every term matched at
        saturation): dividing by it keeps a match on one common word a weak match."""
        total = 0.0
        for term, weight in self.expand(tokenize(query)).items():
            ids, _ = self._postings[term]
            idf = math.log(1 + (self.size - len(ids) + 0.5) / (len(ids) + 0.5))
            total += weight * idf * (self.K1 + 1)
        return total

    def scores(self, query: str) -> np.ndarray:
        """BM25 of every document for the query (0 where no term matches)."""
        total = np.zeros(self.size, dtype=np.float32)
        for term, weight in self.expand(tokenize(query)).items():
            ids, term_weights = self._postings[term]
            total[ids] += weight * term_weights
        return total
