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

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from engine.contract import visibility
from engine.contract.errors import MemoryFailure
from engine.contract.normalize import check_identity, iso_utc
from engine.contract.validation import ensure_valid
from engine.keyed.heads import COLLECTION, hit_from_row
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
from engine.retrieval.matching import matching_block
from engine.storage.queries import keyed as keyed_queries
from engine.storage.reads.records import public_fact
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

DEFAULT_CALLER = "keyed-api"
MAX_TTL_SECONDS = 100 * 366 * 86_400


# -- chains -----------------------------------------------------------------------------------


def _is_live(row: tables.FactRow, now: datetime) -> bool:
    return row.is_current(now)


def _head(engine: MemoryEngine, namespace: str, key: str) -> tables.FactRow | None:
    """The head of the key's chain, read in a session of its own."""
    with engine.session(expire_on_commit=False) as db:
        return keyed_queries.key_head(db, COLLECTION, namespace, key)


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
    return _remember(engine, request, namespace=namespace, caller=caller, session=session).hit


def put(
    engine: MemoryEngine,
    request: Any,
    *,
    namespace: str | None = None,
    caller: str = DEFAULT_CALLER,
    session: str = DEFAULT_CALLER,
) -> tuple[dict[str, Any], bool]:
    """`remember`, and whether it wrote a revision (False: a retried create, answered with the
    stored head), for a surface that tells the two apart (HTTP PUT: 201 or 200)."""
    write = _remember(engine, request, namespace=namespace, caller=caller, session=session)
    return write.hit, write.result.get("outcome") != "existing"


@dataclass(frozen=True)
class KeyedWrite:
    """What a keyed remember did: the hit it answers, and the GNO remember result of the
    write beneath it (outcome added or superseded; `existing` for a retried create)."""

    hit: dict[str, Any]
    result: dict[str, Any]


def _ttl(request: dict[str, Any]) -> int | None:
    ttl = as_int(request.get("ttl_seconds"))
    if ttl is not None and not 1 <= ttl <= MAX_TTL_SECONDS:
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"ttl_seconds is {ttl}; use 1 to {MAX_TTL_SECONDS} (100 years), or omit it for a "
            "memory that does not expire.",
        )
    return ttl


def _check_key(
    head: tables.FactRow | None,
    live: bool,
    key: str,
    memory: MemoryInput,
    if_revision: int | None,
) -> bool:
    """The key checks of a write, before it is made: True for a retried create (the live
    head already holds this memory, nothing to write); a MemoryFailure for a conflict."""
    if if_revision is None:
        if head is not None and live:
            if _same_memory(head, memory):
                return True
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
    return False


def _existing(engine: MemoryEngine, head: tables.FactRow) -> KeyedWrite:
    status = engine.embedder_status
    result = {
        "outcome": "existing",
        "record": public_fact(head),
        "matching": matching_block(status.embedder, status.unavailable_reason),
    }
    return KeyedWrite(
        ensure_valid("keyed_hit", hit_from_row(head)), ensure_valid("remember", result)
    )


def _remember(
    engine: MemoryEngine,
    request: Any,
    *,
    namespace: str | None,
    caller: str,
    session: str,
    reviewed_by: str | None = None,
) -> KeyedWrite:
    validate_request("remember", request)
    name, scope = namespace_scope(namespace)
    key = key_or_new(request.get("key"))
    memory = memory_input(request["memory"])
    ttl = _ttl(request)
    if_revision = as_int(request.get("if_revision"))
    with engine.write_lock():
        now = engine.now()
        head = _head(engine, name, key)
        live = head is not None and _is_live(head, now)
        if _check_key(head, live, key, memory, if_revision):
            assert head is not None
            return _existing(engine, head)  # a retried create
        # An expired head is still the chain's head: the new revision supersedes it.
        predecessor = head if head is not None and visibility.is_live(head) else None
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
            reviewed_by=reviewed_by,
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
    reviewed_by: str | None = None,
) -> KeyedWrite:
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
    if reviewed_by is not None:  # a held write a person accepted (engine/curation/review.py)
        workbench["reviewedBy"] = reviewed_by
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
        head = _head(engine, namespace, key)
        raise _revision_conflict(key, if_revision, head.kv_revision if head else None) from None
    if result.get("sync", {}).get("status") != "completed":
        raise MemoryFailure(
            "MEMORY_SYNC_FAILED",
            f"Revision {revision} of key {key!r} was written to {result.get('absPath')} but "
            f"the index was not updated ({result.get('sync', {}).get('error')}). Run "
            "`gno-tui reindex` to repair the index; the memory is not lost.",
        )
    with engine.session(expire_on_commit=False) as db:
        row = db.get(tables.FactRow, result["record"]["recordId"])
    assert row is not None
    return KeyedWrite(ensure_valid("keyed_hit", hit_from_row(row)), result)


# -- held writes: a propose-only surface (docs/contract.md section 7, docs/mcp.md) ------------

HELD_DECISION = "keyed"  # ProposalRow.decision of a held keyed write
HELD_SCHEMA = "keyed-memory-held.schema.json"


