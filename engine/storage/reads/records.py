"""Query helpers over the facts table and the public shapes of a fact.

Helpers take an explicit session and keyword-only arguments; none opens its own session."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, bindparam, column, insert, select, table, text
from sqlalchemy.orm import Session

from engine.contract import visibility
from engine.contract.normalize import iso_utc
from engine.storage.embedded.factfiles import FactFile
from engine.storage.reads.fact_shape import public_fact as public_fact  # re-exported
from engine.storage.schema import tables

if TYPE_CHECKING:
    from engine.storage.embedded.sqlite_driver import DriverStatements


def get_fact(session: Session, *, ref: str) -> tables.FactRow | None:
    """A fact by gno:// uri, recordId or docid."""
    column = (
        tables.FactRow.uri
        if ref.startswith("gno://")
        else tables.FactRow.docid
        if ref.startswith("#")
        else tables.FactRow.record_id
    )
    return session.scalars(select(tables.FactRow).where(column == ref)).first()


# The write path's queries, built once: through the Core tables (not the ORM entities) and
# with bound parameters, so that a call only binds values. Building the statement anew on
# each call (a dozen expression objects, then its cache key) took five times as long as
# running it, and an add is a few milliseconds in all.
_FACTS = tables.FactRow.__table__
_FACT_SCOPES = tables.FactScopeRow.__table__
_FACT, _FACT_SCOPE = _FACTS.c, _FACT_SCOPES.c
# Every current copy of the text with each of its scopes, oldest first; the scopes are
# matched here, not in SQL: an IN list of the write's scopes would make SQLAlchemy render the
# statement anew on every call (an expanding parameter), a third of the check's cost.
_CURRENT_COPIES = (
    select(_FACT.record_id, _FACT_SCOPE.scope)
    .join(_FACT_SCOPES, _FACT_SCOPE.record_id == _FACT.record_id)
    .where(_FACT.collection == bindparam("collection"))
    .where(_FACT.content_hash == bindparam("content_hash"))
    .where(visibility.current_clause(_FACT, bindparam("now")))
    .order_by(_FACT.created_at, _FACT.record_id)
)
_DOCID_HOLDER = select(_FACT.record_id).where(_FACT.docid == bindparam("docid")).limit(1)


def current_duplicate(
    session: Session,
    *,
    collection: str,
    content_hash: str,
    scopes: Sequence[str],
    now: datetime,
    statements: DriverStatements | None = None,
) -> tables.FactRow | None:
    """A current fact with the same content hash sharing at least one scope (the oldest).
    `statements`: a group commit's, on SQLite's driver
    (engine/storage/embedded/sqlite_driver.py)."""
    wanted = set(scopes)
    values = {"collection": collection, "content_hash": content_hash}
    copies = (
        statements.rows(_CURRENT_COPIES, {**values, "now": iso_utc(now)})
        if statements is not None
        else session.execute(_CURRENT_COPIES, {**values, "now": now})
    )
    record_id = next((found for found, scope in copies if scope in wanted), None)
    return None if record_id is None else session.get(tables.FactRow, record_id)


def allocate_docid(
    session: Session | None,
    *,
    record_id: str,
    taken: set[str] | None = None,
    statements: DriverStatements | None = None,
) -> str:
    """`#` + the first 8 hex of the record id, longer only when that is already in use (in
    `taken` when given, else in the index through `statements` or `session`)."""
    hex_part = record_id.removeprefix("mem-")
    for length in range(8, len(hex_part) + 1):
        candidate = "#" + hex_part[:length]
        if taken is not None:
            if candidate not in taken:
                return candidate
            continue
        if statements is not None:
            if not statements.rows(_DOCID_HOLDER, {"docid": candidate}):
                return candidate
            continue
        assert session is not None
        if session.execute(_DOCID_HOLDER, {"docid": candidate}).first() is None:
            return candidate
    return "#" + hex_part


def row_from_file(
    fact: FactFile, *, collection: str, uri: str, rel_path: str, docid: str
) -> tables.FactRow:
    return tables.FactRow(
        **row_fields(fact, collection=collection, uri=uri, rel_path=rel_path, docid=docid)
    )


class FactValues(SimpleNamespace):
    """A new fact's columns as attributes, as a FactRow has them, for the single write (its
    rows go in as plain inserts, records.py's note below): a FactRow's ORM instrumentation
    cost a write a twelfth of its hold of the write lock. Every column is there, None unless
    set, as in a FactRow."""


NewFact = tables.FactRow | FactValues  # what the single write's index half takes


def values_from_file(
    fact: FactFile, *, collection: str, uri: str, rel_path: str, docid: str
) -> FactValues:
    values = dict.fromkeys(FACT_COLUMNS)
    values.update(row_fields(fact, collection=collection, uri=uri, rel_path=rel_path, docid=docid))
    return FactValues(**values)


