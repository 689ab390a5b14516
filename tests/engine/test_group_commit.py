"""Group commit (engine/storage/group_commit.py): writes applied in one lock hold and one index
transaction are each what a write on its own would be, are durable only once the group is
committed, and a failure in the group loses nothing acknowledged."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.storage.group_commit import WriteBatch
from engine.storage.schema import tables
from engine.storage.store import MemoryEngine


def _rows(engine: MemoryEngine) -> set[str]:
    """Record ids committed to the index, seen from a connection of its own."""
    with Session(engine.db) as session:
        return {row.record_id for row in session.scalars(select(tables.FactRow))}


def _journal(engine: MemoryEngine) -> list[Path]:
    return sorted(engine.journal_folder.glob("mem-*.json"))


def test_a_group_commits_every_write_once_and_only_at_its_end(
    client, semantic_engine, probe
) -> None:
    client.engine = semantic_engine
    engine = client.engine
    before = engine.generation()
    with client.memory.write_batch():
        results = [client.add(f"Alice note {n} on the quiet project", "user:alice") for n in "ab"]
        # Inside the group nothing is committed yet: another connection sees no row.
        assert _rows(engine) == set()
        # Journalled where the files are canonical; the server mode journals nothing.
        assert len(_journal(engine)) == (2 if engine.store.keeps_fact_files else 0)
    ids = {r["record"]["recordId"] for r in results}
    assert _rows(engine) == ids
    assert _journal(engine) == []
    assert {path.stem for path in probe.files()} == ids
    assert engine.generation() == before + 1  # one bump for the group
    with Session(engine.db) as session:  # the vector went in the same transaction
        vectors = session.scalar(select(func.count()).select_from(tables.EmbeddingRow))
    assert vectors == 2
    assert len(client.recall("quiet project", ["user:alice"])["facts"]) == 2


def test_later_writes_of_a_group_see_the_earlier_ones(client) -> None:
    with client.memory.write_batch():
        first = client.add("Bob drinks black coffee", "user:bob")
        again = client.remember("Bob drinks black coffee", ["user:bob"])
        newer = client.supersede(first, "Bob drinks water")
    assert again["outcome"] == "existing"
    assert again["record"]["recordId"] == first["record"]["recordId"]
    assert newer["outcome"] == "superseded"
    with Session(client.engine.db) as session:
        row = session.get(tables.FactRow, first["record"]["recordId"])
        assert row is not None and row.superseded_by == newer["record"]["recordId"]


def test_a_lost_race_in_a_group_takes_back_only_its_own_write(client) -> None:
    with client.memory.write_batch():
        first = client.add("Carol lives in Paris", "user:carol")
        newer = client.supersede(first, "Carol moved to Lyon")
        with pytest.raises(MemoryFailure) as raised:
            client.supersede(first, "Carol moved to Berlin")
        after = client.add("Carol likes the savanna", "user:carol")
    assert raised.value.code == "MEMORY_SUPERSEDE_CONFLICT"
    assert _rows(client.engine) == {
        first["record"]["recordId"],
        newer["record"]["recordId"],
        after["record"]["recordId"],
    }
    texts = [p.read_text(encoding="utf-8") for p in client.engine.home.rglob("mem-*.md")]
    assert not any("Berlin" in text for text in texts)
    assert _journal(client.engine) == []


@pytest.mark.embedded_mode
def test_a_failed_row_in_a_group_is_settled_by_the_next_write(client, monkeypatch) -> None:
    real = MemoryEngine.index_new_fact

    def refuses_lyon(self: MemoryEngine, row: tables.FactRow, predecessor: Any) -> None:
        if "Lyon" in row.text:
            raise RuntimeError("disk I/O error")
        real(self, row, predecessor)

    monkeypatch.setattr(MemoryEngine, "index_new_fact", refuses_lyon)
    with client.memory.write_batch():
        kept = client.add("Alice lives in Paris", "user:alice")
        failed = client.remember("Alice moved to Lyon", ["user:alice"])
        later = client.add("Alice drinks green tea", "user:alice")
    assert failed["sync"]["status"] == "failed" and "disk I/O error" in failed["sync"]["error"]
    ids = {kept["record"]["recordId"], later["record"]["recordId"]}
    assert _rows(client.engine) == ids
    assert [p.stem for p in _journal(client.engine)] == [failed["record"]["recordId"]]

    monkeypatch.undo()
    client.add("Alice drinks water", "user:alice")  # its lock settles the journal first
    assert failed["record"]["recordId"] in _rows(client.engine)
    assert _journal(client.engine) == []


@pytest.mark.embedded_mode
def test_a_failed_group_commit_answers_failed_and_loses_nothing(client, monkeypatch) -> None:
    def commit_fails(self: WriteBatch, engine: MemoryEngine) -> None:
        self.session.rollback()
        self.session.commit = _raise  # type: ignore[method-assign]
        real_settle(self, engine)

    def _raise() -> None:
        raise RuntimeError("database disk image is full")

    real_settle = WriteBatch.settle
    monkeypatch.setattr(WriteBatch, "settle", commit_fails)
    with client.memory.write_batch():
        results = [
            client.remember(f"Bob note {n} on the deadline", ["user:bob"], decision="add")
            for n in ("one", "two")
        ]
    for result in results:
        assert result["outcome"] == "added"
        assert result["sync"]["status"] == "failed"
        assert "disk image is full" in result["sync"]["error"]
        assert Path(result["absPath"]).is_file()
    assert _rows(client.engine) == set()
    assert len(_journal(client.engine)) == 2

    monkeypatch.undo()
    client.add("Bob drinks water", "user:bob")  # settles both files first
    assert {r["record"]["recordId"] for r in results} <= _rows(client.engine)
    assert _journal(client.engine) == []


def test_other_threads_do_not_write_through_a_group(client) -> None:
    import threading

    seen: list[bool] = []
    with client.memory.write_batch():
        thread = threading.Thread(target=lambda: seen.append(client.engine.current_batch() is None))
        thread.start()
        thread.join()
        assert client.engine.current_batch() is not None
    assert seen == [True]
    assert client.engine.current_batch() is None
