"""The PostgreSQL backend's derived tables, kept up to date from the change log.

PostgresIndex (engine/retrieval/postgres.py) ranks inside the database, over tables derived
from `facts` that only it writes:

- `fact_search`: one row per current fact (neither superseded nor retired; expiry is checked
  at query time): the visibility columns (scopes as text[], collection, expiry), a tsvector of
  the text (english stemming, GIN index), its length in lexemes, and its content words for
  word alignment;
- `fact_terms` / `fact_words` / `fact_scope_counts`: how many current facts hold each lexeme /
  content word / scope (BM25's and word alignment's document frequencies, and how much of the
  store a query's scopes let it see; kept so no query has to count them);
- `fact_vectors`: the embedding block of each current fact (row 0 the whole text, then one row
  per sentence), as pgvector `vector(dims)` with HNSW indexes (cosine) over all rows and over
  row 0 alone (dedup compares whole texts);
- `fact_postings`: each current fact's lexemes with their BM25 term weights, read best first
  per lexeme (engine/retrieval/pg_postings.py);
- `fact_search_state`: per derived part ("search", "postings", "vectors"), the last change log
  seq it reflects, the live document count and total length, and the vectors' model.

Whoever writes a fact, the triggers on `facts` log it in `fact_changes`
(engine/storage/schema/database.py). Before a query, `sync` applies the changes after the stored
seq, in one transaction under a transaction-level advisory lock, so two processes never apply
the same changes twice and a reader never sees half of an application. Applying a change
re-reads the fact's row and replaces its derived rows, so applying one twice changes nothing.
Like the in-memory index this relies on `seq` order being commit order (writes serialised)."""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import numpy as np
from sqlalchemy import Connection, Engine, text

from engine.contract import visibility
from engine.retrieval import pg_postings
from engine.retrieval.embeddings import Embedder, embed_facts, vector_from_bytes
from engine.retrieval.lexical import content_words

# One advisory lock key for every process applying changes to this database's derived tables.
ADVISORY_KEY = zlib.crc32(b"gno-tui:fact_search")
# Facts whose derived rows are rebuilt per statement: bounds a statement's parameters.
CHUNK = 2_000

_SEARCH_DDL = (
    """CREATE TABLE IF NOT EXISTS fact_search (
        record_id text PRIMARY KEY,
        collection text NOT NULL,
        scopes text[] NOT NULL,
        expires_at timestamptz,
        created_at timestamptz NOT NULL,
        content_hash text NOT NULL,
        tsv tsvector NOT NULL,
        doc_len integer NOT NULL,
        words text[] NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS ix_fact_search_tsv ON fact_search USING gin (tsv)",
    "CREATE INDEX IF NOT EXISTS ix_fact_search_scopes ON fact_search USING gin (scopes)",
    "CREATE INDEX IF NOT EXISTS ix_fact_search_hash ON fact_search (content_hash)",
    "CREATE INDEX IF NOT EXISTS ix_fact_search_collection ON fact_search (collection)",
    "CREATE TABLE IF NOT EXISTS fact_terms (term text PRIMARY KEY, df integer NOT NULL)",
    "CREATE TABLE IF NOT EXISTS fact_words (word text PRIMARY KEY, df integer NOT NULL)",
    "CREATE TABLE IF NOT EXISTS fact_scope_counts (scope text PRIMARY KEY, df integer NOT NULL)",
    """CREATE TABLE IF NOT EXISTS fact_search_state (
        name text PRIMARY KEY,
        seq bigint NOT NULL,
        docs bigint NOT NULL DEFAULT 0,
        total_len bigint NOT NULL DEFAULT 0,
        model_id text,
        dims integer)""",
)
_VECTORS_DDL = (
    """CREATE TABLE IF NOT EXISTS fact_vectors (
        record_id text NOT NULL,
        row_no integer NOT NULL,
        embedding vector({dims}) NOT NULL,
        PRIMARY KEY (record_id, row_no))""",
    """CREATE INDEX IF NOT EXISTS ix_fact_vectors_hnsw ON fact_vectors
        USING hnsw (embedding vector_cosine_ops)""",
    """CREATE INDEX IF NOT EXISTS ix_fact_vectors_whole ON fact_vectors
        USING hnsw (embedding vector_cosine_ops) WHERE row_no = 0""",
)


def _current(alias: str = "facts") -> str:
    """The live facts (engine/contract/visibility.py): expiry is checked at query time."""
    return visibility.live_sql(alias)


def vector_literal(vector: np.ndarray) -> str:
    """pgvector's text form. Nine significant digits give back every float32 exactly (pgvector
    reads them with strtof), and one format call for the whole row costs a fifth of a repr per
    value, which was a tenth of a server import's time."""
    values = np.asarray(vector, dtype=np.float32).astype(np.float64).tolist()
    return _literal_format(len(values)) % tuple(values)


