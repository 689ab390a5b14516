"""Crash and corruption (docs/decisions.md, "Crash and corruption"): a write killed between its
fact file and its index row never forks a chain or a key; reindex never makes two heads of
one chain or key and reports forks and duplicate record ids; a missing, garbage or truncated
index is rebuilt from the files when the home opens; two homes on one index cannot both
create a key."""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect, text
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import content_hash, fact_uri, iso_utc
from engine.facade import factory
from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.keyed import service as keyed
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.embedded.factfiles import FactFile, parse_fact_file, write_atomically
from engine.storage.embedded.home_lock import HomeLock
from engine.storage.schema import tables
from engine.storage.store import MemoryEngine


class Killed(BaseException):
    """Stands for SIGKILL in-process: nothing after the raise runs, no handler catches it."""


def _killed(*_args: Any, **_kwargs: Any) -> None:
    raise Killed


class Ticks:
    """A clock shared by two homes: every reading is one millisecond later."""

    def __init__(self) -> None:
        self.moment = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        self.moment += timedelta(milliseconds=1)
        return self.moment


def lexical(home: Path, **options: Any) -> MemoryEngine:
    return open_engine(home=home, embedder_status=EmbedderStatus(None, "no model"), **options)


@pytest.fixture
def reopen(home: Path) -> Iterator[Callable[..., MemoryEngine]]:
    """Open the test's home again (another process, as far as the store can tell)."""
    opened: list[MemoryEngine] = []

    def open_again(**options: Any) -> MemoryEngine:
        store = lexical(home, **options)
        opened.append(store)
        return store

    yield open_again
    for store in opened:
        store.db.dispose()


def current_texts(engine: MemoryEngine, like: str) -> list[str]:
    with Session(engine.db) as session:
        rows = session.execute(
            text(
                "SELECT text FROM facts WHERE superseded_by IS NULL AND retired_at IS NULL "
                "AND text LIKE :like ORDER BY text"
            ),
            {"like": like},
        ).all()
    return [row[0] for row in rows]


def live_heads(engine: MemoryEngine, key: str) -> list[tuple[int, str]]:
    with Session(engine.db) as session:
        rows = session.execute(
            text(
                "SELECT kv_revision, text FROM facts WHERE kv_key = :key "
                "AND superseded_by IS NULL AND retired_at IS NULL ORDER BY kv_revision, text"
            ),
            {"key": key},
        ).all()
    return [(row[0], row[1]) for row in rows]


def craft_successor(
    engine: MemoryEngine,
    predecessor: dict[str, Any],
    text_: str,
    *,
    record_id: str,
    earlier_by: timedelta = timedelta(0),
    workbench: dict[str, Any] | None = None,
) -> dict[str, str]:
    """A successor's file written beside the store's own, as a synced copy of another home's
    write or an older gno-tui would leave it: no index row, no journal entry."""
    source = Path(predecessor["absPath"]) if "absPath" in predecessor else None
    record = predecessor.get("record", predecessor)
    created = engine.now() - earlier_by
    created_at = iso_utc(created)
    day = created_at[:10]
    fact = FactFile(
        record_id=record_id,
        scopes=list(record["scopes"]),
        caller="other:writer",
        session="other-session",
        created_at=created_at,
        content_hash=content_hash(text_),
        text=text_,
        supersedes=[record["uri"]],
        workbench={"docid": "#" + record_id[4:12], **(workbench or {})},
    )
    root = engine.collection_root("memory")
    path = root / "facts" / day / f"{record_id}.md"
    write_atomically(path, fact.render())
    assert source is None or source.is_file()
    return {"uri": fact_uri("memory", day, record_id), "path": str(path), "text": text_}


# -- 1. a crash between a fact file and its row ------------------------------------------------


