"""A recall while another process holds the SQLite index's write lock answers at once, and its
receipt counts as stored: it waits in `<home>/.receipts-pending/` (engine/storage/
receipt_spool.py) until the index is free, and meanwhile fences, verifies, and is listed,
counted and purged like any stored receipt. Both read paths: the ORM's (MemoryEngine) and
the cold CLI's sqlite3 store.

The other process is a sqlite3 connection of this test holding a write transaction (BEGIN
IMMEDIATE), as a writer stopped inside its transaction holds it."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from engine.contract.errors import MemoryFailure
from engine.facade import RecallRequest
from engine.facade.service import open_recall_service
from engine.retrieval.embeddings import EmbedderStatus

pytestmark = pytest.mark.sqlite_only  # SQLite's one writer; PostgreSQL locks rows

TEA = "Alice drinks green tea"


@contextmanager
def database_held(home: Path) -> Iterator[None]:
    connection = sqlite3.connect(home / "index.sqlite", isolation_level=None)
    connection.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        connection.execute("ROLLBACK")
        connection.close()


def waiting(home: Path) -> list[str]:
    return sorted(path.stem for path in (home / ".receipts-pending").glob("*.json"))


def stored(home: Path) -> list[str]:
    with sqlite3.connect(home / "index.sqlite") as connection:
        return sorted(row[0] for row in connection.execute("SELECT digest FROM receipts"))


def test_a_receipt_that_waits_counts_as_stored_everywhere(client: Any, home: Path) -> None:
    memory = client.memory
    added = client.add(TEA)
    record_id = added["record"]["recordId"]
    with database_held(home):
        receipt = client.recall("tea")["receipt"]
        assert waiting(home) == [receipt["digest"]]
        with pytest.raises(MemoryFailure) as fenced:
            client.remember(TEA, receipt=receipt)
        assert fenced.value.code == "MEMORY_FENCED_REPLAY"
        assert memory.receipts.verify(receipt).stored
        assert [r["digest"] for r in memory.receipts.recent()] == [receipt["digest"]]
        assert memory.receipts.usage(record_id) == (1, receipt["caller"])
        assert memory.receipts.exposure(TEA).receipts == 1
        later = client.engine.now() + timedelta(days=1)
        assert memory.receipts.issued_before(later) == 1
        assert stored(home) == []
    # The index is free: the next look moves the receipt into it.
    assert [r["digest"] for r in memory.receipts.recent()] == [receipt["digest"]]
    assert waiting(home) == [] and stored(home) == [receipt["digest"]]


def test_a_waiting_receipt_is_purged_and_labelled_like_a_stored_one(
    client: Any, home: Path
) -> None:
    memory = client.memory
    client.add(TEA)
    with database_held(home):
        purged = client.recall("tea")["receipt"]
    assert waiting(home) == [purged["digest"]]
    later = client.engine.now() + timedelta(days=1)
    assert memory.receipts.purge(before=later, actor="me") == 1
    assert waiting(home) == [] and stored(home) == []
    assert memory.receipts.recent() == []
    with database_held(home):
        labelled = client.recall("green")["receipt"]
    assert waiting(home) == [labelled["digest"]]
    ref = labelled["memoryIds"][0]
    memory.curation.label(digest=labelled["digest"], ref=ref, label="relevant", actor="me")
    assert memory.curation.labels_of(digest=labelled["digest"], actor="me") == {ref: "relevant"}


def test_the_cold_read_path_lets_its_receipt_wait_too(client: Any, home: Path) -> None:
    client.add(TEA)
    client.engine.db.dispose()
    service = open_recall_service(home=home, embedder_status=EmbedderStatus(None, "no model"))
    try:
        assert type(service._store).__name__ == "SqliteRecallStore"  # the sqlite3 path
        request = RecallRequest(query="tea", scopes=["s"], caller="cli:me", session="s1")
        with database_held(home):
            result = service.recall(request)
            assert [fact["text"] for fact in result["facts"]] == [TEA]
            assert waiting(home) == [result["receipt"]["digest"]]
            with pytest.raises(MemoryFailure) as fenced:
                client.remember(TEA, receipt=result["receipt"])
            assert fenced.value.code == "MEMORY_FENCED_REPLAY"
        again = service.recall(request)  # free again: this receipt and the waiting one
    finally:
        service.close()
    assert waiting(home) == []
    assert stored(home) == sorted({result["receipt"]["digest"], again["receipt"]["digest"]})


def test_receipts_wait_up_to_their_bound_then_recalls_are_refused(
    client: Any, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that keeps the lock for GNO_TUI_RECEIPTS_WAITING recalls is stopped or stuck:
    the folder stops there and the next recall says so, on both read paths; once the index
    is free every waiting receipt goes into it and recalls answer again."""
    monkeypatch.setenv("GNO_TUI_RECEIPTS_WAITING", "3")
    client.add(TEA)
    cold = open_recall_service(home=home, embedder_status=EmbedderStatus(None, "no model"))
    try:
        with database_held(home):
            kept = [client.recall(f"tea {n}")["receipt"]["digest"] for n in range(2)]
            request = RecallRequest(query="tea 2", scopes=["s"], caller="cli:me", session="s1")
            kept.append(cold.recall(request)["receipt"]["digest"])
            assert waiting(home) == sorted(kept)
            for recall in (lambda: client.recall("tea 3"), lambda: cold.recall(request)):
                with pytest.raises(MemoryFailure) as refused:
                    recall()
                assert refused.value.code == "MEMORY_WRITE_LEASE_BUSY"
                assert "GNO_TUI_RECEIPTS_WAITING" in refused.value.message
            assert waiting(home) == sorted(kept)
        after = client.recall("tea 4")["receipt"]["digest"]
    finally:
        cold.close()
    assert waiting(home) == []
    assert stored(home) == sorted([*kept, after])
