"""A group commit's fact files (engine/storage/group_commit.py): staged under their temp names
while the group runs, put in place just before the commit, and durable before any write of
the group is answered; the disk's flush is awaited after the write lock is let go, so the
home's next writer does not wait for it. Files that cannot be put in place fail the group and
store nothing; a file the disk does not confirm answers `sync: failed`."""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session
from sqlmodel import col

from engine.contract.errors import MemoryFailure
from engine.storage.embedded.factfiles import TEMP_PREFIX
from engine.storage.schema import tables
from engine.storage.store import MemoryEngine

if TYPE_CHECKING:
    from conftest import Client

# The embedded mode's own machinery (fact files staged in a group, the home's file lock);
# the server mode has neither: tests/pg/test_server_mode.py tests its advisory lock.
pytestmark = pytest.mark.embedded_mode


def _rows(client: Client) -> set[str]:
    with Session(client.engine.db) as session:
        return set(session.scalars(select(col(tables.FactRow.record_id))))


def _fact_files(client: Client) -> list[Path]:
    return sorted(client.engine.home.rglob("facts/*/mem-*.md"))


def _temp_files(client: Client) -> list[Path]:
    return sorted(client.engine.home.rglob(f"facts/*/{TEMP_PREFIX}*"))


def _journal(client: Client) -> list[str]:
    return sorted(path.stem for path in client.engine.journal_folder.glob("mem-*.json"))


