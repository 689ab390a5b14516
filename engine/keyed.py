"""The keyed memory API (DESIGN.md section 8, seed 003), over the same facts, history kept.

A key names a chain of facts in the default collection under the scope `kv:<namespace>`:
revision n is the chain's n-th fact, and an update (`if_revision`) supersedes the head through
the ordinary write path (engine.remember: file first, then the index row, under the store's
write lock, with the supersede compare-and-swap), so every revision stays readable. The
keyed fields live in the fact file's `workbench.keyed` (and `workbench.expiresAt`); the index
keeps them in FactRow's kv_* columns, which `reindex` rebuilds from the files.

Every request is validated against seed 003 (jsonschema, draft 2020-12) before anything runs,
and every response against its schema in schemas/ before it leaves. Surfaces call
`remember`, `recall`, `search` (each taking the request dict), `get` and `history`; recall
lives in engine/keyed_query.py, search in engine/keyed_search.py, cursors and byte budgets in
engine/keyed_cursor.py.
docs/keyed-api.md is the user-facing description."""

from __future__ import annotations

import copy
import json
import re
import unicodedata
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from typing import TYPE_CHECKING, Any

from jsonschema import Draft202012Validator, FormatChecker
from sqlalchemy import select
from sqlalchemy.orm import Session

from engine import keyed_cursor, tables
from engine.contracts import ensure_valid, load_schema
from engine.errors import MemoryFailure
from engine.normalize import clean_text, iso_utc
from engine.remember import KEYED_MAX_CONTENT_BYTES

if TYPE_CHECKING:
    from engine.store import MemoryEngine

COLLECTION = "memory"
DEFAULT_NAMESPACE = "default"
DEFAULT_CALLER = "keyed-api"
MAX_CONTENT_BYTES = KEYED_MAX_CONTENT_BYTES  # 16 KiB of UTF-8
MAX_TAGS = 8
MAX_LABEL_BYTES = 64  # a topic or a tag, after normalisation
MAX_METADATA_BYTES = 8 * 1024  # compact JSON
MAX_KEY_BYTES = 256
MAX_TTL_SECONDS = 100 * 366 * 86_400
MAX_EVENT_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,60}$")


# -- requests ---------------------------------------------------------------------------------


@cache
def _request_validator(kind: str) -> Draft202012Validator:
    return Draft202012Validator(load_schema("keyed_requests")[kind], format_checker=FormatChecker())


def validate_request(kind: str, request: Any) -> dict[str, Any]:
    """`kind` is remember, recall or search: the request must match seed 003 exactly."""
    title = {"remember": "RememberRequest", "recall": "MemoryQuery", "search": "SearchQuery"}[kind]
    if not isinstance(request, dict):
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"A {kind} request is a JSON object ({title} in "
            "schemas/keyed-memory-requests.schema.json), not "
            f"{type(request).__name__}.",
        )
    try:
        json.dumps(request, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, TypeError) as exc:  # NaN/Infinity, lone surrogates, non-JSON values
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"The {kind} request is not plain JSON ({exc}). Use finite numbers and valid "
            "UTF-8 text.",
        ) from exc
    errors = sorted(
        _request_validator(kind).iter_errors(request), key=lambda e: [str(p) for p in e.path]
    )
    if errors:
        described = "; ".join(
            f"{'/'.join(str(p) for p in error.absolute_path) or '<request>'}: {error.message}"
            for error in errors[:3]
        )
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"The {kind} request does not match {title} (seed 003, "
            f"schemas/keyed-memory-requests.schema.json): {described}.",
        )
    return request


