"""One store, one visible set: every reader of the store agrees on which facts are current.

"Current" is defined once (engine/contract/visibility.py): neither superseded nor retired, and
not expired at the engine's clock (a fact expiring at exactly `now` has expired). A seeded
random run of adds, supersedes, retires, restores and clock moves (landing on, just before and
just after expiry moments) is checked after every step against the test's own account of the
store, through each way the engine reads it: a recall (what an agent is shown), the Library's
"current" filter and its complement (the ORM clause), the status counts and the Library's tab
counts, the in-memory index's mask, the exact-duplicate check of a remember, the Python
predicate over every row, the cold CLI path's sqlite3 store (embedded mode) and PostgreSQL's
derived table (server mode, when recall ranks in the database)."""

from __future__ import annotations

import random
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pg_homes
import pytest
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from engine.contract import visibility
from engine.contract.errors import MemoryFailure
from engine.contract.normalize import iso_utc
from engine.facade.curation import Curation, CurationAction
from engine.facade.factory import open_engine
from engine.facade.facts import FactQuery
from engine.facade.service import MemoryService
from engine.memory.browse import Exclusions
from engine.memory.library import LibraryFilter
from engine.memory.recall import MAX_FACTS_LIMIT, MAX_TOKENS_LIMIT, RecallRequest
from engine.memory.remember import RememberRequest
from engine.retrieval import pg_support
from engine.retrieval.embeddings import EmbedderStatus
from engine.retrieval.seam import Visibility
from engine.storage.embedded.sqlite_reader import SqliteRecallStore, open_sqlite_store
from engine.storage.reads.records import current_duplicate
from engine.storage.schema import tables

LEXICAL = EmbedderStatus(None, "no model in this test (lexical mode)")
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)
SCOPES = ["user:alice", "user:bob"]
WORD = "zebra"  # in every fact's text: a recall of it finds every fact it may show
SEEDS = (1, 2, 3)
STEPS = 90  # per seed: the visible set is compared after each step
MAX_FACTS = 60  # well inside one recall's window


class Clock:
    """The engine's clock, moved by the test alone (milliseconds, as the store keeps them)."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


@dataclass
class Known:
    """The test's own account of one fact."""

    record: dict[str, Any]
    expires_at: datetime | None
    superseded: bool = False
    retired: bool = False

    def current(self, now: datetime) -> bool:
        # Spelled out here, not taken from the engine: an expiry at `now` has passed.
        expired = self.expires_at is not None and not self.expires_at > now
        return not (self.superseded or self.retired or expired)