def test_files_go_in_place_when_the_group_commits_and_are_synced_before_its_answers(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    synced: list[str] = []  # the files whose fsync ended
    real_fsync = os.fsync

    def fsync(descriptor: int) -> None:
        real_fsync(descriptor)
        synced.append(str(Path(f"/proc/self/fd/{descriptor}").readlink()))

    monkeypatch.setattr(os, "fsync", fsync)
    with client.memory.write_batch():
        results = [client.add(f"Alice note {n} on the quiet project", "user:alice") for n in "ab"]
        # Written under temp names, not in place: a reader of facts/ sees nothing of them.
        assert _fact_files(client) == []
        assert len(_temp_files(client)) == 2
    paths = [Path(result["absPath"]) for result in results]
    assert _fact_files(client) == sorted(paths)
    assert _temp_files(client) == []
    # Both files were flushed by the time the group's writes could be answered.
    assert len(synced) == 2
    assert all(result["sync"] == {"status": "completed"} for result in results)
    assert _rows(client) == {result["record"]["recordId"] for result in results}
    assert _journal(client) == []


def test_another_writer_goes_on_while_a_group_waits_for_the_disk(
    client: Client, home: Path, client_over: Callable[[MemoryEngine], Client]
) -> None:
    """The group's fsyncs are held until another engine on the home (another process, as far
    as the write lock goes) has written: that write can only happen if the group let the
    lock go before waiting for its disk."""
    from engine.facade.factory import open_engine
    from engine.retrieval.embeddings import EmbedderStatus

    other = client_over(open_engine(home=home, embedder_status=EmbedderStatus(None, "lexical")))
    flushing, other_wrote = threading.Event(), threading.Event()
    real_fsync = os.fsync

    def held_fsync(descriptor: int) -> None:
        if threading.current_thread().name.startswith("gno-fsync"):
            flushing.set()
            assert other_wrote.wait(60), "the other writer never got the lock"
        real_fsync(descriptor)

    group: dict[str, Any] = {}

    def run_group() -> None:
        with client.memory.write_batch():
            group["result"] = client.add("Fay keeps the key to the shed", "user:fay")

    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(os, "fsync", held_fsync)
            writer = threading.Thread(target=run_group)
            writer.start()
            assert flushing.wait(60)
            try:
                meanwhile = other.add("Gus waters the plants on Fridays", "user:gus")
            finally:
                other_wrote.set()
            writer.join(60)
        assert not writer.is_alive()
        assert group["result"]["sync"] == {"status": "completed"}
        assert Path(group["result"]["absPath"]).is_file() and Path(meanwhile["absPath"]).is_file()
        assert _rows(client) == {
            group["result"]["record"]["recordId"],
            meanwhile["record"]["recordId"],
        }
    finally:
        other.engine.db.dispose()


def test_a_lost_race_in_a_group_leaves_no_file_of_its_own(client: Client) -> None:
    with client.memory.write_batch():
        first = client.add("Carol lives in Paris", "user:carol")
        client.supersede(first, "Carol moved to Lyon")
        with pytest.raises(MemoryFailure) as lost:
            client.supersede(first, "Carol moved to Berlin")
    assert lost.value.code == "MEMORY_SUPERSEDE_CONFLICT"
    texts = [path.read_text(encoding="utf-8") for path in _fact_files(client)]
    assert len(texts) == 2 and not any("Berlin" in text for text in texts)
    assert _temp_files(client) == []
    assert _journal(client) == []


def test_files_that_cannot_be_put_in_place_fail_the_group_and_store_nothing(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = client.add("Bob drinks water", "user:bob")
    real_replace = Path.replace

    def replace_fails(self: Path, target: Any) -> Path:
        if self.name.startswith(TEMP_PREFIX):
            raise OSError(errno.EIO, "Input/output error")
        return real_replace(self, target)

    monkeypatch.setattr(Path, "replace", replace_fails)
    answered: list[dict[str, Any]] = []
    with pytest.raises(MemoryFailure) as failed, client.memory.write_batch():
        answered += [client.add(f"Bob note {n} on the deadline", "user:bob") for n in "ab"]
    assert failed.value.code == "MEMORY_SYNC_FAILED"
    assert "Input/output error" in failed.value.message
    # Nothing of the group: no row, no file, no temp file, no journal entry.
    assert _rows(client) == {kept["record"]["recordId"]}
    assert _fact_files(client) == [Path(kept["absPath"])]
    assert _temp_files(client) == []
    assert _journal(client) == []
    assert all(not Path(result["absPath"]).exists() for result in answered)

    monkeypatch.undo()
    again = client.add("Bob note a on the deadline", "user:bob")  # nothing stood in its way
    assert Path(again["absPath"]).is_file()


def test_a_file_the_disk_does_not_confirm_answers_sync_failed(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    real_fsync = os.fsync

    def fails_for_one(descriptor: int) -> None:
        if b"Hana" in os.pread(descriptor, 1 << 16, 0):  # the file may be renamed meanwhile
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", fails_for_one)
    with client.memory.write_batch():
        ok = client.add("Ivo feeds the cat", "user:ivo")
        unsure = client.remember("Hana moved to Kyoto", ["user:hana"])
    assert ok["sync"] == {"status": "completed"}
    assert unsure["outcome"] == "added" and unsure["sync"]["status"] == "failed"
    assert "Input/output error" in unsure["sync"]["error"]
    assert "power loss" in unsure["sync"]["error"]
    # Stored all the same, row and file: what the disk holds is the disk's to say.
    assert _rows(client) == {ok["record"]["recordId"], unsure["record"]["recordId"]}
    assert Path(unsure["absPath"]).is_file()
    assert _journal(client) == []


def test_a_group_that_fails_midway_puts_no_file_in_place(client: Client) -> None:
    with pytest.raises(RuntimeError, match="the caller gave up"), client.memory.write_batch():
        client.add("Dave lives in Berlin", "user:dave")
        raise RuntimeError("the caller gave up")
    assert _fact_files(client) == [] and _temp_files(client) == []
    assert _rows(client) == set() and _journal(client) == []


def test_a_process_killed_inside_a_group_leaves_nothing_after_the_next_open(
    client: Client, home: Path, client_over: Callable[[MemoryEngine], Client]
) -> None:
    """Killed after staging (simulated: the group is never ended): the journal entries and
    temp files stay. Opening the home again clears the temp files, and the next write settles
    the entries whose file never came; nothing was acknowledged, nothing is stored."""
    group = client.memory.write_batch()
    group.__enter__()
    client.add("Erin likes the savanna", "user:erin")
    assert len(_temp_files(client)) == 1 and len(_journal(client)) == 1
    # What the kill leaves the next process: this one's transaction, lock and connections go.
    batch = client.engine.current_batch()
    assert batch is not None
    batch.session.close()
    client.engine.bind_batch(None)
    client.engine._lock.release()
    client.engine.db.dispose()

    from engine.facade.factory import open_engine
    from engine.retrieval.embeddings import EmbedderStatus

    reopened = client_over(open_engine(home=home, embedder_status=EmbedderStatus(None, "lexical")))
    try:
        assert _temp_files(reopened) == []
        reopened.add("Erin drinks tea", "user:erin")  # its lock settles the journal first
        assert _journal(reopened) == []
        texts = [path.read_text(encoding="utf-8") for path in _fact_files(reopened)]
        assert len(texts) == 1 and "Erin drinks tea" in texts[0]
    finally:
        reopened.engine.db.dispose()
