"""The keyed memory API (docs/contract.md section 8, seed 003), over the same facts, history kept.

A key names a chain of facts in the default collection under the scope `kv:<namespace>`:
revision n is the chain's n-th fact, and an update (`if_revision`) supersedes the head through
the ordinary write path (engine.remember: file first, then the index row, under the store's
write lock, with the supersede compare-and-swap), so every revision stays readable. The
keyed fields live in the fact file's `workbench.keyed` (and `workbench.expiresAt`); the index
keeps them in FactRow's kv_* columns, which `reindex` rebuilds from the files.

Every request is validated against seed 003 (jsonschema, draft 2020-12) before anything runs,
and every response against its schema in schemas/ before it leaves. Surfaces call
`remember`, `recall`, `search` (each taking the request dict), `get` and `history`; recall
lives in engine/keyed/query.py, search in engine/keyed/search.py, cursors and byte budgets in
engine/keyed/cursor.py, and what the three share about keyed rows in engine/keyed/heads.py.
docs/keyed-api.md is the user-facing description."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import iso_utc
from engine.contract.validation import ensure_valid
from engine.keyed.heads import COLLECTION, fact_columns, hit_from_row
from engine.keyed.query import recall as _recall
from engine.keyed.requests import (
    MemoryInput,
    as_int,
    key_or_new,
    memory_input,
    namespace_scope,
    validate_request,
)
from engine.keyed.search import search as _search
from engine.memory.remember import RememberRequest
from engine.memory.remember import remember as write_fact
from engine.storage import tables

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

DEFAULT_CALLER = "keyed-api"
MAX_TTL_SECONDS = 100 * 366 * 86_400


# -- chains -----------------------------------------------------------------------------------


def _is_live(row: tables.FactRow, now: datetime) -> bool:
    return row.is_current(now)


def _chain(session: Session, namespace: str, key: str) -> list[tables.FactRow]:
    fact = fact_columns()
    return list(
        session.scalars(
            select(tables.FactRow)
            .where(fact.collection == COLLECTION)
            .where(fact.kv_namespace == namespace)
            .where(fact.kv_key == key)
            .order_by(fact.kv_revision, fact.created_at)
        )
    )


def _head(session: Session, namespace: str, key: str) -> tables.FactRow | None:
    chain = _chain(session, namespace, key)
    return chain[-1] if chain else None


# -- remember / get / history -----------------------------------------------------------------


def remember(
    engine: MemoryEngine,
    request: Any,
    *,
    namespace: str | None = None,
    caller: str = DEFAULT_CALLER,
    session: str = DEFAULT_CALLER,
) -> dict[str, Any]:
    """RememberRequest -> the stored hit (seed 003; docs/contract.md section 8).

    No `if_revision`: create-only. A new key starts at revision 1; a retry with the same
    content, topic, tags and metadata returns the stored head; different ones are
    MEMORY_KEY_EXISTS. With `if_revision`: it must be the live head's revision
    (MEMORY_REVISION_CONFLICT otherwise), and the new revision supersedes the head."""
    validate_request("remember", request)
    name, scope = namespace_scope(namespace)
    key = key_or_new(request.get("key"))
    memory = memory_input(request["memory"])
    ttl = as_int(request.get("ttl_seconds"))
    if ttl is not None and not 1 <= ttl <= MAX_TTL_SECONDS:
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"ttl_seconds is {ttl}; use 1 to {MAX_TTL_SECONDS} (100 years), or omit it for a "
            "memory that does not expire.",
        )
    if_revision = as_int(request.get("if_revision"))
    with engine.write_lock():
        now = engine.now()
        with Session(engine.db, expire_on_commit=False) as db:
            head = _head(db, name, key)
        live = head is not None and _is_live(head, now)
        if if_revision is None:
            if head is not None and live:
                if _same_memory(head, memory):
                    return ensure_valid("keyed_hit", hit_from_row(head))  # a retried create
                raise MemoryFailure(
                    "MEMORY_KEY_EXISTS",
                    f"Key {key!r} already holds revision {head.kv_revision} with other content. "
                    f"To replace it, pass if_revision: {head.kv_revision}; to keep both, use "
                    "another key (or omit key for a new UUID).",
                )
        elif head is None or not live:
            raise MemoryFailure(
                "MEMORY_KEY_NOT_FOUND",
                f"Key {key!r} has no live revision to update"
                + (f" (revision {head.kv_revision} expired or was retired)" if head else "")
                + ". Omit if_revision to create it.",
            )
        elif head.kv_revision != if_revision:
            raise _revision_conflict(key, if_revision, head.kv_revision)
        # An expired head is still the chain's head: the new revision supersedes it.
        predecessor = (
            head
            if head is not None and head.superseded_by is None and (head.retired_at is None)
            else None
        )
        revision = (head.kv_revision or 0) + 1 if head is not None else 1
        return _write(
            engine,
            name,
            scope,
            key,
            revision,
            memory,
            ttl,
            predecessor,
            now,
            caller=caller,
            session=session,
            if_revision=if_revision,
        )


def _same_memory(head: tables.FactRow, memory: MemoryInput) -> bool:
    keyed = head.workbench.get("keyed") or {}
    return (
        head.text == memory.content
        and head.kv_topic == memory.topic
        and list(keyed.get("tags") or []) == memory.tags
        and (keyed.get("metadata") or {}) == memory.metadata
    )


def _revision_conflict(key: str, given: int | None, current: int | None) -> MemoryFailure:
    return MemoryFailure(
        "MEMORY_REVISION_CONFLICT",
        f"Key {key!r} is at revision {current}, not {given}: it changed since you read it. "
        "Read it again (recall or `gno-tui memory get`) and retry with if_revision: "
        f"{current}.",
    )


def _write(
    engine: MemoryEngine,
    namespace: str,
    scope: str,
    key: str,
    revision: int,
    memory: MemoryInput,
    ttl: int | None,
    predecessor: tables.FactRow | None,
    now: datetime,
    *,
    caller: str,
    session: str,
    if_revision: int | None,
) -> dict[str, Any]:
    keyed: dict[str, Any] = {
        "namespace": namespace,
        "key": key,
        "revision": revision,
        "topic": memory.topic,
        "tags": memory.tags,
        "metadata": memory.metadata,
    }
    if memory.occurred_at_ms is not None:  # omitted: the write time (createdAt)
        keyed["occurredAtMs"] = memory.occurred_at_ms
    workbench: dict[str, Any] = {"keyed": keyed}
    if ttl is not None:
        workbench["expiresAt"] = iso_utc(now + timedelta(seconds=ttl))
    request = RememberRequest(
        text=memory.content,
        scopes=[scope],
        caller=caller,
        session=session,
        decision="supersede" if predecessor is not None else "add",
        predecessor=predecessor.uri if predecessor is not None else None,
        predecessor_hash=predecessor.content_hash if predecessor is not None else None,
        collection=COLLECTION,
        workbench=workbench,
        keyed=True,
    )
    try:
        result = write_fact(engine, request, locked=True)  # we hold the write lock
    except MemoryFailure as failure:
        if failure.code != "MEMORY_SUPERSEDE_CONFLICT":
            raise
        with Session(engine.db, expire_on_commit=False) as db:
            head = _head(db, namespace, key)
        raise _revision_conflict(key, if_revision, head.kv_revision if head else None) from None
    if result.get("sync", {}).get("status") != "completed":
        raise MemoryFailure(
            "MEMORY_SYNC_FAILED",
            f"Revision {revision} of key {key!r} was written to {result.get('absPath')} but "
            f"the index was not updated ({result.get('sync', {}).get('error')}). Run "
            "`gno-tui reindex` to repair the index; the memory is not lost.",
        )
    with Session(engine.db, expire_on_commit=False) as db:
        row = db.get(tables.FactRow, result["record"]["recordId"])
    assert row is not None
    return ensure_valid("keyed_hit", hit_from_row(row))


def get(engine: MemoryEngine, key: str, *, namespace: str | None = None) -> dict[str, Any]:
    """The live head of `key`, or MEMORY_KEY_NOT_FOUND."""
    name, _ = namespace_scope(namespace)
    with Session(engine.db, expire_on_commit=False) as db:
        head = _head(db, name, key)
    if head is None or not _is_live(head, engine.now()):
        raise MemoryFailure(
            "MEMORY_KEY_NOT_FOUND",
            f"No live memory has the key {key!r} in namespace {name!r} (never written, "
            "expired or retired). Check the key and namespace, or create it with remember.",
        )
    return ensure_valid("keyed_hit", hit_from_row(head))


def history(engine: MemoryEngine, key: str, *, namespace: str | None = None) -> dict[str, Any]:
    """Every revision of `key`, oldest first (superseded and retired ones included; expired
    ones are never returned)."""
    name, _ = namespace_scope(namespace)
    now = engine.now()
    with Session(engine.db, expire_on_commit=False) as db:
        chain = _chain(db, name, key)
    items = [hit_from_row(row) for row in chain if row.expires_at is None or row.expires_at > now]
    if not items:
        raise MemoryFailure(
            "MEMORY_KEY_NOT_FOUND",
            f"No revision of key {key!r} in namespace {name!r} is readable (never written, or "
            "every revision expired).",
        )
    return ensure_valid("keyed_history", {"key": key, "items": items})


# -- recall and search (engine/keyed/query.py, engine/keyed/search.py) -------------------------


def recall(engine: MemoryEngine, request: Any, *, namespace: str | None = None) -> dict[str, Any]:
    """MemoryQuery -> `{items, next_cursor, scanned, scanned_bytes}`, newest event first."""
    return _recall(engine, request, namespace=namespace)


def search(engine: MemoryEngine, request: Any, *, namespace: str | None = None) -> dict[str, Any]:
    """SearchQuery -> `{items: [{score, ...hit}], next_cursor, truncated}`, ranked by BM25."""
    return _search(engine, request, namespace=namespace)
