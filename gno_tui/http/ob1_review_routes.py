"""OB1's review routes (its Agent Memory API): gno's review queue listed (`GET
/memories/review`), where a write-back's memories wait (ob1_writeback_routes.py), and a held
write decided (`PATCH /memories/{id}/review`: an OB1 review action is a curation decision). A
held write is no instruction until a person confirms it. The decider is the token's caller:
OB1's `actor_id` and `actor_label` are accepted and not used."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from engine.facade import (
    PROPOSALS_URI,
    Decision,
    MemoryFailure,
    Proposal,
    RememberResult,
    load_schema,
    normalize_scopes,
)
from gno_tui.egress_ceiling import admitted_collections
from gno_tui.http.ob1_routes import ERRORS, IGNORED, NULLABLE, TEXT, project_scope
from gno_tui.http.ob1_writeback_routes import HELD_POLICY, memory_summary
from gno_tui.http.routes import HttpRoute, Lane, Reply, RouteCall
from gno_tui.mcp_tools import check_arguments

DEFAULT_REVIEW_LIMIT = 100
MAX_REVIEW_LIMIT = 1000
FACT_DECISIONS = ("add", "supersede")  # what a held fact write asked for

REVIEW_ACTIONS = [
    "confirm",
    "evidence_only",
    "edit",
    "merge",
    "supersede",
    "reject",
    "mark_stale",
    "dispute",
    "restrict_scope",
]
REVIEW_BODY: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["action"],
    "properties": {
        "action": {
            "enum": REVIEW_ACTIONS,
            "description": "confirm: write it as the agent asked (add, or supersede its "
            "predecessor) and confirm it (instruction use on). evidence_only: write it as "
            "the agent asked, as evidence (instruction use off). edit: write `content` "
            "instead (add). supersede: write it over `related_memory_id` (else its "
            "predecessor). merge: write `content` over `related_memory_id`. reject: drop it, "
            "`notes` saying why. mark_stale, dispute and restrict_scope act on stored "
            "memories, not held writes: 400 MEMORY_DECISION_INVALID.",
        },
        "notes": {**NULLABLE, "description": "Why: required to reject."},
        "content": {**TEXT, "description": "The text to write, for edit and merge."},
        "related_memory_id": {
            **TEXT,
            "description": "For supersede and merge: the fact written over (memory_id, gno:// "
            "uri or #docid), a fact of the token's scopes.",
        },
        "actor_id": {**NULLABLE, "description": "Not used: the actor is the token's caller."},
        "actor_label": {**NULLABLE, "description": "Not used: the actor is the token's caller."},
        "summary": {"type": "string", "description": "Not used: summaries are derived."},
        "visibility": {"type": "string", "description": IGNORED},
    },
}


# -- GET /memories/review ---------------------------------------------------------------


def _reviewable(call: RouteCall, proposal: Mapping[str, Any]) -> bool:
    """A held fact write (not a held keyed write: that is no OB1 memory) whose every scope
    the token holds."""
    held = call.access.scopes
    in_reach = held is None or set(proposal["scopes"]) <= held
    return in_reach and proposal["decision"] in FACT_DECISIONS


def _visible_proposals(call: RouteCall) -> list[dict[str, Any]]:
    """The pending reviewable proposals, each keeping only the candidates a recall in the
    token's scopes sees now."""
    text, _ = call.service.facts.read_resource(
        PROPOSALS_URI,
        scopes=call.access.scopes,
        collections=admitted_collections(call.service, call.access.egress),
    )
    proposals: list[dict[str, Any]] = json.loads(text)["proposals"]
    return [p for p in proposals if _reviewable(call, p)]


def _scoped_value(scopes: list[str], prefix: str) -> str | None:
    return next((s.split(":", 1)[1] for s in scopes if s.startswith(prefix + ":")), None)


