"""What the review queue shows a person: the pending proposals, the facts their agents meant
to supersede, and the threshold in force checked against the person's own verdicts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.contract.errors import MemoryFailure
from engine.curation.calibration import ThresholdCheck, check_threshold, judged_pairs
from engine.curation.claim_recovery import recover_quietly
from engine.memory import browse
from engine.retrieval.matching import matching_block
from engine.storage.proposals import list_proposals

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine


@dataclass(frozen=True)
class ReviewQueue:
    proposals: list[dict[str, Any]]
    predecessors: dict[str, dict[str, Any]]  # uri -> the fact an agent meant to supersede
    calibration: ThresholdCheck | None  # the threshold in force against the person's verdicts
    # uri of a candidate (or predecessor) superseded since it was proposed -> its chain's
    # current head, the target to offer instead (a supersede of the old one would conflict).
    heads: dict[str, dict[str, Any]] = field(default_factory=dict)


def review_queue(engine: MemoryEngine) -> ReviewQueue:
    # A proposal whose decision's process is gone comes back (engine/curation/claims.py).
    recover_quietly(engine)
    proposals = list_proposals(engine)
    predecessors: dict[str, dict[str, Any]] = {}
    for proposal in proposals:
        uri = proposal.get("predecessor")
        if uri and uri not in predecessors:
            try:
                row = browse.fact_row(engine, uri)
            except MemoryFailure:  # an unknown predecessor is shown as such
                continue
            predecessors[uri] = {
                "uri": row.uri,
                "docid": row.docid,
                "text": row.text,
                "similarity": None,
                "match": "intended",
            }
    status = engine.embedder_status
    matching = matching_block(status.embedder, status.unavailable_reason)
    calibration = check_threshold(
        judged_pairs(engine), mode=matching["mode"], threshold=matching["threshold"]
    )
    targets = {c["uri"] for p in proposals for c in p["candidates"]} | set(predecessors)
    heads = {uri: head for uri in sorted(targets) if (head := current_head(engine, uri))}
    return ReviewQueue(proposals, predecessors, calibration, heads)


def current_head(engine: MemoryEngine, uri: str) -> dict[str, Any] | None:
    """When the fact `uri` was superseded: its chain's current head as a target (`was` names
    the stale fact, `superseded` says so); None when it is not superseded or its chain has no
    current head any more (retired), when there is nothing better to offer."""
    try:
        row = browse.fact_row(engine, uri)
    except MemoryFailure:
        return None
    if not row.superseded_by:
        return None
    head = browse.chain(engine, uri)[-1]
    if head.superseded_by or head.retired_at:
        return None
    return {
        "uri": head.uri,
        "docid": head.docid,
        "text": head.text,
        "contentHash": head.content_hash,
        "was": row.docid,
        "superseded": True,
    }