@lru_cache(maxsize=8)
def _literal_format(dims: int) -> str:
    return "[" + ",".join(["%.9g"] * dims) + "]"


def parse_vector(literal: str) -> np.ndarray:
    return np.asarray(literal.strip("[]").split(","), dtype=np.float32)


def _state(connection: Connection) -> dict[str, Any]:
    rows = connection.execute(text("SELECT * FROM fact_search_state")).mappings()
    return {row["name"]: dict(row) for row in rows}


def _newest(connection: Connection) -> int:
    return int(connection.scalar(text("SELECT coalesce(max(seq), 0) FROM fact_changes")) or 0)


def _pruned_to(connection: Connection) -> int:
    value = connection.scalar(text("SELECT value FROM store_meta WHERE name = 'changes_pruned_to'"))
    return int(value or 0)


# The search part's layout, kept in its state row's model_id: a store whose search rows were
# written in an older layout (without fact_scope_counts) has them written again at the next sync.
SEARCH_LAYOUT = "search-2"


def _behind(state: dict[str, Any], newest: int, embedder: Embedder | None) -> bool:
    for name, layout in (("search", SEARCH_LAYOUT), (pg_postings.PART, pg_postings.LAYOUT)):
        part = state.get(name)
        if part is None or part["seq"] != newest or part["model_id"] != layout:
            return True
    if embedder is None:
        return False
    vectors = state.get("vectors")
    return vectors is None or vectors["seq"] != newest or vectors["model_id"] != embedder.model_id


def sync(db: Engine, embedder: Embedder | None) -> int:
    """Bring the derived tables up to the change log (a no-op, one small read, when they are);
    returns how many current facts they hold."""
    with db.connect() as connection:
        try:
            # One round trip: the derived parts' states and the log's newest seq.
            rows = connection.execute(
                text(
                    """SELECT st.*, (SELECT coalesce(max(seq), 0) FROM fact_changes) AS newest
                    FROM fact_search_state st"""
                )
            ).mappings()
            state = {row["name"]: dict(row) for row in rows}
            newest = next(iter(state.values()))["newest"] if state else -1
        except Exception:  # noqa: BLE001 - no derived tables yet: created below, under the lock
            connection.rollback()
            state, newest = {}, -1
        if not _behind(state, newest, embedder):
            return int(state["search"]["docs"])
    with db.begin() as connection:
        connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": ADVISORY_KEY})
        for statement in _SEARCH_DDL:
            connection.execute(text(statement))
        # Read again under the lock: another process may have applied them meanwhile.
        state, newest = _state(connection), _newest(connection)
        _apply_search(connection, state.get("search"), newest)
        postings = state.get(pg_postings.PART)
        pg_postings.apply(connection, postings, _changed(connection, postings, newest), newest)
        if embedder is not None:
            _apply_vectors(connection, state.get("vectors"), newest, embedder)
        return int(_state(connection)["search"]["docs"])


def _changed(connection: Connection, part: dict[str, Any] | None, newest: int) -> list[str] | None:
    """Record ids changed since the part's seq, or None when it must be rebuilt: never built,
    the log pruned past it, or the log younger than it (a recreated database). The rows are
    read before the horizon: a prune committed between the two is seen by the second."""
    if part is None or part["seq"] > newest:
        return None
    rows = connection.execute(
        text("SELECT DISTINCT record_id FROM fact_changes WHERE seq > :after AND seq <= :upto"),
        {"after": part["seq"], "upto": newest},
    ).all()
    if _pruned_to(connection) > part["seq"]:
        return None
    return [row[0] for row in rows]


def _all_current(connection: Connection) -> list[str]:
    rows = connection.execute(text(f"SELECT record_id FROM facts WHERE {_current()}"))
    return [row[0] for row in rows]


