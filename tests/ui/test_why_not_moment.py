"""Why-not (`w` on Recall) explains the recall on screen at its receipt's moment: another
process writing meanwhile changes none of its numbers, which are the recall's own (its
"omitted" is the count cut by the budget). When the store changed so that the cut facts
cannot be told again, the pane says so and keeps the recall's count. Another process is a
second engine on the same home, with a clock an hour ahead: what it writes is born after the
recall."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from pilot_helpers import keys, settle, shown, store_change_shown, workbench
from textual.widgets import Label, Static

from engine.curation import review
from engine.facade.factory import open_engine
from engine.facade.service import ExplainedRecall, MemoryService
from engine.memory import browse
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest
from engine.retrieval.embeddings import EmbedderStatus
from screens.recall import RecallScreen


@pytest.fixture
def other(engine: Any) -> Iterator[MemoryService]:
    """Another process on the same home, its clock an hour after this one's."""
    ahead = engine.now() + timedelta(hours=1)
    second = open_engine(
        home=engine.home,
        embedder_status=EmbedderStatus(None, "no model in this test"),
        clock=lambda: ahead,
    )
    yield MemoryService(second)
    second.db.dispose()


def write(service: MemoryService, text: str, scope: str) -> None:
    service.remember(
        RememberRequest(text=text, scopes=[scope], caller="cli", session="s2", decision="add")
    )


def deploy_notes(client: Any) -> None:
    for n in range(6):
        client.add(f"Deploy note {n}: the deploy pipeline ships on Fridays", "project:x")
    client.add("The deploy freeze starts in December", "project:y")


async def recall_two(pilot: Any) -> RecallScreen:
    """`deploy` in project:x, at most 2 facts, typed into the form; enter runs it."""
    screen = shown(pilot.app, RecallScreen)
    await pilot.press(*keys("deploy"), "tab", "ctrl+u", *keys("project:x"), "tab", "ctrl+u", "2")
    await pilot.press("enter")
    await settle(pilot)
    return screen


def why_text(screen: RecallScreen) -> str:
    return str(screen.query_one("#recall-why", Static).render())


async def test_why_not_counts_what_this_recall_omitted_while_another_process_writes(
    engine: Any, client: Any, other: MemoryService
) -> None:
    deploy_notes(client)
    async with workbench(engine, "recall", watch_store=True) as (_app, pilot):
        screen = await recall_two(pilot)
        assert screen.result is not None
        omitted = screen.result["budget"]["omitted"]
        assert omitted == 4
        assert "4 omitted" in str(screen.query_one("#recall-budget-label", Label).content)
        for n in range(3):  # matching, in the recall's scope, after it
            write(other, f"Deploy update {n}: the deploy moved to Mondays", "project:x")
        write(other, "The deploy of project z is on Monday", "project:z")
        await store_change_shown(pilot)
        await pilot.press("w")
        await settle(pilot)
        text = why_text(screen)
        assert "4 cut by the budget" in text and "1 out of scope" in text, text
        assert f"as of this recall: {screen.result['receipt']['issuedAt']}" in text
        assert "Deploy update" not in text and "project z" not in text
        assert screen.why is not None and screen.why.counts == {"budget": 4, "scope": 1}
        # More writes, then w twice (hide, show): the same numbers, not the store's.
        write(other, "Deploy update 3: the deploy moved again", "project:x")
        await store_change_shown(pilot)
        await pilot.press("w", "w")
        await settle(pilot)
        assert "4 cut by the budget" in why_text(screen)


async def test_why_not_says_when_the_cut_can_no_longer_be_told(
    engine: Any, client: Any, other: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cut fact is retired by the other process between the recall and its explanation."""
    deploy_notes(client)
    real = MemoryService.recall_explained

    def then_retire(service: MemoryService, request: RecallRequest) -> ExplainedRecall:
        explained = real(service, request)
        returned = {fact["recordId"] for fact in explained.result["facts"]}
        notes = browse.list_facts(other.engine, text="Deploy note", status="current").rows
        cut = next(row for row in notes if row.record_id not in returned)
        review.retire(other.engine, ref=cut.uri, actor="tui:bob", reason="obsolete")
        return explained

    monkeypatch.setattr(MemoryService, "recall_explained", then_retire)
    async with workbench(engine, "recall", watch_store=True) as (_app, pilot):
        screen = await recall_two(pilot)
        assert screen.result is not None and screen.result["budget"]["omitted"] == 4
        await pilot.press("w")
        await settle(pilot)
        text = why_text(screen)
        assert "cannot be found again" in text and "4 cut by the budget" in text, text
        assert "3 cut by the budget" not in text and "Deploy note" not in text
