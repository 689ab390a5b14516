"""GNO's memory REST routes: remember and recall with GNO's body names and the seed results,
and what became of a write sent with a requestId.

They run the MCP tools' own handlers (gno_tui/mcp_registry.py): the same argument checks, the
same propose-only gate and the same scope binding, with the token's grant in place of the MCP
server's flags. Only the body's names differ: GNO calls the predecessor `predecessorUri`."""

from __future__ import annotations

import copy
from typing import Any

from engine.facade import MemoryFailure, RequestRecord, load_schema
from gno_tui.http.routes import HttpRoute, Lane, Reply, RouteCall
from gno_tui.mcp_registry import TOOLS_BY_NAME, WRITE_DECISIONS, ToolCall
from gno_tui.mcp_tools import RECALL_INPUT, REMEMBER_INPUT, check_arguments

REMEMBER_BODY: dict[str, Any] = copy.deepcopy(REMEMBER_INPUT)
REMEMBER_BODY["properties"]["predecessorUri"] = REMEMBER_BODY["properties"].pop("predecessor")
REMEMBER_BODY["properties"]["predecessorUri"]["description"] = (
    "With decision supersede: the gno:// uri of the fact to replace (`predecessor` is accepted "
    "too, as the MCP tool names it)."
)
REMEMBER_BODY["properties"]["predecessor"] = {
    **REMEMBER_BODY["properties"]["predecessorUri"],
    "description": "The same as predecessorUri (the MCP tool's name for it).",
}
WRITTEN = ("added", "superseded")


def remember_arguments(call: RouteCall) -> dict[str, Any]:
    """The body as gno_remember's arguments, checked against the REST body's schema."""
    body = check_arguments("POST /api/memory/remember", REMEMBER_BODY, call.json_object())
    arguments = dict(body)
    given = arguments.pop("predecessorUri", None)
    if given is not None:
        if arguments.get("predecessor", given) != given:
            raise MemoryFailure(
                "MEMORY_DECISION_INVALID",
                "predecessorUri and predecessor name different facts; send one of them.",
            )
        arguments["predecessor"] = given
    return arguments


def tool_call(call: RouteCall, tool: str, arguments: dict[str, Any]) -> ToolCall:
    access = call.access.mcp()
    return ToolCall(
        service=call.service,
        arguments=arguments,
        caller=access.caller,
        session=call.session,
        hold_writes=TOOLS_BY_NAME[tool].holds_writes(enable_write=access.enable_write),
        allowed_scopes=call.access.scopes,
        origin="http",
        egress=call.access.egress,
    )


def remember(call: RouteCall) -> Reply:
    arguments = remember_arguments(call)
    call.access.check_scopes("remember", arguments.get("scopes", []))
    result = TOOLS_BY_NAME["gno_remember"].handler(tool_call(call, "gno_remember", arguments))
    return Reply(201 if result["outcome"] in WRITTEN else 200, result)


def remember_lane(call: RouteCall) -> Lane:
    body = call.body if isinstance(call.body, dict) else {}
    if not call.access.can_write or body.get("decision") not in WRITE_DECISIONS:
        return Lane.READ  # a propose, or a write held for a person: nothing is written now
    return Lane.ALONE if "requestId" in body else Lane.GROUP


def remember_ahead(call: RouteCall) -> None:
    """Before the write lock: embed the text (best effort; the write does it if this did not)."""
    if isinstance(call.body, dict):
        call.service.embed_ahead(call.body.get("text"))


def recall(call: RouteCall) -> Reply:
    arguments = check_arguments("POST /api/memory/recall", RECALL_INPUT, call.json_object())
    call.access.check_scopes("recall", arguments.get("scopes", []))
    result = TOOLS_BY_NAME["gno_recall"].handler(tool_call(call, "gno_recall", arguments))
    return Reply(200, result)


def first_status(verb: str, result: dict[str, Any]) -> int:
    """The HTTP status the first answer to a recorded write had (a record keeps its body)."""
    if verb == "writeback":  # OB1's: 202 when anything waits for a person
        return 202 if result.get("status") == "held" else 200
    return 201 if result.get("outcome") in WRITTEN else 200


def request_document(record: RequestRecord) -> dict[str, Any]:
    """What became of a recorded write (schemas/http-request-status.schema.json), as the
    route and `gno-tui request show` answer it."""
    return {
        "requestId": record.request_id,
        "verb": record.verb,
        "createdAt": record.created_at,
        "status": record.status or first_status(record.verb, record.result),
        "result": record.result,
    }


def request_status(call: RouteCall) -> Reply:
    record = call.service.access.request(
        caller=call.access.caller, request_id=call.path["requestId"]
    )
    return Reply(200, request_document(record))


_ERROR_NOTE = 'Errors: {"error": {"code", "message"}} with the status of the code.'

ROUTES: tuple[HttpRoute, ...] = (
    HttpRoute(
        method="POST",
        path="/api/memory/remember",
        operation_id="memoryRemember",
        summary="Remember a fact (GNO memory-remember@1.0)",
        tag="memory",
        handler=remember,
        request_schema=REMEMBER_BODY,
        responses={201: load_schema("remember"), 200: load_schema("remember")},
        lane=remember_lane,
        ahead=remember_ahead,
        description="201 when a fact was added or superseded, 200 for existing or candidates. "
        "Without the token's write grant an add or supersede is held for a person's review "
        "(200, candidates). The caller is the token's principal. Send a requestId to retry "
        "safely. " + _ERROR_NOTE,
    ),
    HttpRoute(
        method="POST",
        path="/api/memory/recall",
        operation_id="memoryRecall",
        summary="Recall facts under a budget (GNO memory-recall@1.0)",
        tag="memory",
        handler=recall,
        request_schema=RECALL_INPUT,
        responses={200: load_schema("recall")},
        description="Only facts of the token's scopes. " + _ERROR_NOTE,
    ),
    HttpRoute(
        method="GET",
        path="/api/requests/{requestId:path}",
        operation_id="requestStatus",
        summary="What became of a write sent with this requestId",
        tag="memory",
        handler=request_status,
        responses={200: load_schema("request_status")},
        description="404 (MEMORY_REQUEST_NOT_FOUND) when this token's principal sent no write "
        "with that id that was applied. " + _ERROR_NOTE,
    ),
)
