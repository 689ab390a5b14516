"""Pictures of the Remember and Review screens (pytest-textual-snapshot).

The store runs on a fixed clock and record ids come from a counter instead of random bytes, so
times, docids and ages in the pictures are the same on every run."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pilot_helpers import steady

from engine.facade.factory import open_engine
from engine.memory.remember import RememberRequest
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.store import MemoryEngine
from gno_tui.app import GnoApp, create_app
from screens.remember import DEBOUNCE_SECONDS, RememberScreen

SIZE = (140, 40)
FIXED = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[MemoryEngine]:
    counter = itertools.count(1)
    monkeypatch.setattr(
        "engine.contract.normalize.secrets.token_hex", lambda n=8: f"{next(counter):0{2 * n}x}"
    )
    engine = open_engine(
        home=tmp_path / "home",
        clock=lambda: FIXED,
        embedder_status=EmbedderStatus(None, "tests: lexical"),
    )
    yield engine
    engine.db.dispose()


def remember(
    store: MemoryEngine, text: str, scope: str = "user:alice", *, held: bool = False
) -> None:
    store.remember(
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
    app = create_app(store=store, screen=screen, watch_store=False)
    app.actor = "tui:tester"
    return app


async def settle(pilot: Any) -> None:
    """Wait for the debounce timer, then until no worker runs, then for a steady frame."""
    await pilot.pause(DEBOUNCE_SECONDS + 0.1)
    for _ in range(100):
        await pilot.pause(0.05)
        screen = pilot.app.screen
        pending = isinstance(screen, RememberScreen) and screen._debounce is not None
        if not pending and not any(worker.is_running for worker in pilot.app.workers):
            break
    await steady(pilot)


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

    async def to_duplicates(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("right_square_bracket")
        await settle(pilot)

    assert snap_compare(app_for(store, "review"), terminal_size=SIZE, run_before=to_duplicates)


def test_review_decision_log(snap_compare: Any, store: MemoryEngine) -> None:
    seed(store)

    async def decide_then_log(pilot: Any) -> None:
        await settle(pilot)
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("at")
        await settle(pilot)

    assert snap_compare(app_for(store, "review"), terminal_size=SIZE, run_before=decide_then_log)
