"""Build a MemoryEngine from the user's settings: home, database URL and model; or, for the
one recall or propose of a cold CLI call, the sqlite3 store that serves it without the ORM
(engine/storage/embedded/sqlite_reader.py). The storage modules are imported by the opener that uses
them, so that the second loads no SQLAlchemy."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict, Unpack

from engine.contract.normalize import utc_now
from engine.retrieval.embeddings import EmbedderStatus, load_embedder
from engine.retrieval.registry import REGISTRY, Registry
from engine.storage.disk_full import disk_full_said
from engine.storage.embedded.home import check_home_argument, make_home, not_writable
from engine.storage.embedded.sqlite_reader import INDEX_FILE, open_sqlite_store
from engine.storage.embedded.sqlite_settings import sqlite_file
from engine.storage.embedded.sqlite_settings import (
    sqlite_url as sqlite_url,  # patched by server-mode tests
)

if TYPE_CHECKING:
    from engine.storage.reads import RecallStore
    from engine.storage.store import MemoryEngine
# Opening a home on a full disk fails in SQLite (its log, its shared-memory file, a new
# home's schema) or in PostgreSQL: said as a full disk, not as a database out of reach.
_NOTHING_DONE = "Nothing was read or written; free some space there, then run it again"


def resolve_home(home: str | Path | None = None) -> Path:
    """--home, else $GNO_TUI_HOME, else the platform's user data folder for gno-tui. An empty
    --home is refused (MEMORY_HOME_INVALID), not taken for the default; an empty
    $GNO_TUI_HOME is unset, as empty variables are in a shell."""
    if home is not None:
        check_home_argument(home)
        return Path(home).expanduser().resolve()
    if os.environ.get("GNO_TUI_HOME"):
        return Path(os.environ["GNO_TUI_HOME"]).expanduser().resolve()
    from platformdirs import user_data_dir

    return Path(user_data_dir("gno-tui", appauthor=False))


class EngineOptions(TypedDict, total=False):
    """What opening a home may be told; every key is optional (see open_engine)."""

    home: str | Path | None
    db_url: str | None
    model: str | Path | None
    embedder_status: EmbedderStatus | None
    clock: Callable[[], datetime]
    ids: Callable[[], str] | None
    lock_timeout: float | None
    backends: Registry
    reading: bool


def open_engine(
    *,
    home: str | Path | None = None,
    db_url: str | None = None,
    model: str | Path | None = None,
    embedder_status: EmbedderStatus | None = None,
    clock: Callable[[], datetime] = utc_now,
    ids: Callable[[], str] | None = None,
    lock_timeout: float | None = None,
    backends: Registry = REGISTRY,
    reading: bool = False,
) -> MemoryEngine:
    """`clock` and `ids` (record ids, `mem-` + 16 hex; random when None) are the engine's
    only sources of time and identity: see MemoryEngine. `lock_timeout`: how long a write
    waits for the home's write lock (None: WRITE_LOCK_TIMEOUT_S). `backends`: the retrieval
    registry (engine/retrieval/registry.py) the backend is chosen from. `reading`: the caller
    only reads (see MemoryEngine)."""
    resolved = resolve_home(home)
    # A path that cannot be a home is a coded error, before the store's code loads; nothing
    # is made.
    make_home(resolved)
    from engine.storage.schema.database import make_db_engine
    from engine.storage.store import WRITE_LOCK_TIMEOUT_S, MemoryEngine

    url = db_url or os.environ.get("GNO_TUI_DB") or sqlite_url(resolved / INDEX_FILE)
    status = embedder_status if embedder_status is not None else load_embedder(model)
    with disk_full_said(resolved, _NOTHING_DONE, reword=True):
        engine = MemoryEngine(
            home=resolved,
            db=make_db_engine(url),
            embedder_status=status,
            clock=clock,
            ids=ids,
            lock_timeout=WRITE_LOCK_TIMEOUT_S if lock_timeout is None else lock_timeout,
            backends=backends,
            reading=reading,
            recover_claims=_recover_claims,  # as listing the queue does
        )
    return engine


def _recover_claims(engine: MemoryEngine, wait: float) -> int:
    # Imported when a compaction runs: a cold CLI call opens an engine without loading
    # curation (tests/cli/test_cli_cold_imports.py).
    from engine.curation.claim_recovery import recover_quietly

    return recover_quietly(engine, wait=wait)


def open_recall_store(**options: Unpack[EngineOptions]) -> RecallStore:
    """What one recall or propose runs on: the sqlite3 store when the home's index is the
    embedded SQLite one and needs nothing done at open, else a MemoryEngine (which repairs,
    migrates or serves another database as always). Both answer alike."""
    home = resolve_home(options.get("home"))
    # The URL open_engine would use: only the SQLite file it names is read here.
    url = options.get("db_url") or os.environ.get("GNO_TUI_DB") or sqlite_url(home / INDEX_FILE)
    given = options.get("embedder_status")
    # A home this process may not write is the engine's to open read-only (the sqlite3 store
    # would fail storing the receipt).
    with disk_full_said(home, _NOTHING_DONE, reword=True):
        store = (
            open_sqlite_store(
                home,
                db_url=url,
                embedder_status=lambda: (
                    given if given is not None else load_embedder(options.get("model"))
                ),
                clock=options.get("clock", utc_now),
                backends=options.get("backends", REGISTRY),
            )
            if not_writable(home, sqlite_file(url)) is None
            else None
        )
    # A recall or propose only reads: it need not wait for a process creating a new home.
    if store is not None:
        return store
    reading: EngineOptions = {**options, "reading": True}
    return open_engine(**reading)
