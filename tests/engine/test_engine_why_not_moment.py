"""Why-not explains one recall at its receipt's moment: the facts current when it was issued,
ranked as it ranked them, so its numbers are the recall's own; what cannot be told again
after the store changed is said, never replaced by a different number."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from engine.contract.normalize import parse_iso
from engine.curation import review
from engine.facade.service import MemoryService
from engine.memory.recall import RecallRequest
from engine.memory.why_not import no_match, why_not

PERSON = "tui:alice"


def later(engine: Any, minutes: int) -> None:
    """The engine's clock, `minutes` after the recall: what it writes is born after it."""
    start = engine.now()
    engine._clock = lambda: start + timedelta(minutes=minutes)


def request(query: str, scopes: list[str], **budget: Any) -> RecallRequest:
    return RecallRequest(query=query, scopes=scopes, caller="test:agent", session="s", **budget)


def deploy_notes(client: Any, count: int) -> list[dict[str, Any]]:
    return [
        client.add(f"Deploy note {n}: the deploy pipeline ships on Fridays", "project:x")
        for n in range(count)
    ]


def test_the_budget_count_is_the_recalls_own_after_more_writes(client: Any, engine: Any) -> None:
    deploy_notes(client, 6)
    client.add("The deploy freeze starts in December", "project:y")
    asked = request("deploy", ["project:x"], max_facts=2)
    result = MemoryService(engine).recall(asked)
    assert result["budget"]["omitted"] == 4
    later(engine, 1)
    for n in range(3):  # written after the recall: in its scope, and matching
        client.add(f"Deploy update {n}: the deploy moved", "project:x")
    client.add("The deploy of project z is on Monday", "project:z")
    report = why_not(engine, asked, result)
    assert report.moment == parse_iso(result["receipt"]["issuedAt"])
    assert report.unexplained is None
    assert report.counts == {"budget": 4, "scope": 1}  # project:y's; project:z's came later
    assert report.omitted == 4
    cut = [item.text for item in report.excluded["budget"]]
    assert all(text.startswith("Deploy note") for text in cut)


def test_status_is_what_had_happened_by_the_recall(client: Any, engine: Any) -> None:
    old = client.add("The deploy runs on Thursdays", "project:x")
    client.supersede(old, "The deploy runs on Fridays")
    elsewhere = client.add("The deploy freeze starts in December", "project:y")
    asked = request("deploy", ["project:x"])
    result = MemoryService(engine).recall(asked)
    later(engine, 1)
    # Retired after the recall: it was out of scope then, and is said to have left since.
    review.retire(engine, ref=elsewhere["record"]["uri"], actor=PERSON, reason="done")
    report = why_not(engine, asked, result)
    assert report.counts == {"status": 1}
    assert [item.text for item in report.excluded["status"]] == ["The deploy runs on Thursdays"]
    assert report.gone == 1


def test_a_cut_fact_that_left_since_is_said_not_recounted(client: Any, engine: Any) -> None:
    notes = deploy_notes(client, 5)
    asked = request("deploy", ["project:x"], max_facts=1)
    result = MemoryService(engine).recall(asked)
    assert result["budget"]["omitted"] == 4
    returned = result["facts"][0]["recordId"]
    cut = next(n for n in notes if n["record"]["recordId"] != returned)
    later(engine, 1)
    review.retire(engine, ref=cut["record"]["uri"], actor=PERSON, reason="obsolete")
    report = why_not(engine, asked, result)
    # The recall's number, without examples that could be the wrong facts, and why.
    assert report.counts["budget"] == 4 and report.excluded.get("budget", []) == []
    assert report.unexplained is not None and "changed since" in report.unexplained


def test_an_empty_recall_is_explained_at_its_moment(client: Any, engine: Any) -> None:
    client.add("Bob lives in Lyon", "user:bob")
    asked = request("zebra savanna", ["user:bob"])
    result = MemoryService(engine).recall(asked)
    assert result["facts"] == []
    later(engine, 1)
    client.add("Bob saw a zebra in the savanna", "user:bob")  # after: not a match then
    why = no_match(engine, asked, result)
    assert why.reason == "far" and why.in_scope == 1 and why.over_budget == 0
