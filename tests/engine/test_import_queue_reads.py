"""An import that queues likely duplicates batch after batch reads the review queue once.

No index holds a proposal's text, so each read of the waiting proposals scans the queue: read
once per batch, it cost 0.13 s a batch with 85k proposals waiting, a quarter of an import into
a store of 300k facts. The import holds the write lock throughout, so what it read stays true
but for what it queues itself."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from engine.facade.factory import open_engine
from engine.interop import import_run, transfer
from engine.retrieval.embeddings import EmbedderStatus, StaticModelEmbedder


def near_copies(path: Path, count: int, first: int) -> Path:
    """`count` lines that each nearly repeat the first fact of the store."""
    with path.open("w", encoding="utf-8") as out:
        for n in range(first, first + count):
            line = {"text": f"alice likes green tea in paris note {n}", "scopes": ["user:alice"]}
            out.write(json.dumps(line) + "\n")
    return path


def test_the_waiting_proposals_are_read_once_per_import(
    tmp_path: Path, tiny_embedder: StaticModelEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(import_run, "IMPORT_BATCH", 16)  # many batches from a short file
    engine = open_engine(home=tmp_path / "home", embedder_status=EmbedderStatus(tiny_embedder))
    transfer.run_import(engine, near_copies(tmp_path / "first.jsonl", 40, 0), caller="import")
    before = waiting_count(engine)
    reads: list[str] = []

    def record(conn: Any, cursor: Any, sql: str, params: Any, context: Any, many: bool) -> None:
        if sql.lstrip().upper().startswith("SELECT") and "FROM proposals" in sql:
            reads.append(sql)

    event.listen(engine.db, "before_cursor_execute", record)
    try:
        second = transfer.run_import(
            engine, near_copies(tmp_path / "second.jsonl", 80, 40), caller="import"
        )
    finally:
        event.remove(engine.db, "before_cursor_execute", record)
    queued = second.count("propose")
    assert queued > 16  # proposals in several batches
    assert len(reads) == 1, reads
    # A write already waiting is not queued again, within the import or by the next one.
    assert waiting_count(engine) == before + queued
    transfer.run_import(engine, near_copies(tmp_path / "third.jsonl", 80, 40), caller="import")
    assert waiting_count(engine) == before + queued
    engine.db.dispose()


def waiting_count(engine: Any) -> int:
    with engine.db.connect() as connection:
        found = connection.exec_driver_sql(
            "SELECT count(*) FROM proposals WHERE state = 'pending'"
        ).scalar()
    return int(found or 0)
