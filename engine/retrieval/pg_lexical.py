"""The lexical leg of the server backend: BM25 over PostgreSQL full-text search.

A fact's tsvector (english stemming) and the store's document frequencies are kept by
engine/retrieval/pg_derived.py; here a query's content words become lexemes with their idf,
and facts are scored by BM25 in SQL with the in-memory index's constants (k1, b), visibility
in the WHERE clause.

The best `limit` facts are found without scoring every fact that holds a common lexeme
(MaxScore, Turtle and Flood 1995). A lexeme adds at most idf x (k1 + 1) to a fact's score,
since tf / (tf + k1 x (1 - b + b x length / average)) < 1. So once the `limit`-th best score
among the facts holding one of the rarer lexemes is above the sum of the other lexemes' bounds,
a fact holding only the others cannot enter the result: the rarer lexemes' facts, scored with
every lexeme, are the exact answer. At a million facts a query's commonest lexeme ("like",
"love") is in a tenth of the store, and scoring all of its facts was most of a recall's time."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, text

from engine.retrieval.lexical import Bm25Index, content_words
from engine.retrieval.pg_support import visible
from engine.retrieval.seam import Visibility

_K1, _B = Bm25Index.K1, Bm25Index.B
# The rarer lexemes first asked for are enough to hold this many times `limit` facts by their
# document frequencies (a visibility filter keeps only some of them).
FIRST_HOLDERS = 4


@dataclass(frozen=True)
class QueryTerms:
    """A query's lexemes known to the store: each one's idf and document frequency."""

    idf: dict[str, float]
    df: dict[str, int]

    def __bool__(self) -> bool:
        return bool(self.idf)

    @property
    def ceiling(self) -> float:
        """The highest BM25 a fact could reach: every lexeme's bound."""
        return sum(self.idf.values()) * (_K1 + 1)

    def rarest_first(self) -> list[str]:
        return sorted(self.idf, key=lambda term: (self.df[term], term))


def query_terms(connection: Connection, query: str) -> QueryTerms:
    """The query's lexemes known to the store. The engine's own content words (its stopwords
    out), stemmed by PostgreSQL's english configuration."""
    words = content_words(query)
    if not words:
        return QueryTerms({}, {})
    rows = connection.execute(
        text(
            """SELECT t.term, ln(1 + (st.docs - t.df + 0.5) / (t.df + 0.5)), t.df
            FROM fact_terms t, fact_search_state st
            WHERE st.name = 'search' AND t.df > 0 AND t.term IN
                (SELECT lexeme FROM unnest(to_tsvector('english', :words)))"""
        ),
        {"words": " ".join(words)},
    ).all()
    return QueryTerms(
        {str(row[0]): float(row[1]) for row in rows}, {str(row[0]): int(row[2]) for row in rows}
    )


def best_bm25(
    connection: Connection, terms: QueryTerms, visibility: Visibility, limit: int
) -> dict[str, float]:
    """The visible facts with the `limit` best BM25 scores (ties to the older fact), exactly
    as scoring every fact holding a lexeme would find them; fewer only when fewer facts hold
    one. Two or three queries, each over the facts holding the rarer lexemes only."""
    order = terms.rarest_first()
    bound = {term: terms.idf[term] * (_K1 + 1) for term in order}
    essential, holders = 0, 0
    while essential < len(order) and (essential == 0 or holders < FIRST_HOLDERS * limit):
        holders += terms.df[order[essential]]
        essential += 1
    while True:
        found = _scored(connection, terms, visibility, matching=order[:essential], limit=limit)
        if essential == len(order):
            return found
        if len(found) < limit:
            essential += 1  # too few facts hold the rarer lexemes (or are visible): widen
            continue
        threshold = min(found.values())
        if sum(bound[term] for term in order[essential:]) < threshold:
            return found
        # The threshold only rises as lexemes move in, so the next query is the last.
        while essential < len(order) and sum(bound[t] for t in order[essential:]) >= threshold:
            essential += 1


def bm25_of(
    connection: Connection, terms: QueryTerms, visibility: Visibility, ids: Iterable[str]
) -> dict[str, float]:
    """BM25 of the visible facts among `ids` that hold a lexeme."""
    return _scored(connection, terms, visibility, matching=list(terms.idf), ids=list(ids))


def _scored(
    connection: Connection,
    terms: QueryTerms,
    visibility: Visibility,
    *,
    matching: Sequence[str],
    limit: int | None = None,
    ids: list[str] | None = None,
) -> dict[str, float]:
    """BM25 over every lexeme of the visible facts holding one of `matching`: the best
    `limit`, or those among `ids`. Scores equal to nine decimals tie, and ties go to the older
    fact: the sum's order of terms follows the plan, so a score's last bits can differ between
    two queries, and a tie at the cut must not depend on them."""
    if not terms or not matching:
        return {}
    where, params = visible(visibility)
    tsquery = " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in matching)
    extra: dict[str, Any] = {
        "tsq": tsquery,
        "terms": list(terms.idf),
        "idfs": list(terms.idf.values()),
        "k1": _K1,
        "b": _B,
        "limit": limit,
    }
    restrict = ""
    if ids is not None:
        restrict, extra["ids"] = "AND s.record_id = ANY(:ids)", ids
    rows = connection.execute(
        text(
            f"""WITH q AS (SELECT * FROM unnest(CAST(:terms AS text[]),
                    CAST(:idfs AS float8[])) AS q(term, idf)),
            st AS (SELECT greatest(total_len::float8 / greatest(docs, 1), 1e-9) AS avg
                FROM fact_search_state WHERE name = 'search')
            SELECT record_id, bm25 FROM (
                SELECT s.record_id, s.created_at, sum(q.idf * cardinality(u.positions) * (:k1 + 1)
                    / (cardinality(u.positions)
                       + :k1 * (1 - :b + :b * s.doc_len / st.avg))) AS bm25
                FROM fact_search s CROSS JOIN st
                CROSS JOIN LATERAL unnest(s.tsv) AS u
                JOIN q ON q.term = u.lexeme
                WHERE s.tsv @@ CAST(:tsq AS tsquery) AND {where} {restrict}
                GROUP BY s.record_id, s.created_at) AS scored
            ORDER BY round(CAST(bm25 AS numeric), 9) DESC, created_at, record_id
            LIMIT :limit"""
        ),
        {**params, **extra},
    )
    return {str(row[0]): float(row[1]) for row in rows}
