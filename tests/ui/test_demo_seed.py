"""The demo store (`gno-tui --demo`, the screenshots) fills every screen, reproducibly."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pilot_helpers import workbench
from textual.widgets import DataTable, Input

from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.memory import browse
from engine.memory.receipts import recent_receipts, verify_receipt
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage import proposals
from engine.storage.store import MemoryEngine
from gno_tui.cli import build_parser
from gno_tui.demo import demo_clock, seed_demo
from screens import SCREENS_BY_MODE
from screens.supersession import SupersessionScreen


def demo_store(home: Path) -> MemoryEngine:
    return open_engine(
        home=home, clock=demo_clock(), embedder_status=EmbedderStatus(None, "tests: lexical")
    )


@pytest.fixture
def demo(tmp_path: Path) -> Iterator[tuple[MemoryEngine, dict[str, Any]]]:
    store = demo_store(tmp_path / "demo")
    made = seed_demo(MemoryService(store))
    yield store, made
    store.db.dispose()


def test_the_demo_has_something_for_every_screen(demo: tuple[MemoryEngine, dict[str, Any]]) -> None:
    store, made = demo
    counts = browse.status_counts(store)
    assert sum(counts.values()) >= 40
    assert counts["superseded"] >= 4 and counts["retired"] >= 3
    assert len({s for s in browse.known_scopes(store)}) >= 5
    assert {c.name: c.policy for c in store.collections_by_name().values()} == {
        "memory": "local_only",
        "team": "lan",
    }
    assert len(proposals.list_proposals(store)) == 4
    assert {p["caller"] for p in proposals.list_proposals(store)} <= {
        "mcp:claude-code",
        "mcp:cursor",
    }
    receipts = recent_receipts(store)
    assert len(receipts) == 3
    assert any(verify_receipt(store, r).drifted for r in receipts)
    lengths = sorted(len(browse.chain(store, uri)) for uri in made["chains"])
    assert lengths[-1] >= 3 and lengths[0] >= 2 and len(lengths) == 3
    confirmed = [
        r
        for r in browse.list_facts(store).rows
        if r.workbench.get("provenance", {}).get("status") == "user_confirmed"
        and r.workbench["provenance"].get("createdBy") != "user"
    ]
    assert len(confirmed) == 2
    assert any(p.tier for p in browse.duplicate_pairs(store, scope="user:alice"))


def test_a_fixed_clock_gives_the_same_store(tmp_path: Path) -> None:
    def facts(home: Path) -> list[tuple[str, str, str]]:
        store = demo_store(home)
        try:
            seed_demo(MemoryService(store))
            return [
                (r.record_id, r.text, str(r.created_at))
                for r in browse.list_facts(store, limit=500).rows
            ]
        finally:
            store.db.dispose()

    assert facts(tmp_path / "one") == facts(tmp_path / "two")


def test_demo_flag_parses() -> None:
    assert build_parser().parse_args(["--demo"]).demo is True
    assert build_parser().parse_args([]).demo is False


@pytest.mark.parametrize("mode", list(SCREENS_BY_MODE))
async def test_every_screen_opens_populated_on_the_demo(
    mode: str, demo: tuple[MemoryEngine, dict[str, Any]]
) -> None:
    store, made = demo
    async with workbench(store, mode, chain=made["chains"][2]) as (app, _pilot):
        screen = app.screen
        assert type(screen) is SCREENS_BY_MODE[mode]
        if mode == "library":
            assert screen.query_one("#library-table", DataTable).row_count >= 40
        elif mode == "supersession":
            assert isinstance(screen, SupersessionScreen) and len(screen.versions) == 3
        elif mode == "receipts":
            assert screen.query_one("#receipts-table", DataTable).row_count == 3
            assert screen.query_one("#collections-table", DataTable).row_count == 2
        elif mode == "recall":
            assert "user:alice" in screen.query_one("#recall-scopes", Input).value


def test_demo_flag_opens_the_workbench_on_a_throwaway_seeded_home(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from gno_tui.app import GnoApp
    from gno_tui.launch import open_workbench

    seen: dict[str, Any] = {}

    def fake_run(app: GnoApp, *args: Any, **kwargs: Any) -> None:
        seen["home"] = app.service.home
        seen["facts"] = app.service.facts.status_counts()["current"]
        seen["start"] = app._start

    monkeypatch.setattr(GnoApp, "run", fake_run)
    monkeypatch.setenv("GNO_TUI_DB", "sqlite:////nonexistent/never-used.sqlite")
    args = build_parser().parse_args(["--demo", "--model", "/nonexistent/model"])
    assert open_workbench(args, screen="review") == 0
    assert seen["facts"] >= 30 and seen["start"] == "review"
    assert not Path(seen["home"]).exists()  # deleted when the app closed