@pytest.mark.embedded_mode
@pytest.mark.parametrize("second_writer", ["same engine", "reopened home"])
def test_a_write_killed_between_file_and_row_does_not_fork_the_chain(
    client, engine, probe, monkeypatch, reopen, second_writer
):
    old = client.add("Alice lives in Paris", "user:alice")
    # (A context of its own: undoing the fixture would also undo conftest's PostgreSQL patch.)
    with monkeypatch.context() as patch, pytest.raises(Killed):
        patch.setattr(MemoryEngine, "index_new_fact", _killed)
        client.supersede(old, "Alice lives in Lyon")
    assert probe.state() == (2, 1)  # the file is there, its row is not: the index lags

    if second_writer == "reopened home":
        client.engine = reopen()
        # Opening the home repaired the index: the unfinished write is indexed, so recall
        # already answers from it, before any write.
        assert [f["text"] for f in client.recall("alice lives", ["user:alice"])["facts"]] == [
            "Alice lives in Lyon"
        ]
        assert any("unfinished" in note for note in client.engine.notes)
    # A second writer that read the predecessor as current loses the compare-and-swap
    # instead of forking the chain.
    with pytest.raises(MemoryFailure) as caught:
        client.supersede(old, "Alice lives in Berlin")
    assert caught.value.code == "MEMORY_SUPERSEDE_CONFLICT"
    assert current_texts(client.engine, "Alice lives%") == ["Alice lives in Lyon"]
    assert "Alice lives in Berlin" not in probe.file_texts()

    report = client.memory.reindex()
    assert (report["added"], report["changed"], report["removed"]) == (0, 0, 0)
    assert (report["forks"], report["duplicates"]) == ([], [])
    assert [f["text"] for f in client.recall("alice lives", ["user:alice"])["facts"]] == [
        "Alice lives in Lyon"
    ]
    assert not list((client.engine.home / ".inflight").glob("*.json"))


@pytest.mark.embedded_mode
def test_a_killed_keyed_update_leaves_one_head_of_the_key(engine, monkeypatch):
    keyed.remember(engine, {"key": "city", "memory": {"content": "Alice lives in Paris"}})
    with monkeypatch.context() as patch, pytest.raises(Killed):
        patch.setattr(MemoryEngine, "index_new_fact", _killed)
        keyed.remember(
            engine, {"key": "city", "if_revision": 1, "memory": {"content": "Alice lives in Lyon"}}
        )
    with pytest.raises(MemoryFailure) as caught:
        keyed.remember(
            engine,
            {"key": "city", "if_revision": 1, "memory": {"content": "Alice lives in Berlin"}},
        )
    assert caught.value.code == "MEMORY_REVISION_CONFLICT"
    assert "revision 2" in caught.value.message
    assert live_heads(engine, "city") == [(2, "Alice lives in Lyon")]
    assert keyed.get(engine, "city")["memory"]["content"] == "Alice lives in Lyon"
    report = MemoryService(engine).reindex()
    assert (report["changed"], report["forks"]) == (0, [])
    assert live_heads(engine, "city") == [(2, "Alice lives in Lyon")]


@pytest.mark.embedded_mode
def test_a_failed_index_write_is_repaired_before_the_next_write(client, memory, monkeypatch):
    """Not a crash: the index refused the row and the writer heard `sync: failed`. The next
    write indexes it first, so it cannot start from the stale predecessor either."""
    old = client.add("Bob lives in Paris", "user:bob")

    def refused(*_args: Any, **_kwargs: Any) -> None:
        raise RuntimeError("disk full")

    with monkeypatch.context() as patch:
        patch.setattr(MemoryEngine, "index_new_fact", refused)
        first = client.supersede(old, "Bob lives in Lyon")
    assert (first["outcome"], first["sync"]["status"]) == ("superseded", "failed")
    with pytest.raises(MemoryFailure) as caught:
        client.supersede(old, "Bob lives in Berlin")
    assert caught.value.code == "MEMORY_SUPERSEDE_CONFLICT"
    assert [f["text"] for f in client.recall("bob lives", ["user:bob"])["facts"]] == [
        "Bob lives in Lyon"
    ]
    assert memory.reindex()["changed"] == 0


@pytest.mark.embedded_mode
def test_a_write_that_died_before_its_file_leaves_nothing_behind(client, engine, probe):
    """A journal entry whose file never appeared (killed before the rename) is dropped."""
    client.add("Carol likes tea", "user:carol")
    engine.begin_write("mem-00000000000000aa", "memory", "facts/2026-11-30/mem-00000000000000aa.md")
    assert list((engine.home / ".inflight").glob("*.json"))
    client.add("Carol likes chess", "user:carol")
    assert probe.state() == (2, 2)
    assert not list((engine.home / ".inflight").glob("*.json"))


