"""What grows with use stays within its bound (engine/storage/compaction.py): the change log,
receipts with their labels, old curation history, idempotency records, SQLite's log file and
the kept index files; and a reader that falls behind the pruned change log rebuilds once and
then answers what a fresh process answers, never missing a change.

Compaction runs on a thread of the writing process; a test waits for it
(`engine.compaction.wait()`), never for time."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from sqlalchemy import event, func, select, text
from sqlalchemy.orm import Session

from engine.access import tokens, write_requests
from engine.contract.errors import MemoryFailure
from engine.curation.labels import label_recall_item
from engine.curation.review import Decision, decide, decision_log
from engine.facade.factory import open_engine, open_recall_store
from engine.facade.service import RecallService
from engine.memory.recall import RecallRequest
from engine.retrieval import persisted
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.compaction import CHECK_EVERY, Retention, compact, slack
from engine.storage.embedded import wal_checkpoint
from engine.storage.embedded.sqlite_reader import SqliteReads
from engine.storage.proposals import list_proposals
from engine.storage.schema import tables
from engine.storage.schema.database import changes_since, pruned_through
from engine.storage.store import MemoryEngine

PERSON = "tui:alice"


def count(engine: MemoryEngine, row: type[Any]) -> int:
    with Session(engine.db) as session:
        return int(session.scalar(select(func.count()).select_from(row)) or 0)


def newest_change(engine: MemoryEngine) -> int:
    with Session(engine.db) as session:
        return int(session.scalar(select(func.max(tables.FactChangeRow.seq))) or 0)


if TYPE_CHECKING:
    from collections.abc import Callable

    from conftest import Client

NO_MODEL_REASON = "no model in this test (lexical mode)"
# A Client over a store the test opened, from the `client_over` fixture: at run time
# `conftest` is whichever conftest.py pytest imported last (tests/http has its own).
as_client: Callable[[MemoryEngine], Client]


@pytest.fixture(autouse=True)
def _client_maker(client_over: Callable[[MemoryEngine], Client]) -> None:
    global as_client
    as_client = client_over


@pytest.fixture
def second_engine(home: Path) -> Iterator[list[MemoryEngine]]:
    """Engines opened on the same store as the `engine` fixture: other processes."""
    opened: list[MemoryEngine] = []
    yield opened
    for other in opened:
        other.compaction.wait()
        other.db.dispose()


def another_process(home: Path, opened: list[MemoryEngine]) -> Client:
    other = open_engine(home=home, embedder_status=EmbedderStatus(None, NO_MODEL_REASON))
    opened.append(other)
    return as_client(other)


# -- the change log ----------------------------------------------------------------------------


def test_a_long_run_keeps_the_change_log_within_its_bound(client, engine, home, monkeypatch):
    kept = 100
    monkeypatch.setenv("GNO_TUI_CHANGES_KEPT", str(kept))
    # A supersede logs two changes; a process checks after every CHECK_EVERY writes.
    most = kept + slack(kept) + 2 * CHECK_EVERY
    peak, last = 0, None
    for n in range(1000):
        if last is not None and n % 3 == 2:
            last = client.supersede(last, f"zebra stripes count {n}")
            assert last["outcome"] == "superseded"
        else:
            last = client.add(f"quiet note number {n}")
        engine.compaction.wait()
        peak = max(peak, count(engine, tables.FactChangeRow))
    assert peak <= most, f"the change log reached {peak} rows, its bound is {most}"
    assert count(engine, tables.FactChangeRow) <= most
    # Nothing of the person's data went: every fact and every superseded version is there.
    assert count(engine, tables.FactRow) == 1000
    recalled = client.recall("zebra stripes count 998", max_facts=1)["facts"]
    assert [fact["text"] for fact in recalled] == ["zebra stripes count 998"]
    if engine.store.keeps_fact_files:  # no journal entry left behind by the run
        assert list((home / ".inflight").glob("*")) == []


def test_a_store_written_by_one_call_at_a_time_keeps_its_bound(engine, home, monkeypatch):
    """A CLI call writes once and ends: its first write looks at the log, so a store that
    only such calls write is compacted too."""
    kept = 20
    monkeypatch.setenv("GNO_TUI_CHANGES_KEPT", str(kept))
    peak = 0
    for n in range(100):
        call = open_engine(home=home, embedder_status=EmbedderStatus(None, NO_MODEL_REASON))
        try:
            as_client(call).add(f"quiet note number {n}")
            call.compaction.wait()
        finally:
            call.db.dispose()
        peak = max(peak, count(engine, tables.FactChangeRow))
    assert peak <= kept + slack(kept)
    assert count(engine, tables.FactRow) == 100


def recalled_ids(client: Client, query: str) -> list[tuple[str, float]]:
    result = client.recall(query, max_facts=50, max_tokens=4000)
    return [(fact["recordId"], fact["score"]) for fact in result["facts"]]


def test_a_reader_behind_the_pruned_log_rebuilds_once_and_misses_no_change(
    client, engine, home, monkeypatch, second_engine
):
    monkeypatch.setenv("GNO_TUI_CHANGES_KEPT", "100")
    originals = [client.add(f"zebra stripes note {n}") for n in range(30)]
    reader = another_process(home, second_engine)
    before = recalled_ids(reader, "zebra stripes")
    assert len(before) == 30
    in_memory = reader.engine.retrieval_backend == "in-memory"
    built = reader.engine._snapshots.rebuilds

    # The writer moves on far past what the log keeps: supersedes what the reader holds,
    # then writes enough for its compaction to prune past the reader's position.
    for n, original in enumerate(originals[:10]):
        client.supersede(original, f"zebra stripes moved {n}")
    for n in range(300):
        client.add(f"quiet note number {n}")
    engine.compaction.wait()
    with Session(engine.db) as session:
        assert pruned_through(session) > 30  # the reader's position is gone from the log

    after = recalled_ids(reader, "zebra stripes")
    fresh = another_process(home, second_engine)
    assert after == recalled_ids(fresh, "zebra stripes")
    texts = {fact["text"] for fact in reader.recall("zebra moved", max_facts=50)["facts"]}
    assert {f"zebra stripes moved {n}" for n in range(10)} <= texts
    if in_memory:
        assert reader.engine._snapshots.rebuilds == built + 1  # rebuilt once...
        client.add("zebra stripes note late")
        assert len(recalled_ids(reader, "zebra stripes")) == 31
        assert reader.engine._snapshots.rebuilds == built + 1  # ...then follows the log again


@pytest.mark.sqlite_only
def test_a_cold_call_whose_kept_index_is_behind_the_pruned_log_answers_as_fresh(
    client, engine, home, monkeypatch
):
    """A CLI recall loads the index kept on disk and applies the log since; once the log is
    pruned past that copy, it rebuilds instead, and the rebuilt copy is kept for the next."""
    monkeypatch.setattr(persisted, "PERSIST_MIN_FACTS", 3)
    monkeypatch.setenv("GNO_TUI_CHANGES_KEPT", "50")
    originals = [client.add(f"zebra stripes note {n}") for n in range(10)]
    client.recall("zebra")  # builds the index and keeps it on disk
    if engine._snapshots.saving is not None:
        engine._snapshots.saving.join()
    kept_file = home / ".index" / "snapshot-lexical.idx"
    saved_at = kept_file.stat().st_mtime_ns
    for n, original in enumerate(originals[:5]):
        client.supersede(original, f"zebra stripes moved {n}")
    for n in range(200):
        client.add(f"quiet note number {n}")
    engine.compaction.wait()
    with Session(engine.db) as session:
        assert pruned_through(session) > newest_change(engine) - 100

    def cold_recall() -> list[str]:
        store = open_recall_store(home=home, embedder_status=EmbedderStatus(None, "lexical"))
        service = RecallService(store)
        try:
            assert not isinstance(store, MemoryEngine)  # the cold read path
            request = RecallRequest("zebra stripes", ["s"], "agent", "s", max_facts=50)
            return sorted(fact["text"] for fact in service.recall(request)["facts"])
        finally:
            service.close()

    expected = sorted(
        [f"zebra stripes moved {n}" for n in range(5)]
        + [f"zebra stripes note {n}" for n in range(5, 10)]
    )
    assert cold_recall() == expected
    assert kept_file.stat().st_mtime_ns != saved_at  # the rebuilt index was kept
    assert cold_recall() == expected


_READS_THE_LOG = re.compile(r"FROM fact_changes\s+WHERE\s+(fact_changes\.)?seq\s*>", re.I)


def test_a_prune_between_a_readers_two_reads_loses_no_change(client, engine, home, second_engine):
    """The reader reads the log's horizon and its rows in two statements; the writer's
    compaction commits a prune between them. The reader must rebuild, not apply the rows
    that are left (which lack the supersede)."""
    originals = [client.add(f"zebra stripes note {n}") for n in range(5)]
    reader = another_process(home, second_engine)
    assert len(recalled_ids(reader, "zebra stripes")) == 5
    # Two changes (the successor in, the predecessor out); a prune to one row keeps only
    # the second, and a reader that applied it alone would hold half of the supersede.
    client.supersede(originals[0], "zebra stripes moved away")
    engine.compaction.wait()

    fired: list[int] = []

    def prune_now(_conn: Any, _cursor: Any, statement: str, *_rest: Any) -> None:
        if not fired and _READS_THE_LOG.search(statement):
            fired.append(compact(engine, Retention(changes_kept=1)).changes)

    event.listen(reader.engine.db, "before_cursor_execute", prune_now)
    try:
        texts = [fact["text"] for fact in reader.recall("zebra stripes", max_facts=50)["facts"]]
    finally:
        event.remove(reader.engine.db, "before_cursor_execute", prune_now)
    assert fired and fired[0] > 0, "the reader never read the change log"
    assert "zebra stripes moved away" in texts
    assert "zebra stripes note 0" not in texts


class PruneBeforeTheRows:
    """A sqlite3 connection whose first read of the log's rows is preceded by a prune."""

    def __init__(self, connection: sqlite3.Connection, prune: Any) -> None:
        self._connection, self._prune = connection, prune
        self.pruned = 0

    def execute(self, sql: str, parameters: Any = ()) -> sqlite3.Cursor:
        if not self.pruned and _READS_THE_LOG.search(sql):
            self.pruned = self._prune()
        return self._connection.execute(sql, parameters)