def _review_item(proposal: dict[str, Any]) -> dict[str, Any]:
    scopes = list(proposal["scopes"])
    return {
        "memory_id": str(proposal["id"]),
        "proposal_id": proposal["id"],
        "review_status": "pending",
        "summary": memory_summary(proposal["text"]),
        "content": proposal["text"],
        "scope": {
            "workspace_id": proposal["collection"],
            "project_id": _scoped_value(scopes, "project"),
            "channel_id": _scoped_value(scopes, "channel"),
            "scopes": scopes,
        },
        "use_policy": dict(HELD_POLICY),
        "created_by": proposal["caller"],
        "created_at": proposal["createdAt"],
        "origin": proposal["origin"],
        "source": proposal["source"],
        "decision": proposal["decision"],
        "predecessor": proposal["predecessor"],
        "candidates": [
            {
                "memory_id": candidate["recordId"],
                "uri": candidate["uri"],
                "content": candidate["text"],
                "similarity": candidate.get("similarity"),
                "match": candidate.get("match"),
            }
            for candidate in proposal["candidates"]
        ],
    }


def _review_limit(call: RouteCall) -> int:
    given = call.query.get("limit", str(DEFAULT_REVIEW_LIMIT))
    if not given.isascii() or not given.isdigit() or not 1 <= int(given) <= MAX_REVIEW_LIMIT:
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID",
            f"limit must be a whole number from 1 to {MAX_REVIEW_LIMIT} "
            f"(default {DEFAULT_REVIEW_LIMIT}), not {given[:40]!r}.",
        )
    return int(given)


def review_list(call: RouteCall) -> Reply:
    limit = _review_limit(call)
    proposals = _visible_proposals(call)
    if workspace := call.query.get("workspace_id"):
        proposals = [p for p in proposals if p["collection"] == workspace]
    if project := project_scope(call.query.get("project_id")):
        scope = normalize_scopes(project)[0]
        proposals = [p for p in proposals if scope in p["scopes"]]
    return Reply(200, {"memories": [_review_item(p) for p in proposals[:limit]]})


# -- PATCH /memories/{id}/review --------------------------------------------------------


def _proposal(call: RouteCall) -> Proposal:
    """The proposal of the path, if the token may see it; else not found, as if it did not
    exist (MEMORY_PROPOSAL_NOT_FOUND)."""
    ref = call.path["id"]
    wanted = int(ref) if ref.isascii() and ref.isdigit() and len(ref) < 19 else None
    proposal = None if wanted is None else call.service.curation.proposal(wanted)
    if proposal is None or not _reviewable(call, proposal):
        raise MemoryFailure(
            "MEMORY_PROPOSAL_NOT_FOUND",
            f"No proposal {ref[:40]!r} of this token's scopes; list them with "
            "GET /memories/review.",
        )
    if proposal["state"] != "pending":
        raise MemoryFailure(
            "MEMORY_PROPOSAL_DECIDED",
            f"Proposal #{proposal['id']} was already decided ({proposal['state']}).",
        )
    return proposal


def _target(call: RouteCall, ref: str) -> str:
    """The uri of the fact `ref` written over, if it shares a scope of the token; else not
    found, as if it did not exist."""
    try:
        row = call.service.facts.get(ref)
    except MemoryFailure:
        row = None
    held = call.access.scopes
    if row is None or (held is not None and not held & set(row.scopes)):
        raise MemoryFailure(
            "MEMORY_PREDECESSOR_NOT_FOUND",
            f"related_memory_id {ref[:80]!r} is no fact of this token's scopes; name a "
            "memory_id (or uri) a recall in those scopes returned.",
        )
    return str(row.uri)


