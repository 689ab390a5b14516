"""Impact-ordered postings for the server's lexical leg: one row per (lexeme, current fact)
with the fact's BM25 term weight for that lexeme, indexed by lexeme and weight.

The weight (the "impact") is BM25's term-frequency part, tf x (k1 + 1) / (tf + k1 x (1 - b +
b x length / average)), with the average document length of the moment the row was written;
the query's idf multiplies it at query time. Reading a lexeme's postings best first gives the
facts where the lexeme weighs most without touching the others: engine/retrieval/pg_lexical.py
takes a bounded number per lexeme as its candidates at scale, then scores those exactly.

Kept by engine/retrieval/pg_derived.py's sync after `fact_search` (whose rows they are made
from), as a part of its own in `fact_search_state` ("postings"): a store whose search rows
predate this table gets its postings at the next sync, and `reindex` rebuilds them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, text

from engine.retrieval.lexical import Bm25Index

# BM25's term-frequency part of lexeme `u` (a tsvector entry) in fact_search row `s`, and the
# CTE `st` it reads the average length from; pg_lexical scores with the same SQL.
AVERAGE_LENGTH = """st AS (SELECT greatest(total_len::float8 / greatest(docs, 1), 1e-9) AS avg
    FROM fact_search_state WHERE name = 'search')"""


def _term_weight() -> str:
    k1, b = (f"CAST({value!r} AS float8)" for value in (Bm25Index.K1, Bm25Index.B))
    return f"""cardinality(u.positions) * ({k1} + 1)
    / (cardinality(u.positions) + {k1} * (1 - {b} + {b} * s.doc_len / st.avg))"""


TERM_WEIGHT = _term_weight()
PART = "postings"
# The table's layout, kept in the part's state row (model_id): rows of an older layout are
# written again at the next sync.
LAYOUT = "postings-2"
# Each row carries its fact's visibility columns (a copy of fact_search's), and the lexeme
# index holds them too: a lexeme's visible postings are read from the index alone, where
# looking each fact up in fact_search cost about 10 us a posting at a million facts.
_TABLE = """CREATE TABLE IF NOT EXISTS fact_postings (
    record_id text NOT NULL,
    term text NOT NULL,
    impact real NOT NULL,
    collection text NOT NULL,
    scopes text[] NOT NULL,
    expires_at timestamptz,
    PRIMARY KEY (record_id, term))"""
_BY_IMPACT = """CREATE INDEX IF NOT EXISTS ix_fact_postings_impact
    ON fact_postings (term, impact DESC, record_id) INCLUDE (collection, scopes, expires_at)"""


def apply(
    connection: Connection, part: dict[str, Any] | None, changed: Sequence[str] | None, seq: int
) -> None:
    """Bring the postings to `seq`: the rows of `changed` facts replaced, or (None, no part
    yet, or an older layout) every row written again, the lexeme index built after the rows."""
    if part is None or changed is None or part["model_id"] != LAYOUT:
        connection.execute(text("DROP TABLE IF EXISTS fact_postings"))
        connection.execute(text(_TABLE))
        connection.execute(text(f"DELETE FROM fact_search_state WHERE name = '{PART}'"))
        connection.execute(
            text(
                f"""INSERT INTO fact_search_state (name, seq, model_id)
                VALUES ('{PART}', 0, :layout)"""
            ),
            {"layout": LAYOUT},
        )
        _insert(connection, None)
        connection.execute(text(_BY_IMPACT))
        # Statistics now, not when autovacuum gets to it: without them the planner read a
        # lexeme's postings through plans made for an empty table.
        connection.execute(text("ANALYZE fact_postings"))
    elif changed:
        connection.execute(
            text("DELETE FROM fact_postings WHERE record_id = ANY(:ids)"), {"ids": list(changed)}
        )
        _insert(connection, list(changed))
    connection.execute(
        text(f"UPDATE fact_search_state SET seq = :seq WHERE name = '{PART}'"), {"seq": seq}
    )


def _insert(connection: Connection, ids: list[str] | None) -> None:
    """The postings of the current facts `ids` (every fact: None), from their search rows."""
    restrict = "WHERE s.record_id = ANY(:ids)" if ids is not None else ""
    connection.execute(
        text(
            f"""WITH {AVERAGE_LENGTH}
            INSERT INTO fact_postings (record_id, term, impact, collection, scopes, expires_at)
            SELECT s.record_id, u.lexeme, {TERM_WEIGHT}, s.collection, s.scopes, s.expires_at
            FROM fact_search s CROSS JOIN st CROSS JOIN LATERAL unnest(s.tsv) AS u
            {restrict}"""
        ),
        {"ids": ids} if ids is not None else {},
    )
