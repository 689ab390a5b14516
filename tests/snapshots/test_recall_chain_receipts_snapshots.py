"""Snapshots of the Recall, Supersession and Receipts screens over the demo store.

The store has a fixed clock and deterministic record ids, so every run renders the same."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pilot_helpers import keys, steps

from engine.contract.normalize import counted_record_ids
from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.store import MemoryEngine
from gno_tui.app import GnoApp, create_app
from gno_tui.demo import demo_clock, seed_demo

SIZE = (140, 40)


@pytest.fixture
def demo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[MemoryEngine, dict[str, Any]]]:
    store = open_engine(
        home=tmp_path / "home",
        clock=demo_clock(),
        ids=counted_record_ids("snapshots"),
        embedder_status=EmbedderStatus(None, "snapshots: lexical"),
    )
    made = seed_demo(MemoryService(store))
    yield store, made
    store.db.dispose()


def make_app(demo: tuple[MemoryEngine, dict[str, Any]], mode: str) -> GnoApp:
    store, made = demo
    return create_app(
        service=MemoryService(store),
        screen=mode,
        watch_store=False,
        chain=made["chains"][2],
        actor="tui:snap",
        session="snap",
    )


RECALL = [
    *keys("production database backups staging"),
    "tab",
    "tab",
    "tab",
    "ctrl+u",
    *keys("40"),
    "enter",
]


def test_recall_with_results(snap_compare: Any, demo: Any) -> None:
    assert snap_compare(
        make_app(demo, "recall"), terminal_size=SIZE, run_before=steps(RECALL, "V", "w")
    )


def test_recall_raw_json(snap_compare: Any, demo: Any) -> None:
    assert snap_compare(make_app(demo, "recall"), terminal_size=SIZE, run_before=steps(RECALL, "o"))


def test_chain_with_diffs_and_as_of(snap_compare: Any, demo: Any) -> None:
    assert snap_compare(
        make_app(demo, "supersession"),
        terminal_size=SIZE,
        run_before=steps(["T", "ctrl+u", *keys("2026-11-22T08:00Z")], "enter"),
    )


def test_chain_split_diff(snap_compare: Any, demo: Any) -> None:
    app = make_app(demo, "supersession")
    assert snap_compare(app, terminal_size=SIZE, run_before=steps("i"))


def test_receipts_with_verify_and_fence(snap_compare: Any, demo: Any) -> None:
    fence = keys("The staging database is Postgres 16 on db-staging-2.")
    assert snap_compare(
        make_app(demo, "receipts"),
        terminal_size=SIZE,
        run_before=steps(["G", "V"], ["f", *fence, "escape"]),
    )


def test_collections_policy_and_effective(snap_compare: Any, demo: Any) -> None:
    # Move to the collections, mark both, relax team (lan -> remote, confirmed with y), then
    # the effective policy.
    assert snap_compare(
        make_app(demo, "receipts"),
        terminal_size=SIZE,
        run_before=steps(["tab", "tab", "tab"], ["space", "space"], "p", "y", "P"),
    )


def test_library_with_detail(snap_compare: Any, demo: Any) -> None:
    assert snap_compare(make_app(demo, "library"), terminal_size=SIZE, run_before=steps("j"))


def test_library_needs_attention_filtered(snap_compare: Any, demo: Any) -> None:
    assert snap_compare(
        make_app(demo, "library"),
        terminal_size=SIZE,
        run_before=steps(
            ["right_square_bracket", "right_square_bracket"], ["slash", *"alice", "enter"]
        ),
    )
