"""What each store does its own way (engine/storage/mode.py): the one the engine chose says
so, and a collection without a folder is refused with a coded error in either, never read
from the process's working directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import update
from sqlmodel import col

from engine.contract.errors import MemoryFailure
from engine.facade.service import MemoryService
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation
from engine.storage.store import MemoryEngine


def test_the_engine_keeps_the_store_its_database_calls_for(memory: MemoryService) -> None:
    on_postgres = memory.engine.db.dialect.name == "postgresql"
    assert memory.mode == ("server" if on_postgres else "embedded")
    assert memory.keeps_fact_files is not on_postgres
    assert memory.status()["mode"] == memory.mode


def test_a_collection_without_a_folder_is_refused_not_read_from_the_working_directory(
    engine: MemoryEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A row with no root: a server database's collection, or an index edited by hand.
    with engine.session() as session:
        session.execute(
            update(tables.CollectionRow)
            .where(col(tables.CollectionRow.name) == "memory")
            .values(root="")
        )
        session.commit()
    with engine.write_lock(), engine.session() as session:
        bump_generation(session)  # the engine keeps its collections per generation
        session.commit()
    elsewhere = tmp_path / "working-directory"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    with pytest.raises(MemoryFailure) as refused:
        engine.collection_root("memory")
    assert refused.value.code == "MEMORY_USAGE_INVALID"
    assert "has no folder" in refused.value.message
    assert not any(elsewhere.iterdir())
