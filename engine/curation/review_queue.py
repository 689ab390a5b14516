"""What the review queue shows a person: the pending proposals, the facts their agents meant
to supersede, and the threshold in force checked against the person's own verdicts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.contract.errors import MemoryFailure
from engine.curation.calibration import ThresholdCheck, check_threshold, judged_pairs
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


def review_queue(engine: MemoryEngine) -> ReviewQueue:
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
    return ReviewQueue(proposals, predecessors, calibration)
