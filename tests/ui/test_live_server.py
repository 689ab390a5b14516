"""The workbench on a server database (PostgreSQL, pgserver) shows what another machine
writes: the app's store watcher waits on the database's notification (LISTEN/NOTIFY), and no
timer polls the store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pilot_helpers import shown, store_change_shown, workbench
from textual.worker import WorkerState

from engine.facade.factory import open_engine
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.server.listen import ListenFeed
from gno_tui.app import STORE_WATCH_GROUP
from screens.library import LibraryScreen


async def test_a_fact_written_on_another_machine_shows_without_polling(
    pg_url: str, cli: Any, tmp_path: Path
) -> None:
    engine = open_engine(
        home=tmp_path / "this-machine",
        db_url=pg_url,
        embedder_status=EmbedderStatus(None, "no model in this test"),
    )
    try:
        async with workbench(engine, watch_store=True) as (app, pilot):
            library = shown(app, LibraryScreen)
            assert library.rows == []
            # Nothing repeats on a timer: the watcher is one worker waiting on the feed.
            assert [timer for timer in app._timers if timer._repeat is None] == []
            watchers = [w for w in app.workers if w.group == STORE_WATCH_GROUP]
            assert [w.state for w in watchers] == [WorkerState.RUNNING]
            added = cli(
                "--db",
                pg_url,
                "remember",
                "The VPN needs MFA",
                "--scope",
                "team:infra",
                "--add",
                "--json",
                home=tmp_path / "other-machine",
            )
            assert added.returncode == 0, added.stderr
            await store_change_shown(pilot)
            assert [row.text for row in library.rows] == ["The VPN needs MFA"]
        # Quitting closed the feed, which ends the watcher's wait at once.
        assert isinstance(app._changes, ListenFeed) and app._changes.closed
    finally:
        engine.db.dispose()
