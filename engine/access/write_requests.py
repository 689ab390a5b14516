"""Writes done at most once: a write sent with a `requestId` (REST, MCP, CLI) is recorded
with its result, per caller, and the same id again answers that result without writing.

The lookup, the write and the record run under the store's write lock, which every process on
the store shares (the home's lock file, or the database's advisory lock), so two clients
sending one id at once write once: the second finds the first's record. A refused write
records nothing, so a write refused for a busy lease or a conflict can be retried with its id.

A crash after the write's commit and before its record's (the two are a few statements apart)
leaves the write without a record: its retry runs again, and the exact-duplicate check answers
`existing` for an add (nothing is written twice); docs/server.md says so. Records are kept
`KEEP_DAYS` days, then pruned as new ones are written."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, TypeVar, cast

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import check_utf8, iso_utc
from engine.storage.queries import access as access_queries
from engine.storage.schema import tables
from engine.storage.store import MemoryEngine

KEEP_DAYS = 30
_REQUEST_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,127}$")


@dataclass(frozen=True)
class RequestRecord:
    """What became of a write sent with a request id."""

    request_id: str
    verb: str
    result: dict[str, Any]
    created_at: str
    status: int | None  # the first answer's HTTP status, when its surface kept one


def check_request_id(request_id: Any) -> str:
    if not isinstance(request_id, str):
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            "requestId must be a string: 1 to 128 letters, digits or . _ : @ / + = -, "
            "starting with a letter or digit (a UUID is a good one).",
        )
    check_utf8(request_id, "The requestId")
    if not _REQUEST_ID.match(request_id):
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"requestId {request_id[:80]!r} is not an id: use 1 to 128 letters, digits or "
            ". _ : @ / + = -, starting with a letter or digit (a UUID is a good one).",
        )
    return request_id


def body_digest(body: Any) -> str:
    """The request as sent, in canonical JSON: the same id must come with the same body."""
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


Answer = TypeVar("Answer", bound=Mapping[str, object])


def once(
    engine: MemoryEngine,
    *,
    caller: str,
    request_id: str,
    verb: str,
    body: Any,
    run: Callable[[], Answer],
    status: Callable[[Answer], int] | None = None,
) -> tuple[Answer, bool]:
    """`run()`'s result, applied at most once for (caller, request_id); and whether it is a
    replay of an earlier answer. `body` is what identifies the request (without its id);
    `status` gives the answer's HTTP status to keep beside it (`lookup` returns it)."""
    check_request_id(request_id)
    wanted = body_digest({"verb": verb, "body": body})
    with engine.write_lock():
        with engine.session() as session:
            row = session.get(tables.WriteRequestRow, (caller, request_id))
            if row is not None:
                if row.body_digest != wanted:
                    raise MemoryFailure(
                        "MEMORY_REQUEST_CONFLICT",
                        f"requestId {request_id!r} was already used by {caller} for a different "
                        f"request ({row.verb}). Use a new requestId for a new write; send the "
                        "same request unchanged to get the first answer again.",
                    )
                # The JSON stored from the first run()'s answer, of the same shape.
                return cast(Answer, dict(row.result)), True
        result = run()
        now = engine.now()
        with engine.session() as session:
            access_queries.prune_write_requests(session, now - timedelta(days=KEEP_DAYS))
            session.add(
                tables.WriteRequestRow(
                    caller=caller,
                    request_id=request_id,
                    verb=verb,
                    body_digest=wanted,
                    result=cast("dict[str, Any]", result),  # a JSON object, stored as JSON
                    status=status(result) if status is not None else None,
                    created_at=now,
                )
            )
            session.commit()
    return result, False


def lookup(engine: MemoryEngine, *, caller: str, request_id: str) -> RequestRecord:
    """The record of `request_id` sent by `caller`, or MEMORY_REQUEST_NOT_FOUND."""
    check_request_id(request_id)
    with engine.session() as session:
        row = session.get(tables.WriteRequestRow, (caller, request_id))
        if row is None or row.created_at is None:
            raise MemoryFailure(
                "MEMORY_REQUEST_NOT_FOUND",
                f"No write with requestId {request_id!r} was recorded for {caller} (in the last "
                f"{KEEP_DAYS} days). A write refused with an error records nothing: send it "
                "again with the same requestId.",
            )
        return RequestRecord(
            request_id=row.request_id,
            verb=row.verb,
            result=dict(row.result),
            created_at=iso_utc(row.created_at),
            status=row.status,
        )