def _apply_search(connection: Connection, part: dict[str, Any] | None, newest: int) -> None:
    changed = _changed(connection, part, newest)
    if part is not None and part["model_id"] != SEARCH_LAYOUT:
        changed = None  # rows of an older layout: written again
    rebuilt = changed is None
    if changed is None:
        connection.execute(text("TRUNCATE fact_search, fact_terms, fact_words, fact_scope_counts"))
        connection.execute(text("DELETE FROM fact_search_state WHERE name = 'search'"))
        connection.execute(
            text(
                """INSERT INTO fact_search_state (name, seq, model_id)
                VALUES ('search', 0, :layout)"""
            ),
            {"layout": SEARCH_LAYOUT},
        )
        changed = _all_current(connection)
    for start in range(0, len(changed), CHUNK):
        _replace_search_rows(connection, changed[start : start + CHUNK])
    if rebuilt:  # statistics now, for the queries that follow (docs/decisions.md)
        connection.execute(text("ANALYZE fact_search, fact_terms, fact_words, fact_scope_counts"))
    connection.execute(
        text("UPDATE fact_search_state SET seq = :seq WHERE name = 'search'"), {"seq": newest}
    )


def _counts(connection: Connection, ids: Sequence[str], step: int) -> None:
    """Add `step` x the rows of `ids` to the document frequencies and the totals."""
    params = {"ids": list(ids), "step": step}
    for table, column, values in (
        ("fact_terms", "term", "tsvector_to_array(s.tsv)"),
        ("fact_words", "word", "s.words"),
        ("fact_scope_counts", "scope", "s.scopes"),
    ):
        connection.execute(
            text(
                f"""INSERT INTO {table} ({column}, df)
                SELECT item, :step * count(*) FROM fact_search s, unnest({values}) AS item
                WHERE s.record_id = ANY(:ids) GROUP BY item
                ON CONFLICT ({column}) DO UPDATE SET df = {table}.df + EXCLUDED.df"""
            ),
            params,
        )
    connection.execute(
        text(
            """UPDATE fact_search_state SET
            docs = docs + :step * (SELECT count(*) FROM fact_search WHERE record_id = ANY(:ids)),
            total_len = total_len + :step * (SELECT coalesce(sum(doc_len), 0)
                FROM fact_search WHERE record_id = ANY(:ids))
            WHERE name = 'search'"""
        ),
        params,
    )


def _replace_search_rows(connection: Connection, ids: Sequence[str]) -> None:
    _counts(connection, ids, -1)
    connection.execute(text("DELETE FROM fact_search WHERE record_id = ANY(:ids)"), {"ids": ids})
    current = connection.execute(
        text(f"SELECT record_id, text FROM facts WHERE record_id = ANY(:ids) AND {_current()}"),
        {"ids": list(ids)},
    ).all()
    if not current:
        return
    # Content words are the engine's own (engine/retrieval/lexical.py), so word alignment
    # matches the in-memory index's; everything else is computed by PostgreSQL in one statement.
    words = {str(row[0]): content_words(str(row[1])) for row in current}
    connection.execute(
        text(
            """INSERT INTO fact_search (record_id, collection, scopes, expires_at, created_at,
                content_hash, tsv, doc_len, words)
            SELECT f.record_id, f.collection,
                ARRAY(SELECT json_array_elements_text(CAST(f.scopes AS json))),
                CAST(f.expires_at AS timestamptz), CAST(f.created_at AS timestamptz),
                f.content_hash, v.tsv,
                (SELECT coalesce(sum(cardinality(u.positions)), 0) FROM unnest(v.tsv) AS u),
                ARRAY(SELECT json_array_elements_text(w.value))
            FROM facts f
            JOIN json_each(CAST(:words AS json)) AS w ON w.key = f.record_id
            CROSS JOIN LATERAL (SELECT to_tsvector('english', f.text) AS tsv) AS v"""
        ),
        {"words": json.dumps(words)},
    )
    _counts(connection, list(words), +1)


def _apply_vectors(
    connection: Connection, part: dict[str, Any] | None, newest: int, embedder: Embedder
) -> None:
    rebuild = part is None or part["model_id"] != embedder.model_id
    changed = None if rebuild else _changed(connection, part, newest)
    table, *indexes = (statement.format(dims=int(embedder.dims)) for statement in _VECTORS_DDL)
    if part is not None and part["dims"] != embedder.dims:
        connection.execute(text("DROP TABLE IF EXISTS fact_vectors"))
    connection.execute(text(table))
    rebuilt = changed is None or _many(connection, len(changed))
    if rebuilt:
        # HNSW is built much faster over the filled table than row by row (10k facts' rows
        # inserted under the two indexes took 18 s; the whole first recall after importing
        # them takes 5.9 s this way). In the transaction, so readers wait for the indexes as
        # they wait for the rows.
        connection.execute(text("DROP INDEX IF EXISTS ix_fact_vectors_hnsw"))
        connection.execute(text("DROP INDEX IF EXISTS ix_fact_vectors_whole"))
    if changed is None:
        connection.execute(text("TRUNCATE fact_vectors"))
        connection.execute(text("DELETE FROM fact_search_state WHERE name = 'vectors'"))
        connection.execute(
            text(
                """INSERT INTO fact_search_state (name, seq, model_id, dims)
                VALUES ('vectors', 0, :model, :dims)"""
            ),
            {"model": embedder.model_id, "dims": embedder.dims},
        )
        changed = _all_current(connection)
    for start in range(0, len(changed), CHUNK):
        _replace_vectors(connection, changed[start : start + CHUNK], embedder)
    if rebuilt:
        _room_for_graphs(connection, embedder.dims)
    for statement in indexes:
        connection.execute(text(statement))
    if rebuilt:
        connection.execute(text("ANALYZE fact_vectors"))
    connection.execute(
        text("UPDATE fact_search_state SET seq = :seq WHERE name = 'vectors'"), {"seq": newest}
    )


