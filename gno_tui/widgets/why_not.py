"""Why not? For a recall, the facts that matched the query but were not returned, and why:
out of scope, withheld by the egress ceiling, cut by the budget, or no longer current."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rich.text import Text

from engine.contract.normalize import estimate_tokens, normalize_scopes
from engine.memory import browse
from engine.memory.recall import EGRESS_ALLOWS, RecallRequest, rank
from gno_tui.widgets.badges import clip

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

EXAMPLES = 4  # shown per reason
REASONS = {
    "scope": "out of scope (shares no scope with the request)",
    "egress": "withheld by the egress ceiling",
    "budget": "cut by the budget (maxFacts / maxTokens)",
    "status": "not current (superseded, retired or expired)",
}


@dataclass
class WhyNot:
    mode: str
    semantic_unavailable: str | None
    excluded: dict[str, list[str]] = field(default_factory=dict)  # reason -> lines
    counts: dict[str, int] = field(default_factory=dict)


def why_not(store: MemoryEngine, request: RecallRequest, result: dict[str, Any]) -> WhyNot:
    """Classify every match of the query (over all current facts) that the result left out."""
    snapshot = store.snapshot()
    now = store.now()
    scopes = normalize_scopes(request.scopes)
    everywhere = sorted({scope for fact in snapshot.facts for scope in fact.scopes})
    collections = store.collections_by_name()
    allowed = [n for n, c in collections.items()
               if c.policy in EGRESS_ALLOWS[request.egress or "local_only"]]  # fmt: skip
    query = request.query or ""
    ranked = rank(snapshot, query, snapshot.visible(scopes=everywhere, collections=None, now=now),
                  store.embedder_status.embedder)  # fmt: skip
    in_scope = snapshot.visible(scopes=scopes, collections=None, now=now)
    permitted = snapshot.visible(scopes=scopes, collections=allowed, now=now)
    returned = {fact["recordId"] for fact in result["facts"]}
    report = WhyNot(result["retrieval"]["mode"], result["retrieval"].get("semanticUnavailable"))
    for position in ranked.positions:
        fact = snapshot.facts[position]
        if fact.record_id in returned:
            continue
        if not in_scope[position]:
            reason, detail = "scope", "scopes " + ", ".join(fact.scopes)
        elif not permitted[position]:
            reason, detail = "egress", f"{fact.collection} is {collections[fact.collection].policy}"
        else:
            reason, detail = "budget", f"~{estimate_tokens(fact.text)} tokens"
        _note(report, reason, f"{fact.docid} {clip(fact.text, 44)} ({detail})")
    for status in ("superseded", "retired", "expired"):
        page = browse.list_facts(store, status=status, text=query, limit=50)
        for row in page.rows:
            if set(row.scopes) & set(scopes):
                _note(report, "status", f"{row.docid} {clip(row.text, 44)} ({status})")
    return report


def _note(report: WhyNot, reason: str, line: str) -> None:
    report.counts[reason] = report.counts.get(reason, 0) + 1
    lines = report.excluded.setdefault(reason, [])
    if len(lines) < EXAMPLES:
        lines.append(line)


def why_not_text(report: WhyNot) -> Text:
    out = Text()
    out.append("Why not?", style="bold underline")
    out.append("  (w hides)\n", style="dim")
    if report.semantic_unavailable:
        out.append(f"lexical fallback: {report.semantic_unavailable}\n", style="yellow")
    else:
        out.append(f"retrieval: {report.mode}\n")
    if not report.counts:
        out.append("Every match of the query was returned.\n", style="green")
    for reason, label in REASONS.items():
        if reason not in report.counts:
            continue
        out.append(f"{report.counts[reason]} {label}\n", style="bold")
        for line in report.excluded[reason]:
            out.append(f"  {line}\n")
        if report.counts[reason] > EXAMPLES:
            out.append(f"  … and {report.counts[reason] - EXAMPLES} more\n", style="dim")
    return out