@pytest.mark.sqlite_only
def test_the_cold_readers_log_read_sees_a_prune_between_its_two_reads(client, engine, home):
    for n in range(5):
        client.add(f"zebra stripes note {n}")
    start = newest_change(engine)
    client.add("zebra stripes later")
    client.add("quiet note")
    engine.compaction.wait()
    connection = sqlite3.connect(home / "index.sqlite", isolation_level=None)
    try:
        proxy = PruneBeforeTheRows(
            connection, lambda: compact(engine, Retention(changes_kept=1)).changes
        )
        found = SqliteReads(proxy).changes_since(start, limit=1000)  # type: ignore[arg-type]
    finally:
        connection.close()
    assert proxy.pruned > 0
    assert found is None  # not the one change left: the caller rebuilds


def test_an_unpruned_log_is_read_as_before(client, engine):
    client.add("zebra stripes note")
    start = newest_change(engine)
    client.add("quiet note")
    with Session(engine.db) as session:
        found = changes_since(session, start, limit=10)
    assert found is not None and len(found) == 1


# -- receipts ----------------------------------------------------------------------------------


def test_receipts_keep_their_bound_and_their_labels_go_with_them(client, engine, monkeypatch):
    kept = 40
    monkeypatch.setenv("GNO_TUI_RECEIPTS_KEPT", str(kept))
    client.add("Alice drinks green tea", "user:alice")
    recalls = []
    for n in range(300):
        recalls.append(client.recall("green tea", ["user:alice"], session=f"turn-{n}"))
        if n == 0:
            fact = recalls[0]["facts"][0]["uri"]
            digest = recalls[0]["receipt"]["digest"]
            label_recall_item(engine, digest=digest, ref=fact, label="relevant", actor=PERSON)
        engine.compaction.wait()
        assert count(engine, tables.ReceiptRow) <= kept + slack(kept) + CHECK_EVERY
    assert count(engine, tables.RecallLabelRow) == 0  # the first receipt went, with its label
    # The newest receipt can still be presented; the oldest is gone, as a deleted one.
    added = client.remember("Alice moved to Lyon", ["user:alice"], receipt=recalls[-1])
    assert added["outcome"] == "added"
    with pytest.raises(MemoryFailure) as caught:
        client.remember("Alice moved to Paris", ["user:alice"], receipt=recalls[0])
    assert caught.value.code == "MEMORY_RECEIPT_INVALID"


