"""Keeping what grows with use within bounds, off the request path.

Every write and every recall leaves something behind: rows in the change log
(`fact_changes`), a receipt (and the labels and usage reports hung on it), decided proposals,
decision log entries, revoked tokens, pages in SQLite's log file, and now and then a file in
the index folder. Facts and their superseded versions are the person's data: nothing here
touches them. What is kept (the settings are environment variables, read at each run):

- the change log: the newest `GNO_TUI_CHANGES_KEPT` changes (CHANGES_KEPT, 200,000). A
  reader further behind finds the log pruned past its position and rebuilds once
  (engine/retrieval/index_cache.py; the PostgreSQL derived tables, pg_derived.py);
- receipts: the newest `GNO_TUI_RECEIPTS_KEPT` (200,000; 0 keeps every one), with their
  labels and usage reports. A pruned receipt presented later is MEMORY_RECEIPT_INVALID, as a
  deleted one is;
- review claims: a proposal left deciding by a killed decision is settled (claim_recovery);
- history: decided proposals, decision log entries and revoked tokens older than
  `GNO_TUI_HISTORY_KEEP_DAYS` days (365; 0 keeps them) by the store's clock; the newest row
  of each table stays, so SQLite never hands out a pruned id again (undo links decisions
  and proposals by id);
- files (the embedded mode): SQLite's log is checkpointed once it is past
  WAL_SIZE_LIMIT_BYTES and cut back by the next write (engine/storage/embedded/wal_checkpoint.py);
  the index folder loses what killed processes left and the index of a model unused for
  persisted.INDEX_IDLE_DAYS (engine/retrieval/persisted.py `sweep`).

When: every CHECK_EVERY writes or recalls of a process (`Compaction.note`, called when a
write lets the write lock go and when a recall stores its receipt), on a thread of its own:
the caller that triggered it is answered without waiting. A process's first write or recall
also looks at the change log and SQLite's log (two cheap reads), so that a store written by
one CLI call at a time is compacted too. A table is compacted once it has grown a tenth past
its bound (`slack`), so each compaction deletes many rows, not a few per write. Deletes run
in batches of BATCH rows, each one short transaction under the write lock, so a writer waits
for at most one batch; the thread gives up when the lock stays taken LOCK_WAIT_S (the next
check tries again), which also bounds how long a CLI call that triggered it lives on after
answering. Nothing here moves the generation (no fact changes) but a settled review claim."""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Table, and_, delete, func, or_, select
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.storage.embedded import wal_checkpoint
from engine.storage.schema import tables
from engine.storage.schema.database import CHANGES_KEPT, prune_changes

if TYPE_CHECKING:
    from sqlalchemy.sql.elements import ColumnElement

    from engine.storage.mode import StoreEngine

CHANGES_ENV = "GNO_TUI_CHANGES_KEPT"
RECEIPTS_ENV = "GNO_TUI_RECEIPTS_KEPT"
HISTORY_ENV = "GNO_TUI_HISTORY_KEEP_DAYS"
RECEIPTS_KEPT = 200_000  # ~1 KB a receipt with its index entries: ~0.2 GB at most
HISTORY_KEEP_DAYS = 365
# A process compacts after every this many writes and recalls (its first one looks first).
CHECK_EVERY = 64
# Rows deleted per transaction (per hold of the write lock): a few milliseconds on SQLite.
BATCH = 5_000
# How long the compaction waits for the write lock before leaving the work to the next check.
LOCK_WAIT_S = 1.0
# Proposals that wait for a person, or are being decided, are never pruned.
OPEN_STATES = ("pending", "deciding")

log = logging.getLogger("engine.storage")


@dataclass(frozen=True)
class Retention:
    changes_kept: int = CHANGES_KEPT
    receipts_kept: int = RECEIPTS_KEPT  # 0: no bound
    history_days: int = HISTORY_KEEP_DAYS  # 0: kept for ever

    @classmethod
    def from_environment(cls, environ: Mapping[str, str] | None = None) -> Retention:
        """The settings in the environment; a value that is not a whole number in range is
        ignored (logged) for its default."""
        found = os.environ if environ is None else environ
        return cls(
            changes_kept=_setting(found, CHANGES_ENV, CHANGES_KEPT, least=1),
            receipts_kept=_setting(found, RECEIPTS_ENV, RECEIPTS_KEPT, least=0),
            history_days=_setting(found, HISTORY_ENV, HISTORY_KEEP_DAYS, least=0),
        )


def _setting(environ: Mapping[str, str], name: str, default: int, *, least: int) -> int:
    given = environ.get(name, "").strip()
    if not given:
        return default
    if given.isascii() and given.isdigit() and int(given) >= least:
        return int(given)
    if (name, given) not in _WARNED:  # once per process, not at every compaction
        _WARNED.add((name, given))
        log.warning(
            "gno-tui: $%s=%r is not a whole number >= %d; using %d", name, given, least, default
        )
    return default


_WARNED: set[tuple[str, str]] = set()


