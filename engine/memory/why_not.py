"""Why not? For a recall, the facts that matched the query but were not returned, and why:
out of scope, outside the collection asked for, withheld by the egress ceiling, cut by the
budget, or no longer current. For a recall that returned nothing, `no_match` says why in one
message for a person: nothing stored in those scopes, matches withheld by the egress ceiling
or too big for the budget, or nothing close enough to the query.

Both explain the recall at its moment (its receipt's issuedAt), not the store as it is when
asked: facts written since are left out of the ranking, statuses are those of that moment,
and the budget cut is the recall's own ranking found again (its returned facts in its order,
as many matches cut as it reported). When the store changed since in a way that cannot be
undone by looking (a fact it ranked was superseded, retired or edited, a policy changed),
the report says so (`unexplained`) and keeps the recall's own count, with no examples."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engine.contract.normalize import estimate_tokens, normalize_scopes, parse_iso
from engine.memory import browse
from engine.memory.recall import EGRESS_ALLOWS, RecallRequest
from engine.retrieval.seam import Visibility
from engine.storage.queries import memory as queries

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

EXAMPLES = 4  # kept per reason; the count says how many there were
REASONS = {
    "scope": "out of scope (shares no scope with the request)",
    "collection": "in another collection than the one asked for",
    "egress": "withheld by the egress ceiling",
    "budget": "cut by the budget (maxFacts / maxTokens)",
    "status": "not current (superseded, retired or expired)",
}
UNEXPLAINED = (
    "This recall's ranking cannot be found again: the store changed since it ran (a fact it "
    "ranked was superseded, retired or edited, or a collection's policy changed), so which "
    "matches the budget cut cannot be told; the count is the recall's own. Recall again "
    "(enter) to see them."
)


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
    moment: datetime | None = None  # the recall's issuedAt: the store is seen as it was then
    omitted: int = 0  # the recall's own count of matches the budget cut
    unexplained: str | None = None  # why the budget cut's facts cannot be named (None: they are)
    gone: int = 0  # facts current at the moment that left recall since: not ranked, not counted


def why_not(engine: MemoryEngine, request: RecallRequest, result: Mapping[str, Any]) -> WhyNot:
    """Classify every match of the query that the recall `result` left out, as the store was
    when the recall was issued (the same ranking: the same index, facts born since left out)."""
    moment = parse_iso(result["receipt"]["issuedAt"])
    scopes = normalize_scopes(request.scopes)
    collections = engine.collections_by_name()
    allowed = {n for n, c in collections.items()
               if c.policy in EGRESS_ALLOWS[request.egress or "local_only"]}  # fmt: skip
    seen = sorted(n for n in allowed if request.collection in (None, n))  # what the recall saw
    query = request.query or ""
    budget = result["budget"]
    report = WhyNot(
        result["retrieval"]["mode"],
        result["retrieval"].get("semanticUnavailable"),
        moment=moment,
        omitted=budget["omitted"],
    )
    born = _born_after(engine, moment)
    index = engine.retrieval()
    returned = [fact["recordId"] for fact in result["facts"]]
    kept = set(returned)
    # The recall's ranking again: its scopes and collections, at its moment. Found again when
    # it returns the same facts in the same order and cuts as many as the recall reported.
    ranking = index.rank(query, Visibility(scopes, seen, moment, exclude=born))
    cut = [m.fact for m in ranking.matches if m.fact.record_id not in kept]
    again = [m.fact.record_id for m in ranking.matches if m.fact.record_id in kept]
    if again == returned and len(cut) == budget["omitted"]:
        for fact in cut:
            tokens = f"~{estimate_tokens(fact.text)} tokens"
            _note(report, "budget", LeftOut(fact.docid, fact.text, tokens))
    else:
        report.unexplained = UNEXPLAINED
        if budget["omitted"]:
            report.counts["budget"], report.excluded["budget"] = budget["omitted"], []
    # What the query matched then beyond the recall's view, in every scope and collection.
    wider = index.rank(query, Visibility(None, None, moment, exclude=born))
    for match in wider.matches:
        fact = match.fact
        if not set(scopes) & set(fact.scopes):
            reason, detail = "scope", "scopes " + ", ".join(fact.scopes)
        elif request.collection is not None and fact.collection != request.collection:
            reason, detail = "collection", f"in {fact.collection}"
        elif fact.collection not in allowed:
            reason, detail = "egress", f"{fact.collection} is {collections[fact.collection].policy}"
        else:
            continue  # in the recall's view: returned, or counted above
        _note(report, reason, LeftOut(fact.docid, fact.text, detail))
    for status in ("superseded", "retired", "expired"):
        page = browse.list_facts(engine, status=status, text=query, limit=50, as_of=moment)
        for row in page.rows:
            if set(row.scopes) & set(scopes):
                _note(report, "status", LeftOut(row.docid, row.text, status))
    report.gone = _gone_since(engine, moment)
    return report


def _born_after(engine: MemoryEngine, moment: datetime) -> list[str]:
    """The facts created after `moment`: the recall could not have seen them."""
    with engine.session() as session:
        return queries.fact_ids_created_after(session, moment)


def _gone_since(engine: MemoryEngine, moment: datetime) -> int:
    """Facts current at `moment` that have left recall since: no index ranks them now."""
    now = engine.now()
    with engine.session() as session:
        return queries.count_gone_since(session, moment, now)


def _note(report: WhyNot, reason: str, item: LeftOut) -> None:
    report.counts[reason] = report.counts.get(reason, 0) + 1
    examples = report.excluded.setdefault(reason, [])
    if len(examples) < EXAMPLES:
        examples.append(item)


@dataclass(frozen=True)
class NoMatch:
    """Why a recall returned no fact, for a person (the CLI's plain output, the workbench):
    `reason` is empty, egress, budget, collection or far; `message` says it in full."""

    reason: str
    in_scope: int  # current facts sharing a scope of the request (in its collection, if named)
    withheld: int  # the query's matches in those scopes withheld by the egress ceiling
    over_budget: int  # ... that fit no budget
    other_collections: int  # ... in another collection than the one asked for
    other_scopes: int  # the query's matches in other scopes (counted, never named)
    not_current: int  # matches in those scopes no longer current
    message: str


def no_match(engine: MemoryEngine, request: RecallRequest, result: Mapping[str, Any]) -> NoMatch:
    """Why the recall `result` of `request` is empty (call it only when it is), at its moment."""
    report = why_not(engine, request, result)
    counts = report.counts
    scopes = normalize_scopes(request.scopes)
    assert report.moment is not None
    in_scope = _current_in(engine, scopes, request.collection, report.moment)
    where = _scopes_phrase(scopes) + (
        f" in collection {request.collection}" if request.collection is not None else ""
    )
    withheld, over_budget = counts.get("egress", 0), counts.get("budget", 0)
    elsewhere, other_scopes = counts.get("collection", 0), counts.get("scope", 0)
    not_current = counts.get("status", 0)
    if in_scope == 0:
        reason = "empty"
        those = "that scope" if len(scopes) == 1 else "any of those scopes"
        message = f"Nothing is stored {where}: no current fact has {those}."
        if elsewhere:
            matches = _are(elsewhere, "matches", "match")
            message += f" {_facts(elsewhere)} of those scopes in other collections {matches}."
        if other_scopes:
            matches = _are(other_scopes, "matches", "match")
            message += f" {_facts(other_scopes)} in other scopes {matches} the query."
    elif withheld:
        reason = "egress"
        ceiling = request.egress or "local_only"
        policies = sorted({item.detail.rsplit(" ", 1)[-1] for item in report.excluded["egress"]})
        them = _are(withheld, "it", "them")
        message = (
            f"{_facts(withheld)} {where} {_are(withheld, 'matches', 'match')}, but the egress "
            f"ceiling {ceiling} withheld {them} ({withheld} withheld): "
            f"{_are(withheld, 'its collection is', 'their collections are')} "
            f"{' or '.join(policies)}, whose facts may not go {_destination(ceiling)}. Recall "
            "under a looser ceiling only if the answer stays where that policy allows."
        )
    elif over_budget:
        reason = "budget"
        cut = report.excluded["budget"]  # best first; none when they cannot be told again
        best = f" (the best match is ~{estimate_tokens(cut[0].text)} tokens)" if cut else ""
        message = (
            f"{_facts(over_budget)} {where} {_are(over_budget, 'matches', 'match')}, but none "
            f"fits the budget of {result['budget']['maxTokens']} tokens{best}. Raise max tokens."
        )
    elif elsewhere:
        reason = "collection"
        message = (
            f"{_facts(elsewhere)} {_scopes_phrase(scopes)} {_are(elsewhere, 'matches', 'match')}"
            f", in other collections than {request.collection}. Leave the collection out to "
            "recall from all of them."
        )
    else:
        reason = "far"
        message = (
            f"{_facts(in_scope)} {_are(in_scope)} stored {where}, but none is close enough to "
            f"the query {request.query!r}."
        )
        if report.semantic_unavailable:
            message += (
                " Without the embedding model only shared words match "
                f"({report.semantic_unavailable})."
            )
        else:
            message += " Try other words, or the words the fact itself would use."
    if not_current and reason != "empty":
        message += (
            f" {_facts(not_current)} that matched {_are(not_current)} no longer current "
            "(superseded, retired or expired)."
        )
    return NoMatch(
        reason, in_scope, withheld, over_budget, elsewhere, other_scopes, not_current, message
    )


def _current_in(
    engine: MemoryEngine, scopes: list[str], collection: str | None, moment: datetime
) -> int:
    """How many facts current at `moment` share one of `scopes` (in `collection`, when one is
    named)."""
    with engine.session() as session:
        return queries.count_current_in(session, scopes, collection, moment)


def _facts(count: int) -> str:
    return f"{count} fact" + ("" if count == 1 else "s")


def _are(count: int, one: str = "is", many: str = "are") -> str:
    """`one` or `many`, as `count` asks (is/are, matches/match, it/them)."""
    return one if count == 1 else many


def _scopes_phrase(scopes: list[str]) -> str:
    return ("in scope " if len(scopes) == 1 else "in scopes ") + ", ".join(scopes)


def _destination(ceiling: str) -> str:
    return {"lan": "over the local network", "remote": "to a remote service"}.get(
        ceiling, "off this machine"
    )
