"""Query helpers over the facts table and the public shapes of a fact.

Helpers take an explicit session and keyword-only arguments; none opens its own session."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from engine.contract.normalize import iso_utc
from engine.retrieval.snapshot import IndexedFact
from engine.storage import tables
from engine.storage.factfiles import FactFile


def public_fact(fact: tables.FactRow | IndexedFact) -> dict[str, Any]:
    """The seed's `fact` object: exactly its properties, `source` only when there is one."""
    assert fact.created_at is not None
    shaped: dict[str, Any] = {
        "uri": fact.uri,
        "docid": fact.docid,
        "recordId": fact.record_id,
        "text": fact.text,
        "scopes": list(fact.scopes),
        "caller": fact.caller,
        "session": fact.session,
        "createdAt": iso_utc(fact.created_at),
        "contentHash": fact.content_hash,
        "supersedes": list(fact.supersedes),
    }
    if fact.source:
        shaped["source"] = fact.source
    return shaped


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


def current_duplicate(
    session: Session, *, collection: str, content_hash: str, scopes: Sequence[str], now: datetime
) -> tables.FactRow | None:
    """A current fact with the same content hash sharing at least one scope."""
    rows = session.scalars(
        select(tables.FactRow)
        .join(tables.FactScopeRow, tables.FactScopeRow.record_id == tables.FactRow.record_id)
        .where(tables.FactRow.collection == collection)
        .where(tables.FactRow.content_hash == content_hash)
        .where(tables.FactScopeRow.scope.in_(list(scopes)))
        .where(tables.FactRow.superseded_by.is_(None))
        .where(tables.FactRow.retired_at.is_(None))
        .where(or_(tables.FactRow.expires_at.is_(None), tables.FactRow.expires_at > now))
        .order_by(tables.FactRow.created_at)
    ).all()
    return rows[0] if rows else None


def allocate_docid(session: Session, *, record_id: str, taken: set[str] | None = None) -> str:
    """`#` + the first 8 hex of the record id, longer only when that is already in use."""
    hex_part = record_id.removeprefix("mem-")
    for length in range(8, len(hex_part) + 1):
        candidate = "#" + hex_part[:length]
        if taken is not None:
            if candidate not in taken:
                return candidate
            continue
        if (
            session.scalars(
                select(tables.FactRow.record_id).where(tables.FactRow.docid == candidate)
            ).first()
            is None
        ):
            return candidate
    return "#" + hex_part


def row_from_file(
    fact: FactFile, *, collection: str, uri: str, rel_path: str, docid: str
) -> tables.FactRow:
    return tables.FactRow(
        **row_fields(fact, collection=collection, uri=uri, rel_path=rel_path, docid=docid)
    )


def row_fields(
    fact: FactFile, *, collection: str, uri: str, rel_path: str, docid: str
) -> dict[str, Any]:
    """The facts-table columns of a fact file, by name: a FactRow's fields, or the values of a
    bulk insert (building 100k FactRow objects cost an import a third of its time)."""
    from engine.contract.normalize import parse_iso

    workbench = dict(fact.workbench)
    retired = workbench.get("retired") if isinstance(workbench.get("retired"), dict) else None
    expires = workbench.get("expiresAt")
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
        created_at=parse_iso(fact.created_at),
        source=fact.source,
        supersedes=list(fact.supersedes),
        retired_at=parse_iso(retired["at"]) if retired and retired.get("at") else None,
        retired_by=retired.get("by") if retired else None,
        retired_reason=retired.get("reason") if retired else None,
        expires_at=parse_iso(expires) if isinstance(expires, str) else None,
        workbench=workbench,
        **keyed_columns(workbench, parse_iso(fact.created_at)),
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
