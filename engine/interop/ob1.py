"""OB1 agent-memory shapes (seed 002) and the curation fields behind them
(docs/contract.md section 9).

Our facts keep provenance, use policy and freshness under the fact file's `workbench:` key;
docs/ob1-mapping.md documents how each OB1 field is filled."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.contract.curation_fields import curation_defaults
from engine.contract.normalize import collapse_text


def _visibility(scopes: list[str]) -> str:
    prefixes = [scope.split(":", 1)[0] for scope in scopes if ":" in scope]
    for prefix, visibility in (
        ("user", "personal"),
        ("personal", "personal"),
        ("channel", "channel"),
        ("project", "project"),
        ("org", "organization"),
        ("organization", "organization"),
    ):
        if prefix in prefixes:
            return visibility
    return "workspace"


def _scoped(scopes: list[str], prefix: str) -> str | None:
    return next((s.split(":", 1)[1] for s in scopes if s.startswith(prefix + ":")), None)


def ob1_memory(
    fact: Mapping[str, Any],
    *,
    collection: str,
    workbench: dict[str, Any],
    superseded_by: str | None = None,
) -> dict[str, Any]:
    """One OB1 memory from a public fact (seed 000's shape) and its workbench fields."""
    defaults = curation_defaults("agent")
    provenance = {**defaults["provenance"], **workbench.get("provenance", {})}
    policy = {**defaults["usePolicy"], **workbench.get("usePolicy", {})}
    freshness = workbench.get("freshness", {})
    related = [{"kind": "supersedes", "uri": uri} for uri in fact["supersedes"]]
    if superseded_by:
        related.append({"kind": "superseded_by", "uri": superseded_by})
    scopes = list(fact["scopes"])
    return {
        "memory_id": fact["recordId"],
        "summary": collapse_text(fact["text"])[:120],
        "content": fact["text"],
        "source": {
            "kind": "gno-fact",
            "uri": fact["uri"],
            "title": fact.get("source"),
            "timestamp": fact["createdAt"],
        },
        "provenance": {
            "status": provenance["status"],
            "confidence": float(provenance["confidence"]),
            "created_by": provenance["createdBy"],
            "model": provenance.get("model"),
            "runtime": provenance.get("runtime"),
        },
        "scope": {
            "workspace_id": collection,
            "project_id": _scoped(scopes, "project"),
            "channel_id": _scoped(scopes, "channel"),
            "visibility": _visibility(scopes),
        },
        "use_policy": {
            "can_use_as_instruction": bool(policy["canUseAsInstruction"]),
            "can_use_as_evidence": bool(policy["canUseAsEvidence"]),
            "requires_user_confirmation": bool(policy["requiresUserConfirmation"]),
        },
        "freshness": {
            "created_at": fact["createdAt"],
            "last_confirmed_at": freshness.get("lastConfirmedAt"),
            "stale_after": freshness.get("staleAfter"),
        },
        "related_artifacts": related,
    }


def ob1_response(request_id: str, memories: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schema_version": "openbrain.openclaw.recall_response.v1",
        "request_id": request_id,
        "memories": memories,
    }
