"""Why not? For a recall, the facts that matched the query but were not returned, and why:
out of scope, withheld by the egress ceiling, cut by the budget, or no longer current."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.contract.normalize import estimate_tokens, normalize_scopes
from engine.memory import browse
from engine.memory.recall import EGRESS_ALLOWS, RecallRequest
from engine.retrieval.seam import Visibility

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

EXAMPLES = 4  # kept per reason; the count says how many there were
REASONS = {
    "scope": "out of scope (shares no scope with the request)",
    "egress": "withheld by the egress ceiling",
    "budget": "cut by the budget (maxFacts / maxTokens)",
    "status": "not current (superseded, retired or expired)",
}


@dataclass(frozen=True)
class LeftOut:
    """One fact a recall left out: which, and the detail behind its reason."""

    docid: str
    text: str
    detail: str


@dataclass
class WhyNot:
    mode: str
    semantic_unavailable: str | None
    excluded: dict[str, list[LeftOut]] = field(default_factory=dict)  # reason -> examples
    counts: dict[str, int] = field(default_factory=dict)


def why_not(engine: MemoryEngine, request: RecallRequest, result: dict[str, Any]) -> WhyNot:
    """Classify every match of the query (over all current facts) that the result left out."""
    scopes = set(normalize_scopes(request.scopes))
    collections = engine.collections_by_name()
    allowed = {n for n, c in collections.items()
               if c.policy in EGRESS_ALLOWS[request.egress or "local_only"]}  # fmt: skip
    query = request.query or ""
    # The same ranking as the recall's, over every scope and collection: what it matched
    # that the recall could not see, or could not fit.
    ranking = engine.retrieval().rank(query, Visibility(None, None, engine.now()))
    returned = {fact["recordId"] for fact in result["facts"]}
    report = WhyNot(result["retrieval"]["mode"], result["retrieval"].get("semanticUnavailable"))
    for match in ranking.matches:
        fact = match.fact
        if fact.record_id in returned:
            continue
        if not scopes & set(fact.scopes):
            reason, detail = "scope", "scopes " + ", ".join(fact.scopes)
        elif fact.collection not in allowed:
            reason, detail = "egress", f"{fact.collection} is {collections[fact.collection].policy}"
        else:
            reason, detail = "budget", f"~{estimate_tokens(fact.text)} tokens"
        _note(report, reason, LeftOut(fact.docid, fact.text, detail))
    for status in ("superseded", "retired", "expired"):
        page = browse.list_facts(engine, status=status, text=query, limit=50)
        for row in page.rows:
            if set(row.scopes) & set(scopes):
                _note(report, "status", LeftOut(row.docid, row.text, status))
    return report


def _note(report: WhyNot, reason: str, item: LeftOut) -> None:
    report.counts[reason] = report.counts.get(reason, 0) + 1
    examples = report.excluded.setdefault(reason, [])
    if len(examples) < EXAMPLES:
        examples.append(item)
