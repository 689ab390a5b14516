"""Build a MemoryEngine from the user's settings: home, database URL and model."""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TypedDict

from engine.contract.normalize import utc_now
from engine.retrieval.embeddings import EmbedderStatus, load_embedder
from engine.storage.database import make_db_engine, sqlite_url
from engine.storage.store import WRITE_LOCK_TIMEOUT_S, MemoryEngine


def resolve_home(home: str | Path | None = None) -> Path:
    """--home, else $GNO_TUI_HOME, else the platform's user data folder for gno-tui."""
    if home:
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
    lock_timeout: float


def open_engine(
    *,
    home: str | Path | None = None,
    db_url: str | None = None,
    model: str | Path | None = None,
    embedder_status: EmbedderStatus | None = None,
    clock: Callable[[], datetime] = utc_now,
    ids: Callable[[], str] | None = None,
    lock_timeout: float = WRITE_LOCK_TIMEOUT_S,
) -> MemoryEngine:
    """`clock` and `ids` (record ids, `mem-` + 16 hex; random when None) are the engine's
    only sources of time and identity: see MemoryEngine."""
    resolved = resolve_home(home)
    resolved.mkdir(parents=True, exist_ok=True)
    url = db_url or os.environ.get("GNO_TUI_DB") or sqlite_url(resolved / "index.sqlite")
    status = embedder_status if embedder_status is not None else load_embedder(model)
    return MemoryEngine(
        home=resolved,
        db=make_db_engine(url),
        embedder_status=status,
        clock=clock,
        ids=ids,
        lock_timeout=lock_timeout,
    )