def slack(kept: int) -> int:
    """How far past its bound a table grows before it is compacted: a tenth of the bound."""
    return max(1, kept // 10)


@dataclass
class CompactionReport:
    """What one run removed."""

    changes: int = 0
    receipts: int = 0
    proposals: int = 0
    decisions: int = 0
    tokens: int = 0
    claims: int = 0  # review claims released: their decision's process is gone
    files: list[str] = field(default_factory=list)
    checkpointed: bool = False


class Compaction:
    """One engine's compaction: counts its writes and recalls (`note`) and runs `compact` on a
    thread of its own when a check is due. `wait` joins that thread (tests, closing)."""

    def __init__(self, engine: StoreEngine) -> None:
        self._engine = engine
        self._guard = threading.Lock()
        self._noted = 0
        self._next_check = CHECK_EVERY
        self._thread: threading.Thread | None = None
        self._again = False  # a check fell due while one ran
        self.runs = 0
        self.last: CompactionReport | None = None
        # Review claims whose deciding process is gone, settled by curation (above storage:
        # engine/curation/claim_recovery.py), which the façade's factory hands in; it takes
        # how long it may wait for the lock and says how many it settled.
        self.recover_claims: Callable[[float], int] = lambda wait: 0

    def note(self, count: int = 1) -> None:
        """A write let the write lock go, or a recall stored its receipt: a counter, and now
        and then a thread started. The process's first one looks at the change log and the
        SQLite log (two cheap reads, on this thread: a CLI call writes once, so this is where
        it checks) and starts the thread only when one of them is past its bound."""
        if threading.current_thread() is self._thread:
            return  # the compaction's own holds of the lock
        with self._guard:
            first = self._noted == 0
            self._noted += count
            if not first and self._noted < self._next_check:
                return
            if not first:
                self._next_check = self._noted + CHECK_EVERY
        if first and not self._worth_a_run():
            return
        with self._guard:
            if self._thread is not None:
                self._again = True
                return
            # Not a daemon: a CLI call that triggered it lets the batch in progress finish.
            self._thread = threading.Thread(target=self._work, name="gno-tui compaction")
            self._thread.start()

    def wait(self) -> None:
        """Until no compaction runs in this process."""
        while True:
            with self._guard:
                thread = self._thread
            if thread is None or thread is threading.current_thread():
                return
            thread.join()

    def _worth_a_run(self) -> bool:
        try:
            return past_bound(self._engine, Retention.from_environment())
        except Exception as exc:  # noqa: BLE001 - a check never fails the write it follows
            log.debug("gno-tui: compaction check skipped: %s", exc)
            return False

    def _work(self) -> None:
        while True:
            try:
                self.last = compact(self._engine)
                self.runs += 1
            except MemoryFailure as failure:  # the lock stayed taken: the next check retries
                log.debug("gno-tui: compaction put off: %s", failure.message)
            except Exception as exc:  # noqa: BLE001 - a background thread reports and ends
                log.warning("gno-tui: compaction stopped: %s", exc)
            with self._guard:
                if not self._again:
                    self._thread = None
                    return
                self._again = False


def _writable(engine: StoreEngine) -> bool:
    """Not a read-only home, and not a SQLite file removed meanwhile (connecting would make
    an empty one, which the next open would take for a lost index)."""
    if getattr(engine, "read_only", None) is not None:
        return False
    path = engine.sqlite_path
    return path is None or path.exists()


def past_bound(engine: StoreEngine, retention: Retention) -> bool:
    """The change log or SQLite's log is past its bound (two cheap reads)."""
    if not _writable(engine):
        return False
    return _changes_past(engine, retention.changes_kept) is not None or _log_file_past(
        engine.sqlite_path
    )


def compact(engine: StoreEngine, retention: Retention | None = None) -> CompactionReport:
    """Bring everything that grows with use back within its bound (the module docstring)."""
    keep = retention or Retention.from_environment()
    report = CompactionReport()
    if not _writable(engine):
        return report
    report.claims = engine.compaction.recover_claims(LOCK_WAIT_S)
    report.changes = _prune_changes(engine, keep.changes_kept)
    if keep.receipts_kept:
        report.receipts = _prune_receipts(engine, keep.receipts_kept)
    if keep.history_days:
        cut = engine.now() - timedelta(days=keep.history_days)
        report.proposals = _prune_rows(engine, _PROPOSALS, _old_proposals(cut))
        report.decisions = _prune_rows(engine, _DECISIONS, _old_decisions(cut))
        report.tokens = _prune_rows(engine, _TOKENS, _old_tokens(cut))
    report.files = engine.store.sweep_files(engine)
    report.checkpointed = _checkpoint_if_long(engine.sqlite_path)
    return report


def _locked_session(engine: StoreEngine, work: Callable[[Session], int]) -> int:
    """`work` in one transaction under the write lock (waiting at most LOCK_WAIT_S)."""
    with engine.write_lock(settle=False, timeout=LOCK_WAIT_S), Session(engine.db) as session:
        done = work(session)
        session.commit()
    return done


# -- the change log ------------------------------------------------------------------------


def _table(row: type[Any]) -> Table:
    table: Table = row.__table__
    return table


_CHANGES = _table(tables.FactChangeRow)
_RECEIPTS = _table(tables.ReceiptRow)
_LABELS = _table(tables.RecallLabelRow)
_PROPOSALS = _table(tables.ProposalRow)
_DECISIONS = _table(tables.DecisionRow)
_TOKENS = _table(tables.ApiTokenRow)


def _changes_past(engine: StoreEngine, kept: int) -> tuple[int, int] | None:
    """The log's oldest and newest seq when it holds more than `kept` and its slack."""
    seq = _CHANGES.c.seq
    with Session(engine.db) as session:
        ends: Any = session.execute(select(func.min(seq), func.max(seq))).one()
    oldest, newest = ends
    if oldest is None or newest is None or newest - oldest + 1 <= kept + slack(kept):
        return None
    return int(oldest), int(newest)


def _prune_changes(engine: StoreEngine, kept: int) -> int:
    ends = _changes_past(engine, kept)
    if ends is None:
        return 0
    # Seqs may have gaps (a rolled-back insert on PostgreSQL): cutting by seq keeps at most
    # `kept` rows, and always the newest, which is the position readers start from.
    start, cut = ends[0], ends[1] - kept
    removed = 0
    while start <= cut:
        upto = min(cut, start + BATCH - 1)

        def one_batch(session: Session, upto: int = upto) -> int:
            return prune_changes(session, through=upto)

        removed += _locked_session(engine, one_batch)
        start = upto + 1
    return removed


# -- receipts ------------------------------------------------------------------------------


def _prune_receipts(engine: StoreEngine, kept: int) -> int:
    issued, digest = _RECEIPTS.c.issued_at, _RECEIPTS.c.digest
    with Session(engine.db) as session:
        count = int(session.scalar(select(func.count()).select_from(_RECEIPTS)) or 0)
        if count <= kept + slack(kept):
            return 0
        # The newest receipt to go: the one after the `kept` newest.
        edge = session.execute(
            select(issued, digest).order_by(issued.desc(), digest.desc()).offset(kept).limit(1)
        ).one_or_none()
    if edge is None:
        return 0
    older = or_(issued < edge[0], and_(issued == edge[0], digest <= edge[1]))
    batch = select(digest).where(older).order_by(issued, digest).limit(BATCH).scalar_subquery()

    def one_batch(session: Session) -> int:
        # Their labels and usage reports go with them, as with a person's purge.
        session.execute(delete(_LABELS).where(_LABELS.c.digest.in_(batch)))
        done = session.execute(delete(_RECEIPTS).where(digest.in_(batch)))
        return int(getattr(done, "rowcount", 0) or 0)

    return _in_batches(engine, one_batch)


# -- history: decided proposals, the decision log, revoked tokens --------------------------


def _newest_stays(table: Table) -> ColumnElement[bool]:
    """Not the table's newest row: SQLite hands out max(id) + 1, so a pruned newest id would
    come back for another row, while undo still names it."""
    return table.c.id < select(func.max(table.c.id)).scalar_subquery()


def _old_proposals(cut: datetime) -> ColumnElement[bool]:
    columns = _PROPOSALS.c
    return and_(
        columns.state.not_in(OPEN_STATES), columns.decided_at < cut, _newest_stays(_PROPOSALS)
    )


def _old_decisions(cut: datetime) -> ColumnElement[bool]:
    return and_(_DECISIONS.c.at < cut, _newest_stays(_DECISIONS))


def _old_tokens(cut: datetime) -> ColumnElement[bool]:
    return _TOKENS.c.revoked_at < cut


def _prune_rows(engine: StoreEngine, table: Table, old: ColumnElement[bool]) -> int:
    """Delete the rows of `table` (keyed by `id`) that `old` holds for, in batches."""
    with Session(engine.db) as session:
        if session.execute(select(table.c.id).where(old).limit(1)).first() is None:
            return 0
    batch = select(table.c.id).where(old).order_by(table.c.id).limit(BATCH).scalar_subquery()

    def one_batch(session: Session) -> int:
        done = session.execute(delete(table).where(table.c.id.in_(batch)))
        return int(getattr(done, "rowcount", 0) or 0)

    return _in_batches(engine, one_batch)


def _in_batches(engine: StoreEngine, one_batch: Callable[[Session], int]) -> int:
    removed = 0
    while True:
        done = _locked_session(engine, one_batch)
        removed += done
        if done < BATCH:
            return removed


# -- files ---------------------------------------------------------------------------------


def _log_file_past(database: Path | None) -> bool:
    if database is None:
        return False
    try:
        return Path(f"{database}-wal").stat().st_size > wal_checkpoint.WAL_SIZE_LIMIT_BYTES
    except OSError:
        return False


def _checkpoint_if_long(database: Path | None) -> bool:
    """Checkpoint SQLite's log once it is past its limit: the next write then starts it
    again from the beginning and cuts the file back (journal_size_limit)."""
    if database is None or not _log_file_past(database):
        return False
    return wal_checkpoint.checkpoint_now(database)