def test_receipts_are_all_kept_when_the_bound_is_zero(client, engine, monkeypatch):
    client.add("Alice drinks green tea", "user:alice")
    for n in range(30):
        client.recall("green tea", ["user:alice"], session=f"turn-{n}")
    assert compact(engine, Retention(receipts_kept=0)).receipts == 0
    assert compact(engine, Retention(receipts_kept=10)).receipts == 20
    assert count(engine, tables.ReceiptRow) == 10


# -- history: decided proposals, decisions, revoked tokens -------------------------------------


def test_history_older_than_its_retention_goes_and_open_work_stays(client, engine, monkeypatch):
    start = engine.now()
    engine._clock = lambda: start
    for n in range(3):
        client.remember(f"held note {n}", ["s"], hold_writes=True, origin="mcp")
    held = sorted(p["id"] for p in list_proposals(engine))
    decide(engine, Decision(held[0], "add", actor=PERSON))
    decide(engine, Decision(held[1], "reject", actor=PERSON, reason="not true"))
    client.remember("held note waiting", ["s"], hold_writes=True, origin="mcp")
    tokens.create(engine, "old-bot", scopes=["s"], actor=PERSON)
    tokens.revoke(engine, "old-bot", actor=PERSON)
    tokens.create(engine, "live-bot", scopes=["s"], actor=PERSON)
    keep = Retention(history_days=30)
    logged = len(decision_log(engine))
    assert logged >= 2

    engine._clock = lambda: start + timedelta(days=29)  # within the retention: nothing goes
    assert compact(engine, keep).proposals == 0
    assert len(decision_log(engine)) == logged

    engine._clock = lambda: start + timedelta(days=31)
    decide(engine, Decision(held[2], "reject", actor=PERSON, reason="old news"))
    report = compact(engine, keep)
    assert (report.proposals, report.tokens) == (2, 1)
    assert report.decisions == logged
    states = {p["id"]: p["state"] for p in list_proposals(engine, state=None)}
    assert set(states) == {held[2], max(states)}  # the recent decision and the waiting one
    assert states[max(states)] == "pending"
    assert [entry["target"] for entry in decision_log(engine)] == [f"proposal:{held[2]}"]
    assert [t.name for t in tokens.listing(engine, include_revoked=True)] == ["live-bot"]