@pytest.mark.embedded_mode
def test_an_unfinished_write_whose_predecessor_moved_on_is_left_out_and_reported(tmp_path):
    """Two homes on one index: home A is killed mid-write, home B (its own lock and journal)
    supersedes the same fact. A's next write cannot index its orphan without a fork: the
    orphan stays a file, out of the index, and reindex names the fork."""
    url = factory.sqlite_url(tmp_path / "a" / "index.sqlite")
    a = lexical(tmp_path / "a", db_url=url)
    b = lexical(tmp_path / "b", db_url=url)
    try:
        client_a, client_b = MemoryService(a), MemoryService(b)
        from engine.memory.remember import RememberRequest

        def remember(service: MemoryService, text_: str, **fields: Any) -> Mapping[str, Any]:
            return service.remember(
                RememberRequest(
                    text=text_,
                    scopes=["user:alice"],
                    caller="t",
                    session="t",
                    decision=fields.pop("decision", "add"),
                    **fields,
                )
            )

        old = remember(client_a, "Alice lives in Paris")["record"]
        supersede = {
            "decision": "supersede",
            "predecessor": old["uri"],
            "predecessor_hash": old["contentHash"],
        }
        real = a.index_new_fact
        a.index_new_fact = _killed  # type: ignore[method-assign]
        with pytest.raises(Killed):
            remember(client_a, "Alice lives in Lyon", **supersede)
        a.index_new_fact = real  # type: ignore[method-assign]
        won = remember(client_b, "Alice lives in Berlin", **supersede)
        assert won["outcome"] == "superseded"

        remember(client_a, "Alice likes tea")  # A's next write settles its journal first
        assert any("left out" in note for note in a.notes)
        assert current_texts(a, "Alice lives%") == ["Alice lives in Berlin"]
        report = client_a.reindex()
        assert report["changed"] == 0
        assert len(report["forks"]) == 1
        fork: Mapping[str, Any] = report["forks"][0]
        assert fork["predecessor"] == old["uri"]
        assert fork["kept"] == won["record"]["uri"]
        assert len(fork["notKept"]) == 1 and "Lyon" not in fork["kept"]
        assert current_texts(a, "Alice lives%") == ["Alice lives in Berlin"]
    finally:
        a.db.dispose()
        b.db.dispose()


# -- 1. reindex never makes two heads -----------------------------------------------------------


@pytest.mark.embedded_mode
def test_reindex_keeps_the_acknowledged_successor_of_a_forked_chain(client, memory, engine):
    old = client.add("Dan lives in Paris", "user:dan")
    acknowledged = client.supersede(old, "Dan lives in Berlin")
    # An older file superseding the same fact (a synced copy from elsewhere): "oldest
    # successor first" alone would pick it.
    other = craft_successor(
        engine, old, "Dan lives in Lyon", record_id="mem-00000000000000b1", earlier_by=timedelta(1)
    )
    for _ in range(2):  # the same answer every time: the fork stays until a person acts
        report = memory.reindex()
        assert (report["added"], report["changed"], report["removed"]) == (0, 0, 0)
        assert report["forks"] == [
            {
                "predecessor": old["record"]["uri"],
                "kept": acknowledged["record"]["uri"],
                "notKept": [other["uri"]],
                "reason": report["forks"][0]["reason"],
            }
        ]
        assert "committed" in report["forks"][0]["reason"]
        assert current_texts(engine, "Dan lives%") == ["Dan lives in Berlin"]
    assert Path(other["path"]).is_file()  # nothing is deleted


@pytest.mark.embedded_mode
def test_reindex_of_a_forked_key_keeps_one_live_head(engine):
    memory = MemoryService(engine)
    first = keyed.remember(engine, {"key": "k", "memory": {"content": "Alice lives in Paris"}})
    acked = keyed.remember(
        engine, {"key": "k", "if_revision": 1, "memory": {"content": "Alice lives in Berlin"}}
    )
    assert (first["revision"], acked["revision"]) == (1, 2)
    with Session(engine.db) as session:
        rev1 = session.execute(text("SELECT record_id FROM facts WHERE kv_revision = 1")).scalar()
        rev1_row = session.get(tables.FactRow, rev1)
        assert rev1_row is not None
        predecessor = {"uri": rev1_row.uri, "scopes": rev1_row.scopes}
        keyed_fields = dict(rev1_row.workbench["keyed"], revision=2)
    craft_successor(
        engine,
        predecessor,
        "Alice lives in Lyon",
        record_id="mem-00000000000000b2",
        earlier_by=timedelta(hours=1),
        workbench={"keyed": keyed_fields},
    )
    report = memory.reindex()
    assert len(report["forks"]) == 1 and report["changed"] == 0
    assert live_heads(engine, "k") == [(2, "Alice lives in Berlin")]
    assert keyed.get(engine, "k")["memory"]["content"] == "Alice lives in Berlin"
    assert [item["revision"] for item in keyed.history(engine, "k")["items"]] == [1, 2]