class Run:
    def __init__(self, home: Path, seed: int) -> None:
        self.home = home
        self.clock = Clock()
        self.engine = open_engine(home=home, embedder_status=LEXICAL, clock=self.clock)
        self.memory = MemoryService(self.engine)
        self.random = random.Random(seed)
        self.known: dict[str, Known] = {}
        self.made = 0
        self.cold: SqliteRecallStore | None = None

    def close(self) -> None:
        if self.cold is not None:
            self.cold.close()
        self.engine.db.dispose()

    # -- writes --------------------------------------------------------------------------

    def _text(self) -> str:
        self.made += 1
        return f"{WORD} note {self.made}"

    def _expiry(self) -> datetime | None:
        if self.random.random() < 0.5:
            return None
        return self.clock.now + timedelta(milliseconds=10 * self.random.randint(1, 40))

    def _remember(self, **fields: Any) -> Any:
        expires = fields.pop("expires_at")
        workbench = {"expiresAt": iso_utc(expires)} if expires is not None else {}
        request = RememberRequest(
            caller="test:agent", session="test", workbench=workbench, **fields
        )
        result = self.memory.remember(request)
        self.clock.now += timedelta(milliseconds=1)  # the next write at a moment of its own
        return result

    def add(self) -> None:
        expires = self._expiry()
        scopes = self.random.sample(SCOPES, self.random.randint(1, 2))
        result = self._remember(
            text=self._text(), scopes=scopes, decision="add", expires_at=expires
        )
        assert result["outcome"] == "added", result
        self.known[result["record"]["recordId"]] = Known(result["record"], expires)

    def supersede(self, old: Known) -> None:
        expires = self._expiry()
        result = self._remember(
            text=self._text(),
            scopes=None,
            decision="supersede",
            predecessor=old.record["uri"],
            predecessor_hash=old.record["contentHash"],
            expires_at=expires,
        )
        assert result["outcome"] in ("added", "superseded"), result
        old.superseded = True
        self.known[result["record"]["recordId"]] = Known(result["record"], expires)

    def curate(self, fact: Known, action: CurationAction) -> None:
        self.memory.curation.curate(
            Curation(action, fact.record["uri"], actor="person", reason="x")
        )
        self.clock.now += timedelta(milliseconds=1)
        fact.retired = action is CurationAction.RETIRE

    def move_clock(self) -> None:
        """Onto an expiry moment, a millisecond either side of one, or well past."""
        expiries = [k.expires_at for k in self.known.values() if k.expires_at is not None]
        later = [moment for moment in expiries if moment >= self.clock.now]
        if later and self.random.random() < 0.8:
            moment = self.random.choice(later)
            self.clock.now = moment + timedelta(milliseconds=self.random.choice((-1, 0, 0, 1)))
        else:
            self.clock.now += timedelta(milliseconds=self.random.randint(1, 500))

    def step(self) -> None:
        facts = list(self.known.values())
        kind = self.random.choice(("add", "add", "supersede", "retire", "restore", "clock"))
        if (kind == "add" and len(facts) < MAX_FACTS) or not facts:
            self.add()
        elif kind == "supersede" and len(facts) < MAX_FACTS:
            target = self.random.choice(facts)
            try:
                self.supersede(target)
            except MemoryFailure as refused:  # e.g. a predecessor superseded already
                assert refused.code != "MEMORY_INTERNAL"
        elif kind in ("retire", "restore"):
            target = self.random.choice(facts)
            action = CurationAction.RETIRE if kind == "retire" else CurationAction.RESTORE
            try:
                self.curate(target, action)
            except MemoryFailure as refused:  # nothing to retire or restore
                assert refused.code != "MEMORY_INTERNAL"
        else:
            self.move_clock()

    # -- what each reader sees -----------------------------------------------------------

    def expected(self) -> set[str]:
        return {record_id for record_id, k in self.known.items() if k.current(self.clock.now)}

    def everyone(self) -> Iterator[tuple[str, set[str]]]:
        """(reader, the record ids it sees as current now)."""
        now, memory = self.clock.now, self.memory
        everything = set(self.known)
        recalled = memory.recall(
            RecallRequest(
                query=WORD,
                scopes=SCOPES,
                caller="test:agent",
                session="test",
                max_facts=MAX_FACTS_LIMIT,
                max_tokens=MAX_TOKENS_LIMIT,
            )
        )
        yield "recall", {fact["recordId"] for fact in recalled["facts"]}
        page = memory.facts.page(FactQuery(status="current", limit=1000))
        yield "browse: current", {row.record_id for row in page.rows}
        library = memory.facts.library_page(LibraryFilter(), tab="current", offset=0, limit=1000)
        yield "library: current tab", {row.record_id for row in library.rows}
        searched = memory.facts.library_page(
            LibraryFilter(text=WORD), tab="current", offset=0, limit=1000
        )
        yield "library: current tab, searched", {row.record_id for row in searched.rows}
        others = memory.facts.library_page(
            LibraryFilter(exclude=Exclusions(statuses=("current",))),
            tab="all",
            offset=0,
            limit=1000,
        )  # the clause's complement (`!st:current`)
        yield "library: all but current", everything - {row.record_id for row in others.rows}
        snapshot = self.engine.snapshot()
        mask = snapshot.visible(scopes=snapshot.scopes(), collections=None, now=now)
        yield "in-memory mask", {snapshot.facts.record_id(int(p)) for p in mask.nonzero()[0]}
        with Session(self.engine.db) as session:
            rows = session.scalars(select(tables.FactRow)).all()
            yield "FactRow.is_current", {row.record_id for row in rows if row.is_current(now)}
            copies = set()
            for row in rows:
                found = current_duplicate(
                    session,
                    collection=row.collection,
                    content_hash=row.content_hash,
                    scopes=row.scopes,
                    now=now,
                )
                copies |= {found.record_id} if found is not None else set()
            yield "remember's exact-duplicate check", copies
            raw = session.execute(
                text(f"SELECT record_id FROM facts WHERE {visibility.current_sql('facts')}"),
                {"now": iso_utc(now)},  # the facts table keeps times as ISO text
            )
            yield "raw SQL over facts", {str(row[0]) for row in raw.all()}
        if self.engine.retrieval_backend == "postgres":
            self.engine.retrieval().catch_up()
            where, params = pg_support.visible(Visibility(None, None, now))
            with self.engine.db.connect() as connection:
                derived = connection.execute(
                    text(f"SELECT s.record_id FROM fact_search s WHERE {where}"), params
                )
                yield "PostgreSQL fact_search", {str(row[0]) for row in derived.all()}
        if not pg_homes.server_mode():
            yield from self.cold_path(now)

    def cold_path(self, now: datetime) -> Iterator[tuple[str, set[str]]]:
        """A cold CLI recall's store: sqlite3, no SQLAlchemy. Kept open, so that it catches up
        with each write as a long-lived reader does."""
        if self.cold is None:
            url = f"sqlite:///{self.home / 'index.sqlite'}"
            cold = open_sqlite_store(
                self.home, db_url=url, embedder_status=lambda: LEXICAL, clock=self.clock
            )
            assert isinstance(cold, SqliteRecallStore)
            self.cold = cold
        index = self.cold.retrieval()
        ranked = index.rank(WORD, Visibility(SCOPES, None, now))
        yield "sqlite3 store: ranking", {match.fact.record_id for match in ranked.matches}
        with sqlite3.connect(self.home / "index.sqlite") as connection:
            raw = connection.execute(
                f"SELECT record_id FROM facts WHERE {visibility.current_sql(now='?')}",
                (iso_utc(now),),
            )
            yield "raw sqlite3", {record_id for (record_id,) in raw}
        connection.close()

    def counts(self) -> dict[str, int]:
        library = self.memory.facts.library_page(LibraryFilter(), tab="current", offset=0, limit=1)
        return {
            "status counts": self.memory.facts.status_counts()["current"],
            "library tab count": library.counts["current"],
        }


