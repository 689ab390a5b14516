"""The keyed API over HTTP in instantKV's style (docs/keyed-api.md, "Over HTTP"): a record per
key under /v1/namespaces/{namespace}/records/{key}, its revision as the ETag, If-Match and
If-None-Match as the seed's `if_revision` and create-only, and recall and search with the
seed 003 bodies unchanged.

Every route needs the token's grant for the namespace (403 MEMORY_GRANT_MISSING otherwise,
before anything is read), and the engine answers only from that namespace. A token without
the write grant gets its PUT held for a person (202, the held result); its DELETE is refused.
A condition that fails is 409, as instantKV answers it (not HTTP's 412)."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import quote

from engine.facade import (
    KEYED_COLLECTION,
    KEYED_HELD_SCHEMA,
    UINT64_MAX,
    MemoryFailure,
    load_schema,
)
from gno_tui.egress_ceiling import require_admitted
from gno_tui.http.routes import HttpRoute, Lane, Reply, RouteCall

_REQUESTS = load_schema("keyed_requests")
RECALL_BODY: dict[str, Any] = _REQUESTS["recall"]
SEARCH_BODY: dict[str, Any] = _REQUESTS["search"]
PUT_BODY: dict[str, Any] = copy.deepcopy(_REQUESTS["remember"])
PUT_BODY["title"] = "RememberRequest (PUT: the key is the path)"
PUT_BODY["properties"]["key"] = {
    "type": ["string", "null"],
    "description": "Omit it: the path names the key. If sent, it must be the path's key "
    "(400 otherwise).",
}
PUT_BODY["properties"]["if_revision"]["description"] = (
    "Omit for create-only; the observed revision to update. The If-Match header says the "
    "same; when both are sent they must agree (400 otherwise)."
)

_ETAG = re.compile(r'"([0-9]{1,20})"|([0-9]{1,20})')
_DIGITS = re.compile(r"[0-9]{1,20}")
_LIST_TEXTS = ("cursor", "query", "tag", "topic")
_LIST_INTEGERS = ("limit", "max_bytes", "since_ms", "until_ms")
_BASE = "/v1/namespaces/{namespace}"


def _invalid(message: str) -> MemoryFailure:
    return MemoryFailure("MEMORY_REQUEST_INVALID", message)


def _namespace(call: RouteCall) -> str:
    """The path's namespace as the engine names it (lowercased), granted to this token."""
    name = call.service.keyed.scope(call.path["namespace"]).removeprefix("kv:")
    call.access.require_namespace(name)
    require_admitted(call.service, KEYED_COLLECTION, call.access.egress, "The keyed API")
    return name


def _body(call: RouteCall, title: str, example: str) -> dict[str, Any]:
    if not isinstance(call.body, dict):
        raise _invalid(
            f"The body must be a JSON object ({title}, seed 003: "
            f"schemas/keyed-memory-requests.schema.json) with Content-Type: application/json, "
            f"e.g. {example}."
        )
    return dict(call.body)


def _etag(hit: Mapping[str, object]) -> dict[str, str]:
    return {"ETag": f'"{hit["revision"]}"'}


def _record_url(namespace: str, key: str) -> str:
    return f"/v1/namespaces/{namespace}/records/{quote(key, safe='/')}"


def _if_match(call: RouteCall) -> int | None:
    """The revision of an If-Match header ("3" or 3), or None without one."""
    value = call.headers.get("if-match")
    if value is None:
        return None
    match = _ETAG.fullmatch(value.strip())
    revision = int(match.group(1) or match.group(2)) if match else None
    if revision is None or revision > UINT64_MAX:
        raise _invalid(
            f"If-Match is {value[:40]!r}; send the one revision you read, as its ETag: "
            'If-Match: "3" (or 3). * and weak tags (W/"3") are not accepted.'
        )
    return revision