def test_the_newest_history_row_stays_so_no_id_is_handed_out_again(client, engine):
    start = engine.now()
    engine._clock = lambda: start
    client.remember("held note", ["s"], hold_writes=True, origin="mcp")
    (proposal,) = list_proposals(engine)
    decide(engine, Decision(proposal["id"], "reject", actor=PERSON, reason="no"))
    engine._clock = lambda: start + timedelta(days=400)
    report = compact(engine, Retention(history_days=30))
    assert (report.proposals, report.decisions) == (0, 0)
    client.remember("held note two", ["s"], hold_writes=True, origin="mcp")
    assert max(p["id"] for p in list_proposals(engine, state=None)) == proposal["id"] + 1


# -- idempotency records -----------------------------------------------------------------------


def test_write_request_records_are_kept_their_days_then_pruned(client, engine):
    start = engine.now()
    engine._clock = lambda: start

    def write(request_id: str, text_: str) -> None:
        write_requests.once(
            engine,
            caller="http:bot",
            request_id=request_id,
            verb="remember",
            body={"text": text_},
            run=lambda: client.add(text_),
        )

    write("first", "green tea")
    engine._clock = lambda: start + timedelta(days=write_requests.KEEP_DAYS - 1)
    write("second", "black tea")
    assert count(engine, tables.WriteRequestRow) == 2
    engine._clock = lambda: start + timedelta(days=write_requests.KEEP_DAYS + 1)
    write("third", "water")
    with pytest.raises(MemoryFailure) as caught:
        write_requests.lookup(engine, caller="http:bot", request_id="first")
    assert caught.value.code == "MEMORY_REQUEST_NOT_FOUND"
    assert count(engine, tables.WriteRequestRow) == 2


