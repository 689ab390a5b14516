"""The lexical leg of the server backend: BM25 over PostgreSQL full-text search.

A fact's tsvector (english stemming) and the store's document frequencies are kept by
engine/retrieval/pg_derived.py; here a query's content words become lexemes with their idf,
and facts are scored by BM25 in SQL with the in-memory index's constants (k1, b), visibility
in the WHERE clause.

The best `limit` facts are not looked for among every fact holding a query lexeme: at a
million facts "like" is held by a third of the store, and scoring every holder took the leg
474 ms at the median and 2.5 s at p95. When the visible holders are few (at most
FULL_SCORING_HOLDERS by the document frequencies and the scopes' share of the store) they are
all scored, exactly. Otherwise the candidates are, per lexeme, the max(limit, LIST_FLOOR)
visible facts where it weighs most, read best first from the impact-ordered postings
(engine/retrieval/pg_postings.py), and those among the rarest lexeme's next ones that hold
another lexeme too; the candidates are scored with every lexeme, exactly. A fact outside all
of them is missed. benchmarks/server_lexical_ab.py measures how often at a million facts,
against scoring every holder in the same run: the best 10 were the same in 99.5% of places,
and the leg took 24 ms at the median."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, text

from engine.retrieval.lexical import Bm25Index, content_words
from engine.retrieval.pg_postings import AVERAGE_LENGTH, TERM_WEIGHT
from engine.retrieval.pg_support import visible
from engine.retrieval.seam import Visibility

_K1, _B = Bm25Index.K1, Bm25Index.B
# Holders (by document frequency, summed over the query's lexemes) up to which every holder is
# scored: about 15 us a fact at a million facts.
FULL_SCORING_HOLDERS = 2_000
# A lexeme's list of candidates holds at least this many facts (max(limit, LIST_FLOOR)).
LIST_FLOOR = 128
# The rarest lexeme's list is read this many times further for facts holding another lexeme
# too: a fact holding several of the query's lexemes, none with much weight (a tie among
# thousands of short facts), is found there.
SHARED_LIST_FACTOR = 8


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
    connection: Connection,
    terms: QueryTerms,
    visibility: Visibility,
    limit: int,
    *,
    share: float = 1.0,
) -> dict[str, float]:
    """The visible facts with the best BM25 scores, at most `limit`, best first (ties to the
    older fact): every holder scored when the visible ones are few, else each lexeme's best
    holders. `share`: the part of the store `visibility` sees (pg_support.visible_share)."""
    if not terms:
        return {}
    if sum(terms.df.values()) * share <= FULL_SCORING_HOLDERS:
        return _scored(connection, terms, visibility, share=share, limit=limit)
    candidates = _best_holders(connection, terms, visibility, max(limit, LIST_FLOOR))
    return _scored(connection, terms, visibility, share=1.0, limit=limit, ids=candidates)


def _best_holders(
    connection: Connection, terms: QueryTerms, visibility: Visibility, per_lexeme: int
) -> list[str]:
    """For each lexeme, the `per_lexeme` visible facts where it weighs most; and among the
    SHARED_LIST_FACTOR x `per_lexeme` where the rarest lexeme weighs most, those holding
    another lexeme too. Postings are read best first from the lexeme index, whose rows carry
    each fact's visibility: a fact's scopes are checked as it comes, never through the
    scopes' index (which would read every visible fact's entry first)."""
    where, params = visible(visibility, "p", share=1.0)
    lexemes = list(terms.idf)
    rarest = min(lexemes, key=lambda term: (terms.df[term], term))
    rows = connection.execute(
        text(
            f"""SELECT best.record_id
            FROM unnest(CAST(:lexemes AS text[])) AS q(term)
            CROSS JOIN LATERAL (
                SELECT p.record_id FROM fact_postings p
                WHERE p.term = q.term AND {where}
                ORDER BY p.impact DESC, p.record_id
                LIMIT :per_lexeme) AS best
            UNION
            SELECT rare.record_id FROM (
                SELECT p.record_id FROM fact_postings p
                WHERE p.term = :rarest AND {where}
                ORDER BY p.impact DESC, p.record_id
                LIMIT :wider) AS rare
            WHERE EXISTS (SELECT 1 FROM fact_postings o WHERE o.record_id = rare.record_id
                AND o.term = ANY(CAST(:others AS text[])))"""
        ),
        {
            **params,
            "lexemes": lexemes,
            "per_lexeme": per_lexeme,
            "rarest": rarest,
            "wider": SHARED_LIST_FACTOR * per_lexeme,
            "others": [term for term in lexemes if term != rarest],
        },
    )
    return [str(row[0]) for row in rows]


def bm25_of(
    connection: Connection, terms: QueryTerms, visibility: Visibility, ids: Iterable[str]
) -> dict[str, float]:
    """BM25 of the visible facts among `ids` that hold a lexeme."""
    return _scored(connection, terms, visibility, share=1.0, ids=list(ids))


def _scored(
    connection: Connection,
    terms: QueryTerms,
    visibility: Visibility,
    *,
    share: float,
    limit: int | None = None,
    ids: list[str] | None = None,
) -> dict[str, float]:
    """BM25 of the visible facts holding a lexeme: the best `limit`, of every holder or of
    those among `ids`. Scores equal to nine decimals tie, and ties go to the older
    fact: the sum's order of terms follows the plan, so a score's last bits can differ between
    two queries, and a tie at the cut must not depend on them."""
    if not terms:
        return {}
    where, params = visible(visibility, share=share)
    tsquery = " | ".join("'" + t.replace("\\", "\\\\").replace("'", "''") + "'" for t in terms.idf)
    extra: dict[str, Any] = {
        "tsq": tsquery,
        "terms": list(terms.idf),
        "idfs": list(terms.idf.values()),
        "limit": limit,
    }
    # Facts given by id are found by id, not through the GIN index (a common lexeme's bitmap
    # is much of the store); one holding no lexeme has no row to join and drops out.
    found_by = "s.tsv @@ CAST(:tsq AS tsquery)"
    if ids is not None:
        found_by, extra["ids"] = "s.record_id = ANY(:ids)", ids
    rows = connection.execute(
        text(
            f"""WITH q AS (SELECT * FROM unnest(CAST(:terms AS text[]),
                    CAST(:idfs AS float8[])) AS q(term, idf)),
            {AVERAGE_LENGTH}
            SELECT record_id, bm25 FROM (
                SELECT s.record_id, s.created_at, sum(q.idf * {TERM_WEIGHT}) AS bm25
                FROM fact_search s CROSS JOIN st
                CROSS JOIN LATERAL unnest(s.tsv) AS u
                JOIN q ON q.term = u.lexeme
                WHERE {found_by} AND {where}
                GROUP BY s.record_id, s.created_at) AS scored
            ORDER BY round(CAST(bm25 AS numeric), 9) DESC, created_at, record_id
            LIMIT :limit"""
        ),
        {**params, **extra},
    )
    return {str(row[0]): float(row[1]) for row in rows}