def _create_only(call: RouteCall) -> bool:
    """If-None-Match: * (create only)."""
    value = call.headers.get("if-none-match")
    if value is None:
        return False
    if value.strip() != "*":
        raise _invalid(
            f"If-None-Match is {value[:40]!r}; on a write it takes only * (create the key "
            'only if it holds nothing). To update, send If-Match: "<revision>".'
        )
    if "if-match" in call.headers:
        raise _invalid(
            "Send one of If-Match (update that revision) and If-None-Match: * (create only), "
            "not both."
        )
    return True


# -- the handlers -----------------------------------------------------------------------------


def get_record(call: RouteCall) -> Reply:
    namespace = _namespace(call)
    hit = call.service.keyed.get(call.path["key"], namespace=namespace)
    return Reply(200, hit, _etag(hit))


def put_record(call: RouteCall) -> Reply:
    namespace = _namespace(call)
    key = call.path["key"]
    request = _body(
        call,
        "RememberRequest without key",
        '{"memory": {"content": "Alice prefers tea", "tags": ["alice"]}}',
    )
    given = request.pop("key", None)
    if given is not None and given != key:
        raise _invalid(
            f"The body's key {str(given)[:80]!r} is not the path's key {key[:80]!r}. The path "
            "names the key: omit key from the body."
        )
    create_only = _create_only(call)
    revision = _if_match(call)
    in_body = request.get("if_revision")
    if revision is not None:
        if in_body is None:
            request["if_revision"] = revision
        elif isinstance(in_body, int | float) and in_body != revision:
            raise _invalid(
                f"If-Match names revision {revision} and the body's if_revision {in_body}: "
                "send one of them, or the same revision in both."
            )
    if create_only and in_body is not None:
        raise _invalid(
            "If-None-Match: * asks for a create and the body's if_revision for an update: "
            "send one of them."
        )
    request = {"key": key, **request}
    return _at_most_once(
        call, "keyed-put", {"namespace": namespace, "request": request},
        lambda: _save(call, namespace, key, request),
    )  # fmt: skip


def _at_most_once(
    call: RouteCall, verb: str, identity: dict[str, Any], apply: Callable[[], Reply]
) -> Reply:
    """`apply()`, or with an Idempotency-Key header applied at most once per caller and key:
    a retry answers the first status and body (the seed-003 bodies take no requestId)."""
    request_id = call.headers.get("idempotency-key")
    if request_id is None:
        return apply()
    done: list[Reply] = []

    def run() -> dict[str, Any]:
        done.append(apply())
        return dict(done[0].body or {})

    body, replayed = call.service.access.once(
        caller=call.access.caller,
        request_id=request_id,
        verb=verb,
        body=identity,
        run=run,
        status=lambda _: done[0].status,
    )
    if not replayed:
        return done[0]
    status = call.service.access.request(caller=call.access.caller, request_id=request_id).status
    status = status or 200
    if status == 204:
        return Reply(204, None)
    headers = _etag(body) if status in (200, 201) else {}
    if status == 201:
        headers["Location"] = _record_url(identity["namespace"], str(body.get("key", "")))
    return Reply(status, body, headers)


def _save(call: RouteCall, namespace: str, key: str, request: dict[str, Any]) -> Reply:
    access = call.access
    if not access.can_write:  # held for a person's review: nothing is written now
        result = call.service.keyed.propose(
            request,
            namespace=namespace,
            caller=access.caller,
            session=call.session,
            origin="http",
        )
        if result.get("status") == "held":
            return Reply(202, result)
        return Reply(200, result, _etag(result))  # a create already stored: its head
    hit, written = call.service.keyed.put(
        request, namespace=namespace, caller=access.caller, session=call.session
    )
    if written and request.get("if_revision") is None:
        return Reply(201, hit, {**_etag(hit), "Location": _record_url(namespace, key)})
    return Reply(200, hit, _etag(hit))