def _decision(call: RouteCall, body: dict[str, Any], proposal: Mapping[str, Any]) -> Decision:
    action, actor = body["action"], call.access.caller
    related = body.get("related_memory_id")
    as_asked = proposal["decision"]  # add, or supersede its predecessor
    if action in ("confirm", "evidence_only"):
        target = _target(call, proposal["predecessor"]) if as_asked == "supersede" else None
        return Decision(proposal["id"], as_asked, actor, target=target,
                        confirm=action == "confirm")  # fmt: skip
    if action == "reject":
        notes = body.get("notes")
        if not isinstance(notes, str) or not notes.strip():
            raise MemoryFailure(
                "MEMORY_DECISION_INVALID",
                "A rejection needs `notes` saying why, so the agent's author can learn.",
            )
        return Decision(proposal["id"], "reject", actor, reason=notes)
    if action in ("edit", "merge") and "content" not in body:
        raise MemoryFailure("MEMORY_TEXT_REQUIRED", f"{action} needs `content`: the text to write.")
    if action == "edit":
        return Decision(proposal["id"], "edit", actor, text=body["content"])
    if action in ("supersede", "merge"):
        ref = related or (proposal["predecessor"] if action == "supersede" else None)
        if not ref:
            raise MemoryFailure(
                "MEMORY_PREDECESSOR_REQUIRED",
                f"{action} needs `related_memory_id`: the fact to write over (a candidate's "
                "memory_id in GET /memories/review).",
            )
        text = body.get("content") if action == "merge" else None
        return Decision(proposal["id"], action, actor, target=_target(call, ref), text=text)
    raise MemoryFailure(
        "MEMORY_DECISION_INVALID",
        f"{action} acts on a stored memory; a held write is decided with confirm, "
        "evidence_only, edit, supersede, merge or reject (curate stored memories in the "
        "workbench).",
    )


def review_decide(call: RouteCall) -> Reply:
    call.access.require_curate("PATCH /memories/{id}/review")
    body = check_arguments("PATCH /memories/{id}/review", REVIEW_BODY, call.json_object())
    proposal = _proposal(call)
    decision = _decision(call, body, proposal)
    result = call.service.curation.decide(decision)
    answer: dict[str, Any] = {
        "proposal_id": proposal["id"],
        "action": body["action"],
        "decided_by": call.access.caller,
        "state": "rejected",
        "memory_id": None,
        "uri": None,
        "use_policy": None,
    }
    if decision.action != "reject":
        written = cast(RememberResult, result)  # not a rejection: the remember result
        record = written["record"]
        outcome = written["outcome"]
        state = "merged" if decision.action == "merge" and outcome == "superseded" else outcome
        policy = call.service.facts.get(record["recordId"]).workbench.get("usePolicy", {})
        answer |= {
            "state": state,
            "memory_id": record["recordId"],
            "uri": record["uri"],
            "use_policy": {
                "can_use_as_instruction": bool(policy.get("canUseAsInstruction")),
                "can_use_as_evidence": bool(policy.get("canUseAsEvidence", True)),
                "requires_user_confirmation": bool(policy.get("requiresUserConfirmation")),
            },
        }
    return Reply(200, answer)


ROUTES: tuple[HttpRoute, ...] = (
    HttpRoute(
        method="GET",
        path="/memories/review",
        operation_id="ob1ReviewList",
        summary="The held writes waiting for review in this token's scopes",
        tag="ob1",
        handler=review_list,
        responses={200: load_schema("ob1_review")},
        query_parameters=(
            ("workspace_id", {"type": "string"}, "Only this collection."),
            ("project_id", {"type": "string"}, "Only proposals of the scope project:<id>."),
            (
                "limit",
                {"type": "integer", "minimum": 1, "maximum": MAX_REVIEW_LIMIT},
                f"At most this many, oldest first (default {DEFAULT_REVIEW_LIMIT}).",
            ),
        ),
        description="Pending proposals whose every scope the token holds, oldest first; each "
        "keeps only the candidates a recall in the token's scopes sees now. " + ERRORS,
    ),
    HttpRoute(
        method="PATCH",
        path="/memories/{id}/review",
        operation_id="ob1ReviewDecide",
        summary="Decide a held write (OB1 review action -> a curation decision)",
        tag="ob1",
        handler=review_decide,
        request_schema=REVIEW_BODY,
        responses={200: load_schema("ob1_review_decision")},
        lane=lambda call: Lane.ALONE,
        description="Needs the curate grant (403 MEMORY_GRANT_MISSING). The id is a "
        "proposal_id; a proposal outside the token's scopes is 404 MEMORY_PROPOSAL_NOT_FOUND "
        "as if it did not exist; a decided one is 409 MEMORY_PROPOSAL_DECIDED. Logged with "
        "the token's caller as the actor. " + ERRORS,
    ),
)
