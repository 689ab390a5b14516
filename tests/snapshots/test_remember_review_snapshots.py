"""Pictures of the Remember and Review screens (pytest-textual-snapshot).

The store runs on a fixed clock and record ids come from a counter instead of random bytes, so
times, docids and ages in the pictures are the same on every run."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pilot_helpers import pending_proposal, steady, steps

from engine.contract.normalize import counted_record_ids
from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.memory.remember import RememberRequest
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.store import MemoryEngine
from gno_tui.app import GnoApp, create_app

SIZE = (140, 40)
FIXED = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryEngine]:
    engine = open_engine(
        home=tmp_path / "home",
        clock=lambda: FIXED,
        ids=counted_record_ids("snapshots"),
        embedder_status=EmbedderStatus(None, "tests: lexical"),
    )
    yield engine
    engine.db.dispose()


def remember(
    store: MemoryEngine, text: str, scope: str = "user:alice", *, held: bool = False
) -> None:
    MemoryService(store).remember(
        RememberRequest(
            text=text, scopes=[scope], caller="agent:claude", session="s-1", decision="add"
        ),
        hold_writes=held,
        origin="mcp",
    )


def seed(store: MemoryEngine) -> None:
    remember(store, "Alice prefers green tea in the morning")
    remember(store, "Alice prefers green tea in the mornings")
    remember(store, "Bob lives in Lyon", "user:bob")
    remember(store, "Alice prefers black tea in the morning", held=True)
    remember(store, "Carol moved to Berlin", "user:carol", held=True)


def app_for(store: MemoryEngine, screen: str) -> GnoApp:
    return create_app(
        service=MemoryService(store), screen=screen, watch_store=False, actor="tui:tester"
    )


async def settle(pilot: Any) -> None:
    """Run a pending proposal at once, wait for the workers and the messages they post, then
    for a steady frame (no toast, no blinking cursor)."""
    await steady(pilot, debounce=pending_proposal)


def test_remember_empty(snap_compare: Any, store: MemoryEngine) -> None:
    assert snap_compare(app_for(store, "remember"), terminal_size=SIZE, run_before=settle)


def test_remember_with_candidates(snap_compare: Any, store: MemoryEngine) -> None:
    seed(store)

    async def type_draft(pilot: Any) -> None:
        await pilot.press(*"Alice prefers black tea", "tab", *"user:alice")
        await settle(pilot)

    assert snap_compare(app_for(store, "remember"), terminal_size=SIZE, run_before=type_draft)


def test_review_proposals_with_diff(snap_compare: Any, store: MemoryEngine) -> None:
    seed(store)
    assert snap_compare(app_for(store, "review"), terminal_size=SIZE, run_before=settle)


def test_review_duplicates_tab(snap_compare: Any, store: MemoryEngine) -> None:
    seed(store)
    to_duplicates = steps("right_square_bracket", debounce=pending_proposal)
    assert snap_compare(app_for(store, "review"), terminal_size=SIZE, run_before=to_duplicates)


def test_review_decision_log(snap_compare: Any, store: MemoryEngine) -> None:
    seed(store)
    decide_then_log = steps("a", "at", debounce=pending_proposal)
    assert snap_compare(app_for(store, "review"), terminal_size=SIZE, run_before=decide_then_log)
