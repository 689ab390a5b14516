"""OB1's write-back route (its Agent Memory API): `POST /writeback`, an agent's report of what
it decided, made, learned and left open, held in gno's review queue as evidence. A write-back is
never applied at once, whatever the token's write grant: every memory in it waits for a person
(ob1_review_routes.py lists and decides them), and is no instruction until one confirms it.
Also what a held write is shown as in the review routes: its use policy and its summary."""

from __future__ import annotations

from typing import Any

from engine.facade import (
    DEFAULT_COLLECTION,
    MemoryFailure,
    Proposal,
    RememberRequest,
    clean_text,
    collapse_text,
    load_schema,
)
from gno_tui.egress_ceiling import require_admitted
from gno_tui.http.ob1_routes import (
    ERRORS,
    IGNORED,
    LOOSE_OBJECT,
    NULLABLE,
    PROJECT,
    SCOPES_FIELD,
    TEXT,
    WORKSPACE,
    granted,
    project_scope,
    token_scopes,
)
from gno_tui.http.routes import HttpRoute, Reply, RouteCall
from gno_tui.mcp_tools import check_arguments

WRITEBACK_VERSIONS = ["openbrain.agent_memory.writeback.v1", "openbrain.openclaw.writeback.v1"]
MAX_WRITEBACK_ITEMS = 32
# What a held write is until a person decides: evidence at most, never an instruction.
HELD_POLICY = {
    "can_use_as_instruction": False,
    "can_use_as_evidence": True,
    "requires_user_confirmation": True,
}
# OB1's memory_payload lists -> its memory_type for each entry (the text as OB1 stores it).
PAYLOAD_TYPES = {
    "decisions": "decision",
    "outputs": "output",
    "lessons": "lesson",
    "constraints": "constraint",
    "unresolved_questions": "open_question",
    "next_steps": "work_log",
    "failures": "failure",
}

_ARTIFACT = {
    "type": "object",
    "required": ["kind", "uri"],
    "properties": {"kind": TEXT, "uri": TEXT, "description": NULLABLE},
}
_SOURCE_REF = {
    "type": "object",
    "required": ["kind"],
    "properties": {"kind": TEXT, "uri": NULLABLE, "title": NULLABLE, "timestamp": NULLABLE},
}
WRITEBACK_BODY: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["memory_payload"],
    "description": "OB1's write-back. Each entry of memory_payload becomes one held write "
    "(a pending proposal) in the scopes named by `scopes`, else project:<project_id>, else the "
    "token's one scope. Held whatever the token's write grant; approved only by a person.",
    "properties": {
        "schema_version": {"enum": WRITEBACK_VERSIONS},
        "scopes": {**SCOPES_FIELD, "description": "gno's scopes of the memories."},
        "workspace_id": WORKSPACE,
        "project_id": PROJECT,
        "visibility": {
            "type": "object",
            "description": "visibility.project stands for project_id when that is absent; "
            "the rest is not used.",
            "properties": {"workspace": NULLABLE, "project": NULLABLE, "channel": NULLABLE},
        },
        "idempotency_key": {
            **NULLABLE,
            "description": "gno's requestId: the same key with the same body answers the first "
            "answer again; with another body it is 409 MEMORY_REQUEST_CONFLICT.",
        },
        "task_id": {**NULLABLE, "description": "Named in the held writes' source."},
        "flow_id": NULLABLE,
        "step_id": NULLABLE,
        "content_hash": NULLABLE,
        "channel": LOOSE_OBJECT,
        "runtime": LOOSE_OBJECT,
        "models_used": {"type": "array", "items": {"type": "object"}, "description": IGNORED},
        "source_refs": {
            "type": "array",
            "items": _SOURCE_REF,
            "description": "Kept as the held writes' source (title, else uri, else kind).",
        },
        "memory_payload": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                **{name: {"type": "array", "items": TEXT} for name in PAYLOAD_TYPES},
                "artifacts": {"type": "array", "items": _ARTIFACT},
                "entities": {"type": "object", "description": IGNORED},
            },
        },
        "provenance": {
            "type": "object",
            "description": "Not used: an approved memory starts as any agent's (observed, "
            "confidence 0.7, no instruction) unless the person confirms it.",
        },
        "retention": LOOSE_OBJECT,
    },
}


def memory_summary(text: str) -> str:
    """OB1's `summary` of a memory: its text on one line, cut at 120 characters."""
    return collapse_text(text)[:120]


def _entries(payload: dict[str, Any]) -> list[tuple[str, str]]:
    """(memory_type, text) per memory of OB1's payload, in its order of lists."""
    entries = []
    for name, kind in PAYLOAD_TYPES.items():
        for text in payload.get(name, []):
            entries.append((kind, f"Next step: {text}" if name == "next_steps" else text))
    for artifact in payload.get("artifacts", []):
        shown = artifact.get("description") or artifact["uri"]
        entries.append(("artifact_reference", f"{artifact['kind']}: {shown}\n{artifact['uri']}"))
    if not entries:
        raise MemoryFailure(
            "MEMORY_TEXT_REQUIRED",
            "memory_payload holds no memory: put at least one text in decisions, outputs, "
            "lessons, constraints, unresolved_questions, next_steps, failures or artifacts.",
        )
    if len(entries) > MAX_WRITEBACK_ITEMS:
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID",
            f"memory_payload holds {len(entries)} memories; at most {MAX_WRITEBACK_ITEMS} go "
            "in one write-back. Send the rest in another.",
        )
    return entries