@pytest.fixture
def runs(tmp_path: Path) -> Iterator[list[Run]]:
    opened: list[Run] = []
    yield opened
    for run in opened:
        run.close()


@pytest.mark.parametrize("seed", SEEDS)
def test_every_reader_sees_the_same_current_facts(
    seed: int, tmp_path: Path, runs: list[Run]
) -> None:
    run = Run(tmp_path / "home", seed)
    runs.append(run)
    boundaries, readers = 0, set()
    for step in range(STEPS):
        run.step()
        now = run.clock.now
        boundaries += any(k.expires_at == now for k in run.known.values())
        expected = run.expected()
        for reader, seen in run.everyone():
            readers.add(reader)
            assert seen == expected, (
                f"step {step} at {iso_utc(now)}: {reader} shows "
                f"{sorted(seen - expected)} it should not and misses {sorted(expected - seen)}"
            )
        for reader, count in run.counts().items():
            assert count == len(expected), f"step {step}: {reader} {count} != {len(expected)}"
    # The run did what it is for: facts came and went, and the clock stood on expiry moments.
    states = [k.current(run.clock.now) for k in run.known.values()]
    assert any(k.superseded for k in run.known.values())
    assert any(k.retired for k in run.known.values())
    assert boundaries > 0 and any(states) and not all(states)
    # Each mode's own readers were asked.
    if run.engine.retrieval_backend == "postgres":
        assert "PostgreSQL fact_search" in readers
    if not pg_homes.server_mode():
        assert {"sqlite3 store: ranking", "raw sqlite3"} <= readers


def test_the_rule_at_the_expiry_moment() -> None:
    """An expiry at exactly `now` has passed, in every form of the rule."""
    import numpy as np

    moment = START

    @dataclass
    class Row:
        superseded_by: str | None = None
        retired_at: datetime | None = None
        expires_at: datetime | None = None

    for expires, current in (
        (None, True),
        (moment, False),
        (moment + timedelta(milliseconds=1), True),
    ):
        assert visibility.is_current(Row(expires_at=expires), moment) is current
        expiry = np.array([expires.timestamp() if expires else np.inf])
        assert visibility.current_mask(np.array([True]), expiry, moment).tolist() == [current]
    assert not visibility.is_current(Row(retired_at=moment), moment)
    assert not visibility.is_current(Row(superseded_by="r"), moment)