def propose(
    engine: MemoryEngine,
    request: Any,
    *,
    namespace: str | None = None,
    caller: str,
    session: str,
    origin: str = "mcp",
) -> dict[str, Any]:
    """A keyed remember on a propose-only surface: nothing is written; the request is queued
    for a person, whole (with the key it gets), so that accepting it in review applies exactly
    it (`apply_held`). Every check that can run now runs now: the request against seed 003,
    the limits, and the key's state (MEMORY_KEY_EXISTS, MEMORY_KEY_NOT_FOUND,
    MEMORY_REVISION_CONFLICT), which the person's accept checks again under the write lock.

    Answers the held result (schemas/keyed-memory-held.schema.json), or the stored hit when
    the live head already holds this memory (a retried create: there is nothing to hold).
    The same request from the same caller while it waits is the same proposal."""
    validate_request("remember", request)
    name, scope = namespace_scope(namespace)
    caller, session = check_identity(caller, session)
    given = request.get("key")
    key = key_or_new(given)
    memory = memory_input(request["memory"])
    _ttl(request)
    if_revision = as_int(request.get("if_revision"))
    now = engine.now()
    with engine.session(expire_on_commit=False) as db:
        head = keyed_queries.key_head(db, COLLECTION, name, key) if given is not None else None
        live = head is not None and _is_live(head, now)
        if _check_key(head, live, key, memory, if_revision):
            assert head is not None
            return _existing(engine, head).hit
        waiting = keyed_queries.pending_held_writes(db, HELD_DECISION, caller, memory.content)
        for row in waiting:
            held = (row.matching or {}).get("keyed") or {}
            if held.get("namespace") == name and held.get("request") == request:
                assert row.id is not None
                return _held(row.id, str(held.get("key")), if_revision)
        predecessor = head if if_revision is not None else None
        proposal = tables.ProposalRow(
            created_at=now,
            origin=origin,
            text=memory.content,
            scopes=[scope],
            collection=COLLECTION,
            caller=caller,
            session=session,
            decision=HELD_DECISION,
            predecessor=predecessor.uri if predecessor is not None else None,
            predecessor_hash=predecessor.content_hash if predecessor is not None else None,
            candidates=[],  # keyed writes skip the candidates (section 8)
            # The request as the agent sent it, and the key it gets (a new UUID if it gave
            # none): the accept replays exactly this.
            matching={
                "mode": HELD_DECISION,
                "keyed": {"namespace": name, "key": key, "request": request},
            },
        )
        db.add(proposal)
        bump_generation(db)
        db.commit()
        assert proposal.id is not None
        return _held(proposal.id, key, if_revision)


def _held(proposal_id: int, key: str, if_revision: int | None) -> dict[str, Any]:
    update = f"revision {if_revision} of" if if_revision is not None else "a new"
    return ensure_valid(
        HELD_SCHEMA,
        {
            "status": "held",
            "proposal_id": proposal_id,
            "key": key,
            "if_revision": if_revision,
            "message": f"Held for a person's review as proposal #{proposal_id}: {update} key "
            f"{key!r} is written only when they accept it, exactly as you sent it. Nothing is "
            "stored yet (recall and search do not see it); do not retry, the person decides.",
        },
    )


def is_held(proposal: tables.ProposalRow) -> bool:
    return proposal.decision == HELD_DECISION


def apply_held(engine: MemoryEngine, proposal: tables.ProposalRow, *, actor: str) -> KeyedWrite:
    """A person accepts a held keyed write: the stored request is written now, as the agent
    that sent it (its caller and session), through the ordinary keyed remember, so the key's
    compare-and-swap is checked again (MEMORY_KEY_EXISTS / MEMORY_REVISION_CONFLICT if the key
    moved since)."""
    held = (proposal.matching or {}).get("keyed")
    if not is_held(proposal) or not isinstance(held, dict) or "request" not in held:
        raise MemoryFailure(
            "MEMORY_DECISION_INVALID",
            f"Proposal #{proposal.id} is not a held keyed write.",
        )
    request = {**held["request"], "key": held["key"]}
    return _remember(
        engine,
        request,
        namespace=held.get("namespace"),
        caller=proposal.caller,
        session=proposal.session,
        reviewed_by=actor,
    )


def _live_head(engine: MemoryEngine, key: str, namespace: str | None) -> tables.FactRow:
    name, _ = namespace_scope(namespace)
    head = _head(engine, name, key)
    if head is None or not _is_live(head, engine.now()):
        raise MemoryFailure(
            "MEMORY_KEY_NOT_FOUND",
            f"No live memory has the key {key!r} in namespace {name!r} (never written, "
            "expired or retired). Check the key and namespace, or create it with remember.",
        )
    return head


def get(engine: MemoryEngine, key: str, *, namespace: str | None = None) -> dict[str, Any]:
    """The live head of `key`, or MEMORY_KEY_NOT_FOUND."""
    return ensure_valid("keyed_hit", hit_from_row(_live_head(engine, key, namespace)))


def head_to_retire(
    engine: MemoryEngine, key: str, *, namespace: str | None, if_revision: int | None
) -> str:
    """The uri of the live head of `key`, for a retire of the key (the façade's
    `keyed.retire`, which holds the write lock around this and the retire): MEMORY_KEY_NOT_FOUND
    without one, MEMORY_REVISION_CONFLICT when `if_revision` is not its revision."""
    head = _live_head(engine, key, namespace)
    if if_revision is not None and head.kv_revision != if_revision:
        raise _revision_conflict(key, if_revision, head.kv_revision)
    return head.uri


def history(engine: MemoryEngine, key: str, *, namespace: str | None = None) -> dict[str, Any]:
    """Every revision of `key`, oldest first (superseded and retired ones included; expired
    ones are never returned)."""
    name, _ = namespace_scope(namespace)
    now = engine.now()
    with engine.session(expire_on_commit=False) as db:
        chain = keyed_queries.key_chain(db, COLLECTION, name, key)
    items = [hit_from_row(row) for row in chain if not visibility.is_expired(row.expires_at, now)]
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