def delete_record(call: RouteCall) -> Reply:
    namespace = _namespace(call)
    key = call.path["key"]
    if "if-none-match" in call.headers:
        raise _invalid('A DELETE takes If-Match: "<revision>" only, not If-None-Match.')
    revision = _if_match(call)
    if not call.access.can_write:
        raise MemoryFailure(
            "MEMORY_GRANT_MISSING",
            f"Retiring key {key[:80]!r} needs the write grant; this token's writes wait for a "
            "person's review, and a DELETE is not held. Ask a person to retire it in the "
            "workbench, or for a token made with `gno-tui token create NAME --write ...`.",
        )

    def retire() -> Reply:
        call.service.keyed.retire(
            key,
            namespace=namespace,
            actor=call.access.caller,
            if_revision=revision,
            reason=f"DELETE over HTTP of key {key[:120]!r} in namespace {namespace!r}; every "
            "revision stays in the key's history.",
        )
        return Reply(204, None)

    identity = {"namespace": namespace, "key": key, "if_revision": revision}
    return _at_most_once(call, "keyed-delete", identity, retire)


def list_records(call: RouteCall) -> Reply:
    namespace = _namespace(call)
    unknown = sorted(set(call.query) - {*_LIST_TEXTS, *_LIST_INTEGERS})
    if unknown:
        raise _invalid(
            f"Unknown query parameter {unknown[0][:40]!r}; the list takes "
            f"{', '.join((*_LIST_TEXTS, *_LIST_INTEGERS))}."
        )
    request: dict[str, Any] = {}
    for name, value in call.query.items():
        if value == "":
            continue  # ?cursor= on a first page: as if not sent
        if name in _LIST_INTEGERS:
            if not _DIGITS.fullmatch(value):
                raise _invalid(
                    f"The query parameter {name} is {value[:40]!r}; it takes a whole number "
                    f"(digits only), e.g. {name}=20."
                )
            request[name] = int(value)
        else:
            request[name] = value
    return Reply(200, call.service.keyed.recall(request, namespace=namespace))


def recall(call: RouteCall) -> Reply:
    namespace = _namespace(call)
    request = _body(call, "MemoryQuery", '{"query": "alice tea", "limit": 10}')
    return Reply(200, call.service.keyed.recall(request, namespace=namespace))


def search(call: RouteCall) -> Reply:
    namespace = _namespace(call)
    request = _body(call, "SearchQuery", '{"query": "what does alice drink", "expand": true}')
    return Reply(200, call.service.keyed.search(request, namespace=namespace))


def history(call: RouteCall) -> Reply:
    namespace = _namespace(call)
    return Reply(200, call.service.keyed.history(call.path["key"], namespace=namespace))


def _write_lane(call: RouteCall) -> Lane:
    return Lane.ALONE if call.access.can_write else Lane.READ  # held or refused: no write


_ERROR_NOTE = 'Errors: {"error": {"code", "message"}} with the status of the code.'
_IF_MATCH = (
    "if-match",
    'The revision you read (its ETag), "3" or 3: the write applies only while it is the '
    "head's revision (409 MEMORY_REVISION_CONFLICT otherwise).",
)
_IDEMPOTENCY_KEY = (
    "idempotency-key",
    "Your id for this write (a UUID), to retry it safely: the same key again answers the "
    "first status and body without writing twice; with another request it is 409 "
    "MEMORY_REQUEST_CONFLICT. GET /api/requests/{key} tells what became of it.",
)
_LIST_PARAMETERS: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("cursor", {"type": "string"}, "next_cursor of the previous page (same filters)."),
    ("limit", {"type": "integer", "minimum": 1, "maximum": 100}, "Items per page (20)."),
    ("query", {"type": "string"}, "Every whitespace-separated term must occur in content."),
    ("tag", {"type": "string"}, "Only memories with this tag."),
    ("topic", {"type": "string"}, "Only memories of this topic."),
    ("since_ms", {"type": "integer", "minimum": 0}, "Event time from (Unix ms, inclusive)."),
    ("until_ms", {"type": "integer", "minimum": 0}, "Event time until (Unix ms, inclusive)."),
    ("max_bytes", {"type": "integer", "minimum": 1}, "Response budget in bytes (16384)."),
)