# -- files: SQLite's log, the kept index files -------------------------------------------------


@pytest.mark.sqlite_only
def test_the_sqlite_log_is_cut_back_after_many_writes(tmp_path, monkeypatch):
    limit = 256 * 1024
    monkeypatch.setattr(wal_checkpoint, "WAL_SIZE_LIMIT_BYTES", limit)
    home = tmp_path / "wal-home"
    store = open_engine(home=home, embedder_status=EmbedderStatus(None, NO_MODEL_REASON))
    writer = as_client(store)
    log_file = home / "index.sqlite-wal"
    try:
        peak = 0
        for group in range(30):
            with writer.memory.write_batch():  # a group commit: one hold of the lock
                for n in range(50):
                    writer.remember(f"quiet note {group} number {n} " + "x" * 200)
            peak = max(peak, log_file.stat().st_size)
        assert peak > 4 * limit  # the run did grow the log well past its limit
        store.compaction.wait()
        store.compaction.note(CHECK_EVERY)  # a check now: the log is checkpointed
        store.compaction.wait()
        writer.add("one more note")  # starts the log again: cut back to its limit
        assert log_file.stat().st_size <= limit
    finally:
        store.compaction.wait()
        store.db.dispose()


@pytest.mark.sqlite_only
def test_kept_index_files_do_not_accumulate(client, engine, home, monkeypatch):
    monkeypatch.setattr(persisted, "PERSIST_MIN_FACTS", 3)
    folder = home / ".index"
    folder.mkdir(parents=True, exist_ok=True)
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    writing = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=-1)
    try:
        dead_temp = folder / f".snapshot-lexical.idx.{gone.pid}-1.tmp"
        live_temp = folder / f".snapshot-lexical.idx.{writing.pid}-1.tmp"
        unused = folder / "snapshot-old-model.idx"
        recent = folder / "snapshot-other-model.idx"
        for path in (dead_temp, live_temp, unused, recent):
            path.write_bytes(b"\0" * 4096)
        month_ago = unused.stat().st_mtime - (persisted.INDEX_IDLE_DAYS + 1) * 86_400
        os.utime(unused, (month_ago, month_ago))
        for n in range(300):
            client.add(f"quiet note number {n}")
            if n % 50 == 0:
                client.recall("quiet note")  # the index is kept on disk now and then
        engine.compaction.wait()
        if engine._snapshots.saving is not None:
            engine._snapshots.saving.join()
        names = sorted(path.name for path in folder.iterdir())
        assert names == sorted(["snapshot-lexical.idx", live_temp.name, recent.name])
    finally:
        writing.communicate(b"")


# -- settings ----------------------------------------------------------------------------------


def test_retention_settings_come_from_the_environment_and_bad_ones_are_ignored():
    assert Retention.from_environment({}) == Retention()
    given = {
        "GNO_TUI_CHANGES_KEPT": "5000",
        "GNO_TUI_RECEIPTS_KEPT": "0",
        "GNO_TUI_HISTORY_KEEP_DAYS": "90",
    }
    assert Retention.from_environment(given) == Retention(5000, 0, 90)
    bad = {"GNO_TUI_CHANGES_KEPT": "0", "GNO_TUI_RECEIPTS_KEPT": "-3"}
    assert Retention.from_environment(bad) == Retention()
    assert Retention.from_environment({"GNO_TUI_HISTORY_KEEP_DAYS": "２"}) == Retention()


def test_compaction_changes_no_generation_and_no_fact(client, engine):
    for n in range(30):
        client.add(f"quiet note number {n}")
    engine.compaction.wait()
    generation = engine.generation()
    report = compact(engine, Retention(changes_kept=5))
    assert report.changes == 30 - 5
    assert engine.generation() == generation
    assert count(engine, tables.FactRow) == 30
    with Session(engine.db) as session:
        assert session.execute(text("SELECT count(*) FROM fact_changes")).scalar() == 5
