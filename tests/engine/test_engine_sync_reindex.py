"""Files are canonical: an index write that fails leaves the file and says so; reindex repairs
the index, and rebuilds it from nothing."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.schema import tables
from engine.storage.store import MemoryEngine


def successor_of(session: Session, record_id: str) -> str | None:
    """The superseded_by of a fact that must be in the index."""
    row = session.get(tables.FactRow, record_id)
    assert row is not None, f"{record_id} is not in the index"
    return row.superseded_by


def _broken_index(*_args, **_kwargs):
    raise OperationalError("INSERT INTO facts ...", {}, Exception("database disk image is full"))


@pytest.mark.embedded_mode
def test_failed_index_write_keeps_the_file_and_reindex_repairs_it(
    client, memory, probe, monkeypatch
):
    kept = client.add("Alice drinks green tea", "user:alice")
    monkeypatch.setattr(MemoryEngine, "index_new_fact", _broken_index)
    result = client.remember("Alice moved to Lyon", ["user:alice"])
    assert result["outcome"] == "added"
    assert result["sync"]["status"] == "failed"
    assert "disk image is full" in result["sync"]["error"]
    assert "reindex" in result["sync"]["error"]
    path = Path(result["absPath"])
    assert path.is_file() and "Alice moved to Lyon" in path.read_text(encoding="utf-8")
    assert probe.state() == (2, 1)
    assert client.recall("lyon", ["user:alice"])["facts"] == []

    monkeypatch.undo()
    report = memory.reindex()
    assert (report["added"], report["changed"], report["removed"]) == (1, 0, 0)
    assert report["problems"] == []
    found = client.recall("lyon", ["user:alice"])
    assert [f["recordId"] for f in found["facts"]] == [result["record"]["recordId"]]
    assert found["facts"][0]["docid"] == result["record"]["docid"]
    assert probe.state() == (2, 2)
    assert memory.reindex()["added"] == 0
    assert kept["record"]["recordId"] in {r for r, _ in probe.rows()}


@pytest.mark.embedded_mode
def test_failed_supersede_sync_is_repaired_by_reindex(client, memory, monkeypatch):
    old = client.add("Bob lives in Paris", "user:bob")
    monkeypatch.setattr(MemoryEngine, "index_new_fact", _broken_index)
    new = client.supersede(old, "Bob lives in Berlin")
    assert (new["outcome"], new["sync"]["status"]) == ("superseded", "failed")
    monkeypatch.undo()
    # The index does not know the successor yet: the predecessor is still current.
    assert [f["text"] for f in client.recall("bob lives", ["user:bob"])["facts"]] == [
        "Bob lives in Paris"
    ]
    memory.reindex()
    assert [f["text"] for f in client.recall("bob lives", ["user:bob"])["facts"]] == [
        "Bob lives in Berlin"
    ]


@pytest.mark.sqlite_only
def test_reindex_rebuilds_everything_from_the_files(client, engine, memory, home, probe):
    engine.add_collection("shared", policy="lan")
    a = client.add("Carol lives in Paris", "user:carol")
    b = client.supersede(a, "Carol lives in Lyon")
    c = client.supersede(b, "Carol lives in Berlin")
    tea = client.add("Alice drinks green tea", "user:alice", source="chat")
    lan = client.add("Lunch is at noon on friday", "team", collection="shared")
    healthy = memory.reindex()  # the write path and the files agree: nothing to do
    assert (healthy["added"], healthy["changed"], healthy["removed"]) == (0, 0, 0)
    assert (healthy["files"], healthy["problems"]) == (5, [])

    engine.db.dispose()
    for leftover in home.glob("index.sqlite*"):
        leftover.unlink()
    rebuilt = open_engine(home=home, embedder_status=EmbedderStatus(None, "no model"))
    try:
        assert rebuilt.collections_by_name()["shared"].policy == "lan"
        report = MemoryService(rebuilt).reindex()
        assert (report["files"], report["indexed"], report["added"]) == (5, 5, 5)
        assert (report["changed"], report["removed"], report["problems"]) == (0, 0, [])
        assert probe.state() == (5, 5)

        client.engine = rebuilt
        carol = client.recall("where does carol live", ["user:carol"])
        assert [f["recordId"] for f in carol["facts"]] == [c["record"]["recordId"]]
        assert carol["facts"][0]["supersedes"] == [b["record"]["uri"]]
        alice = client.recall("green tea", ["user:alice"])
        assert alice["facts"][0]["source"] == "chat"
        assert alice["facts"][0]["docid"] == tea["record"]["docid"]
        team = client.recall("lunch", ["team"], egress="lan")
        assert [f["recordId"] for f in team["facts"]] == [lan["record"]["recordId"]]
        with Session(rebuilt.db) as session:
            assert successor_of(session, a["record"]["recordId"]) == b["record"]["recordId"]
            assert successor_of(session, b["record"]["recordId"]) == c["record"]["recordId"]
            assert successor_of(session, c["record"]["recordId"]) is None
        # The chain's compare-and-swap works on the rebuilt index.
        with pytest.raises(MemoryFailure) as caught:
            client.supersede(b, "Carol lives in Rome")
        assert caught.value.code == "MEMORY_SUPERSEDE_CONFLICT"
    finally:
        rebuilt.db.dispose()


@pytest.mark.embedded_mode
def test_reindex_drops_rows_whose_file_is_gone_and_skips_broken_files(client, memory, probe):
    gone = client.add("Bob lives in Paris", "user:bob")
    client.add("Bob likes coffee", "user:bob")
    Path(gone["absPath"]).unlink()
    broken = Path(gone["absPath"]).with_name("mem-00000000000000ff.md")
    broken.write_text("no front matter here\n", encoding="utf-8")
    report = memory.reindex()
    assert (report["added"], report["changed"], report["removed"]) == (0, 0, 1)
    assert len(report["problems"]) == 1 and "front matter" in report["problems"][0]
    assert [f["text"] for f in client.recall("bob", ["user:bob"])["facts"]] == ["Bob likes coffee"]
