"""Engines on the session's PostgreSQL (`pg_server` and `pg_url` come from
tests/pg_fixtures.py, registered by tests/conftest.py): several homes on one database, as
several machines would have."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.facade.factory import open_engine
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.store import MemoryEngine

OpenPg = Callable[..., MemoryEngine]


@pytest.fixture
def open_pg(tmp_path: Path) -> Iterator[OpenPg]:
    """Opens engines on a database URL (each with a home of its own, as two machines would
    have); every engine opened is disposed of at the end of the test."""
    opened: list[MemoryEngine] = []

    def open_one(url: str, status: EmbedderStatus, *, name: str = "home", **options: Any) -> Any:
        store = open_engine(home=tmp_path / name, db_url=url, embedder_status=status, **options)
        opened.append(store)
        return store

    yield open_one
    for store in opened:
        store.db.dispose()
