"""Helpers of the PostgreSQL backend (engine/retrieval/postgres.py): the visibility clause,
reading facts by id, the order ties are broken in, word alignment over a shortlist, and
near-duplicate pairs."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime
from itertools import groupby
from typing import Any, overload

import numpy as np
from sqlalchemy import Connection, Engine, text

from engine.contract.visibility import unexpired_sql
from engine.retrieval import pg_derived
from engine.retrieval.entry import FactReader
from engine.retrieval.lexical import content_words, fuzzy_text
from engine.retrieval.matching import LEXICAL_TIERS, SEMANTIC_TIERS, tier_of
from engine.retrieval.pair_blocks import close_vectors, fuzzy_similarities
from engine.retrieval.seam import Match, Visibility
from engine.retrieval.snapshot import IndexedFact, record_id_key
from engine.retrieval.word_alignment import (
    COVERAGE_MIN_SIMILARITY,
    MIN_WORD_SIMILARITY,
    WordVectors,
)

Pair = tuple[str, str, float, str, str]  # left id, right id, similarity, tier, method


# A visibility that lets a query see at least this share of the store is broad: its scope
# clause is written so that PostgreSQL filters rows with it instead of reading the scopes' GIN
# index. The planner takes scopes to be independent, so 8 scopes of 12.5% each look like 66%
# of the rows, and it joined a lexeme's bitmap with a bitmap of every row (110-140 ms at a
# million facts) to filter out nothing.
BROAD_SHARE = 0.25


def visible(
    visibility: Visibility, alias: str = "s", *, share: float = 0.0
) -> tuple[str, dict[str, Any]]:
    """The WHERE clause of visibility over fact_search `alias`, and its parameters. `share`:
    the part of the store the visibility's scopes let it see (`visible_share`)."""
    # fact_search holds the live facts only (pg_derived.py); the rest of "current" is here.
    clauses = [unexpired_sql(alias, ":now")]
    params: dict[str, Any] = {"now": visibility.now}
    if visibility.scopes is not None:
        overlap = f"{alias}.scopes && CAST(:scopes AS text[])"
        clauses.append(f"coalesce({overlap}, false)" if share >= BROAD_SHARE else overlap)
        params["scopes"] = list(visibility.scopes)
    if visibility.collections is not None:
        clauses.append(f"{alias}.collection = ANY(CAST(:collections AS text[]))")
        params["collections"] = list(visibility.collections)
    if visibility.exclude:
        clauses.append(f"{alias}.record_id <> ALL(CAST(:exclude AS text[]))")
        params["exclude"] = list(visibility.exclude)
    return " AND ".join(clauses), params


def visible_share(connection: Connection, visibility: Visibility) -> float:
    """The share of the current facts in the visibility's scopes, from the per-scope counts:
    an upper bound (a fact in two of them counts twice; collections and expiry are left
    out), 1.0 when it names no scopes."""
    if visibility.scopes is None:
        return 1.0
    row = connection.execute(
        text(
            """SELECT (SELECT coalesce(sum(df), 0) FROM fact_scope_counts
                    WHERE scope = ANY(CAST(:scopes AS text[]))),
                (SELECT docs FROM fact_search_state WHERE name = 'search')"""
        ),
        {"scopes": list(visibility.scopes)},
    ).one()
    return min(1.0, float(row[0] or 0) / max(float(row[1] or 0), 1.0))