def row_fields(
    fact: FactFile, *, collection: str, uri: str, rel_path: str, docid: str
) -> dict[str, Any]:
    """The facts-table columns of a fact file, by name: a FactRow's fields, or the values of a
    bulk insert (building 100k FactRow objects cost an import a third of its time)."""
    from engine.contract.normalize import parse_iso

    workbench = dict(fact.workbench)
    retired = workbench.get("retired") if isinstance(workbench.get("retired"), dict) else None
    expires = workbench.get("expiresAt")
    created_at = parse_iso(fact.created_at)
    return dict(
        record_id=fact.record_id,
        docid=docid,
        uri=uri,
        collection=collection,
        rel_path=rel_path,
        text=fact.text,
        content_hash=fact.content_hash,
        scopes=list(fact.scopes),
        caller=fact.caller,
        session=fact.session,
        created_at=created_at,
        source=fact.source,
        supersedes=list(fact.supersedes),
        retired_at=parse_iso(retired["at"]) if retired and retired.get("at") else None,
        retired_by=retired.get("by") if retired else None,
        retired_reason=retired.get("reason") if retired else None,
        expires_at=parse_iso(expires) if isinstance(expires, str) else None,
        workbench=workbench,
        **keyed_columns(workbench, created_at),
    )


# Separates the tags in FactRow.kv_tags; a tag cannot hold it (no control characters).
KEYED_TAG_SEPARATOR = "\x1f"


def keyed_columns(workbench: dict[str, Any], created_at: datetime) -> dict[str, Any]:
    """The FactRow kv_* columns of a keyed-API fact (`workbench.keyed`), {} for any other.
    An omitted `occurredAtMs` means the write time (createdAt)."""
    keyed = workbench.get("keyed")
    if not isinstance(keyed, dict) or not isinstance(keyed.get("key"), str):
        return {}
    tags = [tag for tag in keyed.get("tags") or [] if isinstance(tag, str)]
    topic, revision, namespace = keyed.get("topic"), keyed.get("revision"), keyed.get("namespace")
    occurred = keyed.get("occurredAtMs")
    if not isinstance(occurred, int) or isinstance(occurred, bool):
        occurred = (created_at - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)
    return {
        "kv_namespace": namespace if isinstance(namespace, str) else "default",
        "kv_key": keyed["key"],
        "kv_revision": revision if isinstance(revision, int) else 1,
        "kv_topic": topic if isinstance(topic, str) else None,
        "kv_tags": (
            KEYED_TAG_SEPARATOR + KEYED_TAG_SEPARATOR.join(tags) + KEYED_TAG_SEPARATOR
            if tags
            else None
        ),
        "kv_occurred_at_ms": occurred,
    }


def scope_rows(row: tables.FactRow) -> list[tables.FactScopeRow]:
    return [tables.FactScopeRow(record_id=row.record_id, scope=scope) for scope in row.scopes]


# -- rows as the tables store them ---------------------------------------------------------
# Inserts of plain values through bare table clauses: SQLAlchemy's ORM flush and its per-value
# type processing are skipped (bulk imports insert thousands of rows this way; a single add
# saves most of its index write). The `facts` table's triggers fire as for any insert.

FACT_COLUMNS = [column_.name for column_ in tables.FactRow.__table__.columns]
_JSON_COLUMNS = {
    column_.name for column_ in tables.FactRow.__table__.columns if isinstance(column_.type, JSON)
}
_TIME_COLUMNS = {
    column_.name
    for column_ in tables.FactRow.__table__.columns
    if isinstance(column_.type, tables.UtcDateTime)
}
FACTS_TABLE = table("facts", *(column(name) for name in FACT_COLUMNS))
FACT_SCOPES_TABLE = table("fact_scopes", column("record_id"), column("scope"))
# The single write's statements (records.py's note on building them once).
INSERT_FACT = insert(FACTS_TABLE)
INSERT_FACT_SCOPES = insert(FACT_SCOPES_TABLE)
_EMBEDDING_COLUMNS = ("record_id", "model_id", "content_hash", "vector")
INSERT_EMBEDDING = insert(table("embeddings", *(column(name) for name in _EMBEDDING_COLUMNS)))
# A fact's vector, replacing one left by a fact that reindex took out of the index (same
# record id). ON CONFLICT ... DO UPDATE is the same on SQLite (3.24+) and PostgreSQL.
UPSERT_EMBEDDING = text(
    "INSERT INTO embeddings (record_id, model_id, content_hash, vector) "
    "VALUES (:record_id, :model_id, :content_hash, :vector) "
    "ON CONFLICT (record_id) DO UPDATE SET model_id = excluded.model_id, "
    "content_hash = excluded.content_hash, vector = excluded.vector"
)


def stored_fact(row: Any) -> dict[str, Any]:
    """A fact's column values as the facts table stores them (what the column types would
    bind: JSON as text, times as ISO 8601 UTC), from a FactRow or anything with its fields."""
    values: dict[str, Any] = {}
    for name in FACT_COLUMNS:
        value = getattr(row, name, None)
        if value is not None and name in _JSON_COLUMNS:
            value = json.dumps(value)
        elif value is not None and name in _TIME_COLUMNS:
            value = iso_utc(value)
        values[name] = value
    return values


def stored_scopes(row: Any) -> list[dict[str, Any]]:
    """The fact_scopes rows of a fact, as values."""
    return [{"record_id": row.record_id, "scope": scope} for scope in row.scopes]
