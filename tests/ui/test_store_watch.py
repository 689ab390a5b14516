"""The workbench's store watcher when the store cannot be read: the failure is shown with its
code, the watcher starts again, and a write made meanwhile still reaches the screen."""

from __future__ import annotations

from typing import Any

import pytest
from pilot_helpers import shown, store_change_shown, workbench

from engine.contract.errors import MemoryFailure
from engine.facade.service import MemoryService
from engine.storage.reads.change_feed import ChangeFeed
from gno_tui import app as app_module
from screens.library import LibraryScreen


def locked() -> int:
    raise MemoryFailure("MEMORY_QUERY_FAILED", "The index is locked by another process.")


async def test_a_failed_watch_is_shown_and_starts_again(
    engine: Any, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(app_module, "STORE_RETRY_SECONDS", 0.01)
    opened: list[ChangeFeed] = []
    real_changes = MemoryService.changes

    def changes(service: MemoryService, since: int | None = None) -> ChangeFeed:
        feed = real_changes(service, since)
        if not opened:  # the first feed's reads of the counter fail
            monkeypatch.setattr(feed, "_read", locked)
        opened.append(feed)
        return feed

    monkeypatch.setattr(MemoryService, "changes", changes)
    async with workbench(engine, watch_store=True) as (app, pilot):
        client.add("Erin joined the infra team", "team:infra")
        await store_change_shown(pilot)
        rows = [row.text for row in shown(app, LibraryScreen).rows]
        assert rows == ["Erin joined the infra team"]
        assert "MEMORY_QUERY_FAILED" in [note.title for note in app._notifications]
        assert len(opened) == 2 and opened[0].closed and not opened[1].closed
