"""OB1's recall routes (its Agent Memory API) over the same store as GNO's routes: recall
answered as seed 002, and an agent's report of which recalled memories it used. Also what
OB1's write-back and review routes (ob1_writeback_routes.py, ob1_review_routes.py) share with
them: the schema pieces and the scopes a call reaches.

OB1's names are mapped onto gno's here and in those two modules (docs/ob1-mapping.md, "The
HTTP routes"): `workspace_id` is a collection, `project_id` the scope `project:<id>`, `limits`
the recall budget. Who acts and where it may reach are the token's (caller `http:NAME`, its
scopes), never a body's."""

from __future__ import annotations

from typing import Any

from engine.facade import (
    MAX_FACTS_LIMIT,
    MAX_TOKENS_LIMIT,
    MemoryFailure,
    RecallRequest,
    load_schema,
    normalize_scopes,
)
from gno_tui.egress_ceiling import stricter_egress
from gno_tui.http.routes import HttpRoute, Lane, Reply, RouteCall
from gno_tui.mcp_tools import check_arguments

RECALL_VERSIONS = ["openbrain.agent_memory.recall.v1", "openbrain.openclaw.recall.v1"]
DEFAULT_MAX_ITEMS = 10  # OB1's defaults, not gno recall's (8 facts, 512 tokens)
DEFAULT_MAX_TOKENS = 4000

TEXT = {"type": "string", "minLength": 1}
NULLABLE = {"type": ["string", "null"]}
IGNORED = "Accepted for OB1 compatibility; not used."
SCOPES_FIELD = {
    "type": "array",
    "minItems": 1,
    "maxItems": 8,
    "items": {"type": "string", "minLength": 1, "maxLength": 64},
}
WORKSPACE = {
    **NULLABLE,
    "description": "The gno collection (OB1's workspace is gno's collection, as a recalled "
    "memory's scope.workspace_id says); an unknown one is 404 MEMORY_COLLECTION_NOT_FOUND.",
}
PROJECT = {
    **NULLABLE,
    "description": "Stands for the scope project:<project_id>, which the token must hold.",
}
LOOSE_OBJECT = {"type": "object", "description": IGNORED}
ERRORS = 'Errors: {"error": {"code", "message"}} with the status of the code.'

RECALL_BODY: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["query"],
    "description": "OB1's recall request. Searched: `scopes` when given; else project:"
    "<project_id> when a project is named (and scope.project_only is not false); else every "
    "scope of the token.",
    "properties": {
        "schema_version": {"enum": RECALL_VERSIONS},
        "query": {**TEXT, "description": "What to look for, in plain words."},
        "scopes": {
            **SCOPES_FIELD,
            "description": "gno's scopes to search (1 to 8), each held by the token; takes "
            "precedence over project_id.",
        },
        "workspace_id": WORKSPACE,
        "project_id": PROJECT,
        "task_id": NULLABLE,
        "flow_id": NULLABLE,
        "task_type": NULLABLE,
        "channel": LOOSE_OBJECT,
        "runtime": LOOSE_OBJECT,
        "model_intent": LOOSE_OBJECT,
        "entities": LOOSE_OBJECT,
        "sensitivity": LOOSE_OBJECT,
        "scope": {
            "type": "object",
            "additionalProperties": False,
            "description": "project_only: false searches every scope of the token instead of "
            "project:<project_id>. A held write is never recalled (include_unconfirmed does "
            "not change that) and recall returns current facts only; visibility, "
            "include_unconfirmed and include_stale are accepted and not used.",
            "properties": {
                "visibility": NULLABLE,
                "project_only": {"type": "boolean"},
                "include_unconfirmed": {"type": "boolean"},
                "include_stale": {"type": "boolean"},
            },
        },
        "limits": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "max_items": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_FACTS_LIMIT,
                    "description": f"At most this many memories (default {DEFAULT_MAX_ITEMS}).",
                },
                "max_tokens": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_TOKENS_LIMIT,
                    "description": "Token budget of the returned texts, estimated as UTF-8 "
                    f"bytes / 4 (default {DEFAULT_MAX_TOKENS}).",
                },
                "recency_days": {"type": ["integer", "null"], "description": IGNORED},
            },
        },
    },
}

USAGE_BODY: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "used_memory_ids": {
            "type": "array",
            "items": TEXT,
            "description": "memory_ids of this recall the agent used.",
        },
        "ignored": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["memory_id"],
                "properties": {
                    "memory_id": TEXT,
                    "reason": {
                        "type": "string",
                        "description": "Accepted, not kept (usage is content-free, like the "
                        "receipt).",
                    },
                },
            },
        },
    },
}
USAGE_ANSWER: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["request_id", "used", "ignored"],
    "description": "The caller's usage of this recall as now recorded (reports included).",
    "properties": {
        "request_id": {"type": "string"},
        "used": {"type": "array", "items": {"type": "string"}},
        "ignored": {"type": "array", "items": {"type": "string"}},
    },
}