# Changed facts past which their vectors are inserted without the HNSW indexes and the indexes
# built again after: at least this many, and at least a quarter of the current facts (an import
# into an empty or small server store, not the next 100k into a million).
REBUILD_MIN_CHANGES = 1_000
REBUILD_SHARE = 0.25


def _many(connection: Connection, changes: int) -> bool:
    current = connection.scalar(text("SELECT docs FROM fact_search_state WHERE name = 'search'"))
    return changes >= max(REBUILD_MIN_CHANGES, REBUILD_SHARE * float(current or 0))


# Memory for building an HNSW index, per vector row: the vector and its neighbour lists, with
# room to spare; at most GRAPH_MEMORY_CAP_KIB for one build.
GRAPH_KIB_PER_ROW_AND_DIM = 2 / 256  # 2 KiB a row at 256 dimensions
GRAPH_MEMORY_CAP_KIB = 1024 * 1024


def _room_for_graphs(connection: Connection, dims: int) -> None:
    """Give this transaction's index builds the memory their graphs need (never less than the
    server's setting). pgvector builds HNSW far more slowly once the graph outgrows
    maintenance_work_mem (64 MB by default): one index over 78k rows took 62.7 s, and 15.6 s
    with room. SET LOCAL: the server's setting is unchanged outside this transaction."""
    rows = int(connection.scalar(text("SELECT count(*) FROM fact_vectors")) or 0)
    current = int(
        connection.scalar(
            text("SELECT setting::bigint FROM pg_settings WHERE name = 'maintenance_work_mem'")
        )
        or 0
    )  # in KiB
    wanted = min(int(rows * dims * GRAPH_KIB_PER_ROW_AND_DIM), GRAPH_MEMORY_CAP_KIB)
    if wanted > current:
        connection.execute(text(f"SET LOCAL maintenance_work_mem = '{wanted}kB'"))


def _replace_vectors(connection: Connection, ids: Sequence[str], embedder: Embedder) -> None:
    """Each current fact's block: the one its writer stored (same model, same text), else
    embedded here."""
    connection.execute(text("DELETE FROM fact_vectors WHERE record_id = ANY(:ids)"), {"ids": ids})
    current = connection.execute(
        text(
            f"""SELECT f.record_id, f.text, e.vector FROM facts f
            LEFT JOIN embeddings e ON e.record_id = f.record_id AND e.model_id = :model
                AND e.content_hash = f.content_hash
            WHERE f.record_id = ANY(:ids) AND {_current("f")}"""
        ),
        {"ids": list(ids), "model": embedder.model_id},
    ).all()
    blocks: dict[str, np.ndarray] = {
        row.record_id: vector_from_bytes(row.vector, embedder.dims)
        for row in current
        if row.vector is not None
    }
    missing = [row for row in current if row.vector is None]
    if missing:
        fresh = embed_facts(embedder, [row.text for row in missing])
        blocks.update((row.record_id, block) for row, block in zip(missing, fresh, strict=True))
    ids, numbers, vectors = [], [], []
    for record_id, block in blocks.items():
        for index, vector in enumerate(block):
            ids.append(record_id)
            numbers.append(index)
            vectors.append(vector_literal(vector))
    if ids:
        # One statement over three arrays: as an executemany, each row was a round trip of
        # its own (10k facts' rows took 21 s, the first recall after importing them).
        connection.execute(
            text(
                """INSERT INTO fact_vectors (record_id, row_no, embedding)
                SELECT id, row_no, CAST(vector AS vector)
                FROM unnest(CAST(:ids AS text[]), CAST(:rows AS integer[]),
                    CAST(:vectors AS text[])) AS given (id, row_no, vector)"""
            ),
            {"ids": ids, "rows": numbers, "vectors": vectors},
        )