ROUTES: tuple[HttpRoute, ...] = (
    HttpRoute(
        method="GET",
        path=_BASE + "/records",
        operation_id="keyedList",
        summary="List a namespace's memories, newest first (the keyed recall)",
        tag="keyed",
        handler=list_records,
        responses={200: load_schema("keyed_recall")},
        query_parameters=_LIST_PARAMETERS,
        description="A MemoryQuery made from the query parameters (an empty value counts as "
        "not sent; an unknown parameter or a non-number integer is 400). Page with "
        "next_cursor. " + _ERROR_NOTE,
    ),
    HttpRoute(
        method="GET",
        path=_BASE + "/records/{key:path}",
        operation_id="keyedGet",
        summary="The live head of a key, its revision as the ETag",
        tag="keyed",
        handler=get_record,
        responses={200: load_schema("keyed_hit")},
        description='ETag: "<revision>". 404 MEMORY_KEY_NOT_FOUND when the key has no live '
        "head (never written, expired or deleted). The key may hold slashes; percent-encode "
        "?, # and %. " + _ERROR_NOTE,
    ),
    HttpRoute(
        method="PUT",
        path=_BASE + "/records/{key:path}",
        operation_id="keyedPut",
        summary="Save a memory under a key (RememberRequest without key)",
        tag="keyed",
        handler=put_record,
        request_schema=PUT_BODY,
        responses={
            201: load_schema("keyed_hit"),
            200: load_schema("keyed_hit"),
            202: load_schema(KEYED_HELD_SCHEMA),
        },
        lane=_write_lane,
        headers_in=(
            _IF_MATCH,
            ("if-none-match", "* : create only (the default without If-Match)."),
            _IDEMPOTENCY_KEY,
        ),
        description="Without If-Match (or if_revision) the save is create-only: 201 for a new "
        "key, 200 with the stored head for a retry of the same create, 409 MEMORY_KEY_EXISTS "
        "for other content. With If-Match it updates that revision: 200, or 409 "
        "MEMORY_REVISION_CONFLICT when the key moved on. Each answer carries the ETag of the "
        "key's revision. A token without the write grant has the save held for a person's "
        "review: 202 with the held result, nothing stored yet. " + _ERROR_NOTE,
    ),
    HttpRoute(
        method="DELETE",
        path=_BASE + "/records/{key:path}",
        operation_id="keyedDelete",
        summary="Retire a key's head (its history is kept)",
        tag="keyed",
        handler=delete_record,
        responses={204: {}},
        lane=_write_lane,
        headers_in=(_IF_MATCH, _IDEMPOTENCY_KEY),
        description="204 with no body: the key's live head is retired, so get, the list, "
        "recall and search stop returning it; every revision stays readable in its history "
        "and a person can restore it. The next PUT creates the key again as its next "
        "revision. 404 MEMORY_KEY_NOT_FOUND without a live head; 403 without the write grant "
        "(a DELETE is never held). " + _ERROR_NOTE,
    ),
    HttpRoute(
        method="GET",
        path=_BASE + "/history/{key:path}",
        operation_id="keyedHistory",
        summary="Every revision of a key, oldest first",
        tag="keyed",
        handler=history,
        responses={200: load_schema("keyed_history")},
        description="Superseded and deleted revisions included, expired ones not. " + _ERROR_NOTE,
    ),
    HttpRoute(
        method="POST",
        path=_BASE + "/recall",
        operation_id="keyedRecall",
        summary="Recall a namespace's memories (MemoryQuery), newest first",
        tag="keyed",
        handler=recall,
        request_schema=RECALL_BODY,
        responses={200: load_schema("keyed_recall")},
        description="The seed 003 MemoryQuery unchanged. " + _ERROR_NOTE,
    ),
    HttpRoute(
        method="POST",
        path=_BASE + "/search",
        operation_id="keyedSearch",
        summary="Search a namespace's memories (SearchQuery), best first",
        tag="keyed",
        handler=search,
        request_schema=SEARCH_BODY,
        responses={200: load_schema("keyed_search")},
        description="The seed 003 SearchQuery unchanged. " + _ERROR_NOTE,
    ),
)