# -- the scopes a call reaches (the review routes' too) ----------------------------------


def project_scope(project: Any) -> list[str]:
    return [f"project:{project}"] if isinstance(project, str) and project.strip() else []


def granted(call: RouteCall, what: str, scopes: list[str]) -> list[str]:
    """`scopes` normalised, every one held by the token (else MEMORY_SCOPE_FORBIDDEN)."""
    normalized = normalize_scopes(scopes)
    call.access.check_scopes(what, normalized)
    return normalized


def token_scopes(call: RouteCall, what: str, *, single: bool) -> list[str]:
    """The token's scopes, when a body names none: every one (a read), or its only one (a
    write); a token bound to no scope (an open loopback server) names none."""
    held = sorted(call.access.scopes or ())
    if held and (not single or len(held) == 1):
        return held
    need = "Name `scopes`" if not held else "This token holds several scopes: name `scopes`"
    raise MemoryFailure(
        "MEMORY_SCOPES_REQUIRED",
        f'{what}: {need} (e.g. ["{held[0] if held else "project:gno"}"]) or a project_id '
        "(the scope project:<project_id>).",
    )


# -- POST /recall -----------------------------------------------------------------------


def _limits(body: dict[str, Any]) -> tuple[int, int]:
    """limits.max_items and max_tokens, refused with the budget's code and OB1's names."""
    limits = body.get("limits")
    limits = limits if isinstance(limits, dict) else {}
    values = []
    for name, default, limit in (
        ("max_items", DEFAULT_MAX_ITEMS, MAX_FACTS_LIMIT),
        ("max_tokens", DEFAULT_MAX_TOKENS, MAX_TOKENS_LIMIT),
    ):
        value = limits.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= limit:
            raise MemoryFailure(
                "MEMORY_BUDGET_INVALID",
                f"limits.{name} must be a whole number from 1 to {limit}, not {value!r} "
                f"(default {default}).",
            )
        values.append(value)
    return values[0], values[1]


def recall(call: RouteCall) -> Reply:
    raw = call.json_object()
    max_items, max_tokens = _limits(raw)
    body = check_arguments("POST /recall", RECALL_BODY, raw)
    project_only = (body.get("scope") or {}).get("project_only", True)
    if "scopes" in body:
        scopes = granted(call, "recall", body["scopes"])
    elif project_only and (named := project_scope(body.get("project_id"))):
        scopes = granted(call, "recall", named)
    else:
        scopes = token_scopes(call, "recall", single=False)
    request = RecallRequest(
        query=body["query"],
        scopes=scopes,
        caller=call.access.caller,
        session=call.session,
        max_facts=max_items,
        max_tokens=max_tokens,
        collection=body.get("workspace_id") or None,
        egress=stricter_egress(None, call.access.egress),
    )
    return Reply(200, call.service.recall_ob1(request))


# -- POST /recall/{request_id}/usage ----------------------------------------------------


def usage(call: RouteCall) -> Reply:
    body = check_arguments("POST /recall/{request_id}/usage", USAGE_BODY, call.json_object())
    digest = call.path["request_id"]
    recorded = call.service.receipts.record_usage(
        digest=digest,
        caller=call.access.caller,
        used=body.get("used_memory_ids", []),
        ignored=[item["memory_id"] for item in body.get("ignored", [])],
    )
    return Reply(
        200,
        {
            "request_id": digest,
            "used": sorted(r for r, label in recorded.items() if label == "used"),
            "ignored": sorted(r for r, label in recorded.items() if label == "ignored"),
        },
    )


ROUTES: tuple[HttpRoute, ...] = (
    HttpRoute(
        method="POST",
        path="/recall",
        operation_id="ob1Recall",
        summary="Recall as OB1 (an OB1 recall response, seed 002)",
        tag="ob1",
        handler=recall,
        request_schema=RECALL_BODY,
        responses={200: load_schema("ob1_recall")},
        description="The same recall as POST /api/memory/recall (ranking, budget, a stored "
        "receipt) in the token's scopes, answered as OB1's recall response; its request_id is "
        "the receipt's digest, which POST /recall/{request_id}/usage takes. " + ERRORS,
    ),
    HttpRoute(
        method="POST",
        path="/recall/{request_id}/usage",
        operation_id="ob1RecallUsage",
        summary="Report which memories of a recall were used or ignored",
        tag="ob1",
        handler=usage,
        request_schema=USAGE_BODY,
        responses={200: USAGE_ANSWER},
        lane=lambda call: Lane.ALONE,
        description="Kept against the recall's receipt, per memory (reporting one again "
        "replaces it). A request_id not issued to this token's caller is 404 "
        "MEMORY_REQUEST_NOT_FOUND; a memory the recall did not return is 400 "
        "MEMORY_USAGE_INVALID. " + ERRORS,
    ),
)