class MatchesReadAsReached(Sequence[Match]):
    """Matches best first whose facts are read a page at a time as they are reached. A recall
    usually takes the first few of the MATCH_WINDOW ranked (8 by default), and reading all 256
    facts' rows cost 12 ms of a 103 ms recall at a million facts (paired runs). The first
    page is read at once, on the ranking's connection; later ones on a connection of their
    own. A fact deleted in between (a superseded or retired one keeps its row) is left out,
    and the length still counts it."""

    PAGE = 32

    def __init__(
        self,
        db: Engine,
        connection: Connection,
        order: Sequence[str],
        make: Callable[[IndexedFact], Match],
        read_facts: FactReader,
    ) -> None:
        self._db, self._order, self._make = db, list(order), make
        self._read_facts = read_facts
        self._matches: list[Match] = []
        self._read = 0
        self._read_page(connection)

    def _read_page(self, connection: Connection) -> None:
        ids = self._order[self._read : self._read + self.PAGE]
        self._read += len(ids)
        facts = self._read_facts(connection, ids)
        self._matches.extend(self._make(facts[r]) for r in ids if r in facts)

    def _reach(self, count: int) -> None:
        """Read pages until `count` matches are read or every one is."""
        while len(self._matches) < count and self._read < len(self._order):
            with self._db.connect() as connection:
                self._read_page(connection)

    def __len__(self) -> int:
        return len(self._order)

    def __iter__(self) -> Iterator[Match]:
        position = 0
        while True:
            self._reach(position + 1)
            if position >= len(self._matches):
                return
            yield self._matches[position]
            position += 1

    @overload
    def __getitem__(self, index: int) -> Match: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Match]: ...
    def __getitem__(self, index: int | slice) -> Match | Sequence[Match]:
        self._reach(len(self._order))
        return self._matches[index]


def age(fact: IndexedFact) -> tuple[datetime, int]:
    return (fact.created_at, record_id_key(fact.record_id))


def best_first_ids(
    scores: dict[str, float], facts: dict[str, IndexedFact], limit: int
) -> list[str]:
    """Record ids best first, at most `limit`: scores equal to six decimals tie, and ties go
    to the older fact (ranking.best_first's order)."""
    present = [record_id for record_id in scores if record_id in facts]
    present.sort(key=lambda r: (-round(scores[r], 6), *age(facts[r])))
    return present[:limit]


class Shortlisted:
    """What ranking needs of a shortlisted fact before it is chosen: its order key (created_at,
    record id) and its content words, read from fact_search (not the whole fact)."""

    __slots__ = ("key", "words")

    def __init__(self, created_at: datetime, record_id: str, words: Sequence[str]) -> None:
        self.key = (created_at, record_id_key(record_id))
        self.words = words


def shortlisted(connection: Connection, ids: Iterable[str]) -> dict[str, Shortlisted]:
    wanted = list(ids)
    if not wanted:
        return {}
    rows = connection.execute(
        text("SELECT record_id, created_at, words FROM fact_search WHERE record_id = ANY(:ids)"),
        {"ids": wanted},
    )
    return {str(r[0]): Shortlisted(r[1], str(r[0]), r[2]) for r in rows}


def best_first_keys(
    scores: dict[str, float], keys: dict[str, Shortlisted], limit: int
) -> list[str]:
    """best_first_ids over shortlisted facts."""
    present = [record_id for record_id in scores if record_id in keys]
    present.sort(key=lambda r: (-round(scores[r], 6), *keys[r].key))
    return present[:limit]