@pytest.mark.sqlite_only
def test_without_an_index_the_write_that_finished_wins_the_fork(client, engine, home, reopen):
    old = client.add("Eve lives in Paris", "user:eve")
    finished = client.supersede(old, "Eve lives in Berlin")
    # An unfinished write of another writer (journal entry and file, no row), older.
    orphan = craft_successor(
        engine, old, "Eve lives in Lyon", record_id="mem-00000000000000b3", earlier_by=timedelta(1)
    )
    rel = Path(orphan["path"]).relative_to(engine.collection_root("memory"))
    engine.begin_write("mem-00000000000000b3", "memory", str(rel))
    engine.db.dispose()
    for leftover in home.glob("index.sqlite*"):
        leftover.unlink()
    rebuilt = reopen()
    assert any("missing" in note for note in rebuilt.notes)
    assert current_texts(rebuilt, "Eve lives%") == ["Eve lives in Berlin"]
    # The rebuild at open chose by the journal; from then on the index says the same.
    report = MemoryService(rebuilt).reindex()
    assert [fork["kept"] for fork in report["forks"]] == [finished["record"]["uri"]]
    assert [fork["notKept"] for fork in report["forks"]] == [[orphan["uri"]]]
    assert "mem-00000000000000b3" in rebuilt.unfinished_writes()
    assert rebuilt.unfinished_writes()["mem-00000000000000b3"]["leftOut"]


# -- 2. folders and duplicate record ids -------------------------------------------------------


@pytest.mark.embedded_mode
def test_a_superseded_fact_moved_to_another_folder_stays_superseded(client, memory, engine):
    old = client.add("Fay lives in Paris", "user:fay")
    new = client.supersede(old, "Fay lives in Rome")
    moved = Path(old["absPath"]).parent.parent / "2001-01-01" / Path(old["absPath"]).name
    moved.parent.mkdir()
    shutil.move(old["absPath"], moved)
    report = memory.reindex()
    assert (report["added"], report["removed"], report["problems"]) == (0, 0, [])
    assert current_texts(engine, "Fay lives%") == ["Fay lives in Rome"]
    with Session(engine.db) as session:
        row = session.get(tables.FactRow, old["record"]["recordId"])
        assert row is not None and row.superseded_by == new["record"]["recordId"]
    assert memory.reindex()["changed"] == 0


@pytest.mark.embedded_mode
def test_one_record_id_in_two_files_is_reported_and_one_kept(client, memory, engine):
    fact = client.add("Gus likes chess", "user:gus")
    original = Path(fact["absPath"])
    copy = original.parent.parent / "2001-01-01" / original.name
    copy.parent.mkdir()
    copy.write_text(
        original.read_text(encoding="utf-8")
        .replace("Gus likes chess", "Gus likes go")
        .replace(fact["record"]["contentHash"], content_hash("Gus likes go")),
        encoding="utf-8",
    )
    parse_fact_file(copy.read_text(encoding="utf-8"))  # a valid fact file
    for _ in range(2):
        report = memory.reindex()
        assert report["duplicates"] == [
            {
                "recordId": fact["record"]["recordId"],
                "kept": str(original),
                "ignored": [str(copy)],
            }
        ]
        assert report["changed"] == 0
    assert [f["text"] for f in client.recall("gus likes", ["user:gus"])["facts"]] == [
        "Gus likes chess"
    ]


# -- 2. a missing or unreadable index ----------------------------------------------------------