def _source(body: dict[str, Any]) -> str | None:
    refs = [
        str(ref.get("title") or ref.get("uri") or ref["kind"])
        for ref in body.get("source_refs", [])
    ]
    task = body.get("task_id")
    parts = ([f"task {task}"] if task else []) + refs
    return "; ".join(parts) or None


def _writeback_scopes(call: RouteCall, body: dict[str, Any]) -> list[str]:
    if "scopes" in body:
        return granted(call, "writeback", body["scopes"])
    project = body.get("project_id") or (body.get("visibility") or {}).get("project")
    if named := project_scope(project):
        return granted(call, "writeback", named)
    return token_scopes(call, "writeback", single=True)


def _held_proposal(
    call: RouteCall, proposals: list[Proposal], text: str, scopes: list[str], collection: str
) -> Proposal | None:
    """The proposal this caller's held add of `text` is: the newest pending one (the queue
    answers a repeated write while it waits with the same proposal), else the newest, decided
    since it was queued (a fast reviewer)."""
    wanted = (clean_text(text), call.access.caller, collection, scopes, "add", None)
    found = [
        p
        for p in proposals
        if (p["text"], p["caller"], p["collection"], p["scopes"], p["decision"], p["predecessor"])
        == wanted
    ]
    pending = [p for p in found if p["state"] == "pending"]
    return max(pending or found, key=lambda p: p["id"], default=None)


def _hold(call: RouteCall, body: dict[str, Any]) -> dict[str, Any]:
    entries = _entries(body["memory_payload"])
    scopes = _writeback_scopes(call, body)
    collection = body.get("workspace_id") or None
    source = _source(body)

    def request(text: str, decision: str) -> RememberRequest:
        return RememberRequest(
            text=text,
            scopes=scopes,
            caller=call.access.caller,
            session=call.session,
            decision=decision,
            collection=collection,
            source=source,
        )

    require_admitted(call.service, collection, call.access.egress, "This write-back")
    # Every memory is checked before any is queued: a bad one refuses the whole write-back.
    for _, text in entries:
        call.service.remember(request(text, "propose"))
    results = [
        call.service.remember(request(text, "add"), hold_writes=True, origin="http")
        for _, text in entries
    ]
    queued = call.service.curation.proposals(
        state=None, caller=call.access.caller, texts={clean_text(text) for _, text in entries}
    )
    memories = []
    for (kind, text), result in zip(entries, results, strict=True):
        entry: dict[str, Any] = {"memory_type": kind, "summary": memory_summary(text)}
        if result["outcome"] == "existing":  # already a current memory in these scopes
            record = result["record"]
            entry |= {"state": "existing", "proposal_id": None, "memory_id": record["recordId"],
                      "uri": record["uri"], "use_policy": None}  # fmt: skip
            memories.append(entry)
            continue
        proposal = _held_proposal(call, queued, text, scopes, collection or DEFAULT_COLLECTION)
        if proposal is None:
            raise MemoryFailure(
                "MEMORY_INTERNAL", "A held write-back memory was not found in the review queue."
            )
        held = proposal["state"] == "pending"
        entry |= {"state": proposal["state"], "proposal_id": proposal["id"], "memory_id": None,
                  "uri": None, "use_policy": dict(HELD_POLICY) if held else None}  # fmt: skip
        memories.append(entry)
    any_held = any(m["state"] == "pending" for m in memories)
    return {
        "status": "held" if any_held else "stored",
        "memories": memories,
        "message": "Held for a person's review: not recalled, and never an instruction, until "
        "approved (PATCH /memories/{proposal_id}/review with a curate token, or gno-tui "
        "review)."
        if any_held
        else "Nothing was held: each memory is already stored in these scopes, or was decided.",
    }


def writeback(call: RouteCall) -> Reply:
    body = check_arguments("POST /writeback", WRITEBACK_BODY, call.json_object())
    key = body.get("idempotency_key")
    if key is None:
        answer = _hold(call, body)
    else:
        sent = {name: value for name, value in body.items() if name != "idempotency_key"}
        answer, _ = call.service.access.once(
            caller=call.access.caller,
            request_id=call.service.access.check_request_id(key),
            verb="writeback",
            body=sent,
            run=lambda: _hold(call, body),
        )
    return Reply(202 if answer["status"] == "held" else 200, answer)


ROUTES: tuple[HttpRoute, ...] = (
    HttpRoute(
        method="POST",
        path="/writeback",
        operation_id="ob1Writeback",
        summary="Hold an agent's write-back for a person's review (OB1 write-back)",
        tag="ob1",
        handler=writeback,
        request_schema=WRITEBACK_BODY,
        responses={202: load_schema("ob1_writeback"), 200: load_schema("ob1_writeback")},
        description="Every memory of the payload becomes a pending proposal (evidence, never "
        "an instruction, until a person confirms it), whatever the token's write grant; it is "
        "not recalled before a person approves it. 202 when any memory waits; 200 when none "
        "does (each already stored in these scopes). All are checked before any is held. " + ERRORS,
    ),
)