class QueryWords:
    """A query's side of word alignment (engine/retrieval/word_alignment.py): its content
    words, their vectors and idf weights over the current facts (fact_words)."""

    def __init__(self, connection: Connection, cache: WordVectors | None, query: str) -> None:
        self.cache = cache
        self.words = content_words(query) if cache is not None else []
        self.vectors = np.zeros((0, 1), dtype=np.float32)
        self.weights = np.zeros(0)
        if cache is None or not self.words:
            return
        rows = connection.execute(
            text(
                """SELECT w.word, w.df, st.docs FROM fact_search_state st
                LEFT JOIN fact_words w ON w.word = ANY(:words)
                WHERE st.name = 'search'"""
            ),
            {"words": self.words},
        ).all()
        df = {str(row[0]): int(row[1]) for row in rows if row[0] is not None}
        size = int(rows[0][2]) if rows else 0
        self.weights = np.asarray(
            [np.log(1 + (size - df.get(w, 0) + 0.5) / (df.get(w, 0) + 0.5)) for w in self.words]
        )
        self.vectors = cache.embedder.embed(self.words)

    def scores(self, facts: dict[str, Shortlisted]) -> tuple[dict[str, float], dict[str, float]]:
        """Per fact, the idf-weighted mean over the query's words of the closest fact word's
        similarity (0 below MIN_WORD_SIMILARITY), and the word coverage (the plain mean, 0
        below COVERAGE_MIN_SIMILARITY), as WordAlignment.scores_and_coverage gives them:
        every fact word compared in one product."""
        ids = [record_id for record_id, fact in facts.items() if fact.words]
        found = dict.fromkeys(facts, 0.0)
        covered = dict.fromkeys(facts, 0.0)
        if self.cache is None or not self.words or not ids:
            return found, covered
        vocabulary = list(dict.fromkeys(word for r in ids for word in facts[r].words))
        slot = {word: index for index, word in enumerate(vocabulary)}
        similarity = self.vectors @ self.cache.matrix(vocabulary).T  # (query words, vocabulary)
        similarity = np.minimum(np.where(similarity >= COVERAGE_MIN_SIMILARITY, similarity, 0), 1)
        columns = np.asarray([slot[word] for r in ids for word in facts[r].words])
        starts = np.cumsum([0] + [len(facts[r].words) for r in ids[:-1]])
        best = np.maximum.reduceat(similarity[:, columns], starts, axis=1)  # (words, facts)
        aligned = np.where(best >= MIN_WORD_SIMILARITY, best, 0.0)
        totals = (self.weights[:, None] * aligned).sum(axis=0) / self.weights.sum()
        found.update(zip(ids, (float(total) for total in totals), strict=True))
        covered.update(zip(ids, (float(mean) for mean in best.mean(axis=0)), strict=True))
        return found, covered


def semantic_pairs(rows: Sequence[Any]) -> list[Pair]:
    if len(rows) < 2:
        return []
    block = np.vstack([pg_derived.parse_vector(row.vector) for row in rows])
    _, groups = np.unique([row.collection for row in rows], return_inverse=True)
    i, j, scores = close_vectors(block, groups, SEMANTIC_TIERS.weak)
    return [
        (rows[a].record_id, rows[b].record_id, s, tier_of(s, SEMANTIC_TIERS) or "weak", "semantic")
        for a, b, s in zip(i.tolist(), j.tolist(), scores.tolist(), strict=True)
    ]


def lexical_pairs(
    connection: Connection, where: str, params: dict[str, Any], read_facts: FactReader
) -> list[Pair]:
    """Pairs in one collection sharing a lexeme (found by a self-join), then rapidfuzz. Each
    fact's lexemes are listed once (per pair, they cost most of the join) and its text is
    read and made fuzzy once, not once per pair."""
    visible = f"SELECT s.record_id, s.collection, tsvector_to_array(s.tsv) AS words " \
        f"FROM fact_search s WHERE {where}"  # fmt: skip
    rows = connection.execute(
        text(
            f"""WITH v AS MATERIALIZED ({visible})
            SELECT a.record_id, b.record_id FROM v a JOIN v b
            ON a.collection = b.collection AND a.record_id < b.record_id AND a.words && b.words
            ORDER BY a.record_id"""
        ),
        params,
    ).all()
    ids = {str(rid) for row in rows for rid in row}
    fuzzy = {rid: fuzzy_text(fact.text) for rid, fact in read_facts(connection, ids).items()}
    found: list[Pair] = []
    for left, pairs in groupby(rows, key=lambda row: str(row[0])):
        rights = [str(row[1]) for row in pairs]
        scores = fuzzy_similarities(fuzzy[left], [fuzzy[right] for right in rights])
        for right, score in zip(rights, scores.tolist(), strict=True):
            if tier := tier_of(score, LEXICAL_TIERS):
                found.append((left, right, score, tier, "lexical"))
    return found