def parse_request_json(text: str, *, where: str = "the request") -> Any:
    """JSON text as a surface receives it; NaN and Infinity are refused (not JSON)."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    try:
        return json.loads(text, parse_constant=refuse)
    except ValueError as exc:
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"{where} is not JSON ({exc}). Pass one JSON object, e.g. "
            '{"key": "k1", "memory": {"content": "Alice prefers tea"}}.',
        ) from exc


def as_int(value: Any) -> int | None:
    """Seed integers (2020-12 also counts 3.0 as an integer)."""
    return None if value is None else int(value)


def namespace_scope(namespace: str | None) -> tuple[str, str]:
    name = (namespace or DEFAULT_NAMESPACE).strip().lower()
    if not _NAMESPACE.match(name):
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"Namespace {namespace!r} is invalid: 1-61 lowercase letters, digits, '.', '_' or "
            "'-', starting with a letter or digit (its facts get the scope kv:<namespace>).",
        )
    return name, f"kv:{name}"


def has_control(text: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in text)


def label(value: str, what: str) -> str:
    """A topic or a tag: trimmed, lowercased, NFC; 1 to 64 bytes, no control characters."""
    code = "MEMORY_TOPIC_INVALID" if what == "topic" else "MEMORY_TAGS_INVALID"
    text = unicodedata.normalize("NFC", value.strip().lower())
    size = len(text.encode("utf-8"))
    if not text or size > MAX_LABEL_BYTES or has_control(text):
        raise MemoryFailure(
            code,
            f"The {what} {value[:80]!r} is {size} bytes after trimming and lowercasing; a "
            f"{what} has 1 to {MAX_LABEL_BYTES} bytes of UTF-8 and no control characters.",
        )
    return text


def _tags(values: list[str]) -> list[str]:
    tags = sorted({label(value, "tag") for value in values})
    if len(tags) > MAX_TAGS:
        raise MemoryFailure(
            "MEMORY_TAGS_INVALID",
            f"{len(tags)} distinct tags given; a memory has at most {MAX_TAGS} (after trimming, "
            "lowercasing and removing duplicates). Drop the least useful ones.",
        )
    return tags


def _key(value: str | None) -> str:
    if value is None:
        return str(uuid.uuid4())
    size = len(value.encode("utf-8"))
    if not value or size > MAX_KEY_BYTES or has_control(value):
        raise MemoryFailure(
            "MEMORY_KEY_INVALID",
            f"The key is {size} bytes; a key has 1 to {MAX_KEY_BYTES} bytes of UTF-8 and no "
            "control characters. Omit it to get a new UUID.",
        )
    return value


@dataclass
class _MemoryInput:
    content: str
    topic: str | None
    tags: list[str]
    metadata: dict[str, Any]
    occurred_at_ms: int | None


def _memory_input(memory: dict[str, Any]) -> _MemoryInput:
    content = memory["content"]
    size = len(content.encode("utf-8"))
    if size > MAX_CONTENT_BYTES:
        raise MemoryFailure(
            "MEMORY_CONTENT_TOO_LARGE",
            f"memory.content is {size} bytes of UTF-8; the limit is {MAX_CONTENT_BYTES} "
            "(16 KiB). Split it into smaller memories.",
        )
    if not content.strip():
        raise MemoryFailure(
            "MEMORY_TEXT_REQUIRED",
            "memory.content is empty; a memory needs some text, e.g. "
            '{"memory": {"content": "Alice prefers tea"}}.',
        )
    topic = label(memory["topic"], "topic") if memory.get("topic") is not None else None
    metadata = memory.get("metadata") or {}
    metadata_size = keyed_cursor.size_of(metadata)
    if metadata_size > MAX_METADATA_BYTES:
        raise MemoryFailure(
            "MEMORY_METADATA_TOO_LARGE",
            f"memory.metadata is {metadata_size} bytes as compact JSON; the limit is "
            f"{MAX_METADATA_BYTES} (8 KiB). Keep large payloads elsewhere and store a reference.",
        )
    occurred = as_int(memory.get("occurred_at_ms"))
    if occurred is not None and occurred > MAX_EVENT_MS:
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"memory.occurred_at_ms {occurred} is past the year 9999; pass Unix milliseconds.",
        )
    return _MemoryInput(
        content=clean_text(content, max_bytes=MAX_CONTENT_BYTES),
        topic=topic,
        tags=_tags(list(memory.get("tags") or [])),
        metadata=metadata,
        occurred_at_ms=occurred,
    )


# -- hits -------------------------------------------------------------------------------------


def to_ms(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def from_ms(value: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=value)


def hit_from_row(row: tables.FactRow) -> dict[str, Any]:
    """instantKV's MemoryHit, from a keyed fact's row."""
    keyed = row.workbench.get("keyed") or {}
    assert row.created_at is not None and row.kv_key is not None
    return {
        "key": row.kv_key,
        "revision": row.kv_revision,
        "written_at_ms": to_ms(row.created_at),
        "expires_at_ms": to_ms(row.expires_at) if row.expires_at is not None else None,
        "memory": {
            "content": row.text,
            "topic": row.kv_topic,
            "tags": list(keyed.get("tags") or []),
            "metadata": copy.deepcopy(keyed.get("metadata") or {}),
            "occurred_at_ms": row.kv_occurred_at_ms,
        },
    }


def _is_live(row: tables.FactRow, now: datetime) -> bool:
    return row.is_current(now)


def fact_columns() -> Any:
    """The facts table's columns, for queries (typed loosely, as SQLModel fields are not)."""
    return tables.FactRow.__table__.c  # type: ignore[attr-defined]


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
    """RememberRequest -> the stored hit (seed 003; DESIGN.md section 8).

    No `if_revision`: create-only. A new key starts at revision 1; a retry with the same
    content, topic, tags and metadata returns the stored head; different ones are
    MEMORY_KEY_EXISTS. With `if_revision`: it must be the live head's revision
    (MEMORY_REVISION_CONFLICT otherwise), and the new revision supersedes the head."""
    validate_request("remember", request)
    name, scope = namespace_scope(namespace)
    key = _key(request.get("key"))
    memory = _memory_input(request["memory"])
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


def _same_memory(head: tables.FactRow, memory: _MemoryInput) -> bool:
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
    memory: _MemoryInput,
    ttl: int | None,
    predecessor: tables.FactRow | None,
    now: datetime,
    *,
    caller: str,
    session: str,
    if_revision: int | None,
) -> dict[str, Any]:
    from engine.remember import RememberRequest
    from engine.remember import remember as write_fact

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


# -- recall and search (engine/keyed_query.py, engine/keyed_search.py) -------------------------


def recall(engine: MemoryEngine, request: Any, *, namespace: str | None = None) -> dict[str, Any]:
    """MemoryQuery -> `{items, next_cursor, scanned, scanned_bytes}`, newest event first."""
    from engine.keyed_query import recall as run

    return run(engine, request, namespace=namespace)


def search(engine: MemoryEngine, request: Any, *, namespace: str | None = None) -> dict[str, Any]:
    """SearchQuery -> `{items: [{score, ...hit}], next_cursor, truncated}`, ranked by BM25."""
    from engine.keyed_search import search as run

    return run(engine, request, namespace=namespace)