@pytest.mark.sqlite_only
def test_an_index_deleted_under_the_home_is_rebuilt_when_it_opens(client, engine, home, reopen):
    tea = client.add("Hal drinks green tea", "user:hal")
    old = client.add("Hal lives in Paris", "user:hal")
    client.supersede(old, "Hal lives in Oslo")
    engine.db.dispose()
    for leftover in home.glob("index.sqlite*"):
        leftover.unlink()
    client.engine = reopen()
    assert any("missing" in note and "rebuilt" in note for note in client.engine.notes)
    found = client.recall("hal drinks tea lives", ["user:hal"])
    assert sorted(f["text"] for f in found["facts"]) == [
        "Hal drinks green tea",
        "Hal lives in Oslo",
    ]
    again = client.remember("Hal drinks green tea", ["user:hal"])
    assert again["outcome"] == "existing"
    assert again["record"]["recordId"] == tea["record"]["recordId"]
    report = client.memory.reindex()  # the rebuild at open is this process's reindex
    assert (report["added"], report["changed"]) == (3, 0)
    assert any("missing" in note for note in report["notes"])
    assert client.memory.reindex()["notes"] == []


@pytest.mark.sqlite_only
@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_an_unreadable_index_is_moved_aside_and_rebuilt(client, engine, home, reopen, damage):
    client.add("Ida likes tea", "user:ida")
    for i in range(300):  # enough pages that a cut leaves a header pointing past the end
        client.add(f"Ida note number {i} about nothing in particular", "user:ida")
    engine.db.dispose()
    for suffix in ("-wal", "-shm"):
        (home / f"index.sqlite{suffix}").unlink(missing_ok=True)
    index = home / "index.sqlite"
    data = index.read_bytes()
    bad = (
        b"this is not a database at all\n" * 200 if damage == "garbage" else data[: len(data) // 3]
    )
    index.write_bytes(bad)
    client.engine = reopen()
    aside = sorted(home.glob("index.sqlite.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == bad
    assert any("corrupt" in note and aside[0].name in note for note in client.engine.notes)
    assert [f["text"] for f in client.recall("tea", ["user:ida"])["facts"]] == ["Ida likes tea"]
    assert client.memory.reindex()["indexed"] == 301


@pytest.mark.sqlite_only
def test_reindex_rebuilds_an_index_that_fails_its_integrity_check(client, memory, engine, home):
    client.add("Jon likes tea", "user:jon")
    receipt = client.recall("tea", ["user:jon"])["receipt"]
    engine.db.dispose()
    import sqlite3

    with sqlite3.connect(home / "index.sqlite") as db:  # damage only a secondary index
        db.execute("PRAGMA writable_schema=ON")
        root = db.execute(
            "SELECT rootpage FROM sqlite_master WHERE name = 'ix_facts_content_hash'"
        ).fetchone()[0]
        page_size = db.execute("PRAGMA page_size").fetchone()[0]
    with (home / "index.sqlite").open("r+b") as raw:
        raw.seek((root - 1) * page_size)
        raw.write(b"\xff" * page_size)
    report = memory.reindex()
    assert any("corrupt" in note for note in report["notes"])
    assert report["indexed"] == 1
    assert sorted(home.glob("index.sqlite.corrupt-*"))
    # What only the index held was salvaged from the damaged file where it could be read.
    with Session(engine.db) as session:
        assert session.get(tables.ReceiptRow, receipt["digest"]) is not None
    assert [f["text"] for f in client.recall("tea", ["user:jon"])["facts"]] == ["Jon likes tea"]


# -- 3. two homes on one index ------------------------------------------------------------------


def own_lock(store: MemoryEngine) -> MemoryEngine:
    """The store with a write lock of its own in its home, as a gno-tui before the lock moved
    beside the SQLite index took: homes given one index file then shared no lock, and only
    the index's compare-and-swap and unique constraints kept their writes apart. Today's
    homes on one file share one lock; these tests keep that second line of defence tested."""
    store._lock = HomeLock(store.home / ".write.lock")
    return store


@pytest.fixture
def two_homes(tmp_path: Path) -> Iterator[tuple[MemoryEngine, MemoryEngine]]:
    """Two homes (two write locks) on one index database."""
    url = factory.sqlite_url(tmp_path / "one" / "index.sqlite")
    first = lexical(tmp_path / "one", db_url=url)
    second = own_lock(lexical(tmp_path / "two", db_url=url))
    yield first, second
    first.db.dispose()
    second.db.dispose()


@pytest.mark.embedded_mode
def test_two_homes_cannot_both_create_one_key(two_homes):
    first, second = two_homes
    real = first.index_new_fact

    def overtaken(row: Any, predecessor: Any) -> None:
        # Past first's key check, second creates the key (its own lock: nothing stops it).
        keyed.remember(second, {"key": "k", "memory": {"content": "from the second home"}})
        real(row, predecessor)

    first.index_new_fact = overtaken
    with pytest.raises(MemoryFailure) as caught:
        keyed.remember(first, {"key": "k", "memory": {"content": "from the first home"}})
    assert caught.value.code == "MEMORY_KEY_EXISTS"
    assert caught.value.exit_code == 4
    assert live_heads(first, "k") == [(1, "from the second home")]
    files = [p.read_text(encoding="utf-8") for p in first.home.glob("**/mem-*.md")]
    files += [p.read_text(encoding="utf-8") for p in second.home.glob("**/mem-*.md")]
    assert not any("from the first home" in body for body in files)  # the loser's file went


def test_concurrent_creates_from_two_homes_leave_one_head_per_key(two_homes):
    keys = [f"key-{i}" for i in range(20)]
    outcomes: dict[str, list[str]] = {key: [] for key in keys}
    go = threading.Barrier(2)

    def writer(store: MemoryEngine, name: str) -> None:
        go.wait()
        for key in keys:
            try:
                keyed.remember(store, {"key": key, "memory": {"content": f"{key} by {name}"}})
                outcomes[key].append("ok")
            except MemoryFailure as failure:
                outcomes[key].append(failure.code)

    threads = [
        threading.Thread(target=writer, args=(s, n)) for s, n in zip(two_homes, "ab", strict=True)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    first = two_homes[0]
    for key in keys:
        assert len(live_heads(first, key)) == 1, key
        assert outcomes[key].count("ok") >= 1
        assert set(outcomes[key]) <= {"ok", "MEMORY_KEY_EXISTS", "MEMORY_WRITE_LEASE_BUSY"}


@pytest.mark.embedded_mode
def test_an_index_with_two_heads_of_a_key_is_repaired_when_it_opens(tmp_path):
    url = factory.sqlite_url(tmp_path / "one" / "index.sqlite")
    ticks = Ticks()
    first = lexical(tmp_path / "one", db_url=url, clock=ticks)
    second = own_lock(lexical(tmp_path / "two", db_url=url, clock=ticks))
    try:
        # The index of an older gno-tui: the key's index is not unique (and, older than
        # schema migrations, it has no alembic_version).
        with first.db.begin() as connection:
            connection.execute(text("DROP TABLE alembic_version"))
            connection.execute(text("DROP INDEX ix_facts_kv_key"))
            connection.execute(
                text("CREATE INDEX ix_facts_kv_key ON facts (kv_namespace, kv_key, kv_revision)")
            )
        real = first.index_new_fact

        def overtaken(row: Any, predecessor: Any) -> None:
            keyed.remember(second, {"key": "k", "memory": {"content": "second"}})
            real(row, predecessor)

        first.index_new_fact = overtaken  # type: ignore[method-assign]
        keyed.remember(first, {"key": "k", "memory": {"content": "first"}})
        assert len(live_heads(first, "k")) == 2  # what the race did before
    finally:
        first.db.dispose()
        second.db.dispose()
    repaired = lexical(tmp_path / "one", db_url=url, clock=ticks)
    try:
        # The earlier write (createdAt) stays; the other row leaves the index, its file stays.
        assert live_heads(repaired, "k") == [(1, "first")]
        assert any("two live heads" in note for note in repaired.notes)
        indexes = {ix["name"]: ix for ix in inspect(repaired.db).get_indexes("facts")}
        assert indexes["ix_facts_kv_key"]["unique"]
        with pytest.raises(MemoryFailure) as caught:
            keyed.remember(repaired, {"key": "k", "memory": {"content": "third"}})
        assert caught.value.code == "MEMORY_KEY_EXISTS"
        report = MemoryService(repaired).reindex()
        assert live_heads(repaired, "k") == [(1, "first")]
        assert [fork.get("key") for fork in report["forks"]] == ["default/k"]
    finally:
        repaired.db.dispose()


@pytest.mark.embedded_mode
def test_journal_entries_are_plain_json(engine):
    engine.begin_write("mem-00000000000000cc", "memory", "facts/2026-11-30/mem-00000000000000cc.md")
    entry = engine.home / ".inflight" / "mem-00000000000000cc.json"
    assert json.loads(entry.read_text(encoding="utf-8"))["collection"] == "memory"
    engine.end_write("mem-00000000000000cc")
    assert not entry.exists()
