"""A demo store: what a developer's coding agent might have remembered over a month.

`seed_demo(service)` fills a fresh store with ~40 facts across five scopes and two collections,
three supersession chains, retired and confirmed facts, near-duplicate pairs, pending
proposals from an MCP agent and three recall receipts (one of which has since drifted).
Facts are dated over the 30 days before the store's clock; with a fixed clock the result is
the same on every run (record ids included)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from engine.facade import (
    Curation,
    CurationAction,
    MemoryService,
    PublicFact,
    RecallRequest,
    RememberRequest,
    counted_record_ids,
)
from gno_tui.demo_data import (
    ALICE,
    CHAINS,
    CLAUDE,
    CONFIRMED,
    CURSOR,
    FACTS,
    LATE_VERSION,
    PERSON,
    PROPOSALS,
    RECALLS,
    RETIRED,
)


@contextmanager
def _demo_time(store: MemoryService) -> Iterator[Callable[[float], None]]:
    """Swap the store's clock for one the seeding sets, and its record ids for counted ones,
    so that facts carry their demo dates and a fixed clock gives a fixed store."""
    base = store.now()
    moment = {"at": base}

    def at(days_ago: float) -> None:
        moment["at"] = base - timedelta(days=days_ago)

    with store.clock_override(lambda: moment["at"], ids=counted_record_ids("demo")):
        yield at


def seed_demo(store: MemoryService) -> dict[str, Any]:
    """Fill a fresh store; returns what was made (uris of chains, proposals, receipts)."""
    made: dict[str, Any] = {"chains": [], "receipts": [], "proposals": 0}
    with _demo_time(store) as at:
        at(30)
        if "team" not in {row.name for row in store.collections()}:
            store.add_collection("team", policy="lan")
        by_text: dict[str, PublicFact] = {}

        def add(
            days: float,
            text: str,
            scopes: tuple[str, ...],
            collection: str,
            caller: str,
            source: str | None = None,
        ) -> PublicFact:
            at(days)
            record: PublicFact = store.remember(
                RememberRequest(
                    text=text,
                    scopes=list(scopes),
                    caller=caller,
                    session=_session(caller),
                    decision="add",
                    collection=collection,
                    source=source,
                    created_by="user" if caller == ALICE else "agent",
                )
            )["record"]
            by_text[text] = record
            return record

        def supersede(days: float, head: PublicFact, text: str, caller: str) -> PublicFact:
            at(days)
            record: PublicFact = store.remember(
                RememberRequest(
                    text=text,
                    scopes=None,
                    caller=caller,
                    session=_session(caller),
                    decision="supersede",
                    predecessor=head["uri"],
                    predecessor_hash=head["contentHash"],
                )
            )["record"]
            return record

        heads = []
        # One group commit for the plain adds and the chains: one hold of the write lock and
        # one wait for the disk instead of one each (a third of the demo's seeding time);
        # the rows are the same as written one by one (tests/engine/test_write_path_rows.py).
        with store.write_batch():
            for days, text, scopes, collection, caller, source in FACTS:
                add(days, text, scopes, collection, caller, source)
            for scopes, collection, caller, versions in CHAINS:
                head = add(versions[0][0], versions[0][1], scopes, collection, caller)
                for days, text in versions[1:]:
                    head = supersede(days, head, text, caller)
                heads.append(head)
                made["chains"].append(head["uri"])
        for index, (text, reason) in enumerate(RETIRED):
            scopes = ("user:alice",) if "Alice" in text else ("project:billing-api",)
            record = add(25 - index, text, scopes, "memory", CLAUDE)
            at(7 - index)
            store.curation.curate(
                Curation(CurationAction.RETIRE, ref=record["uri"], actor=PERSON, reason=reason)
            )
        for index, text in enumerate(CONFIRMED):
            at(5 - index)
            store.curation.curate(
                Curation(CurationAction.CONFIRM, ref=by_text[text]["uri"], actor=PERSON)
            )
        for index, (text, scopes, caller, session) in enumerate(PROPOSALS):
            at(2 - index * 0.25)
            store.remember(
                RememberRequest(
                    text=text, scopes=list(scopes), caller=caller, session=session, decision="add"
                ),
                hold_writes=True,
                origin="mcp",
            )
            made["proposals"] += 1
        for index, (query, scopes, caller, session) in enumerate(RECALLS):
            at(1.5 - index * 0.2)
            result = store.recall(
                RecallRequest(
                    query=query,
                    scopes=list(scopes),
                    caller=caller,
                    session=session,
                    max_facts=5,
                    max_tokens=160,
                )
            )
            made["receipts"].append(result["receipt"]["digest"])
        late = supersede(LATE_VERSION[0], heads[0], LATE_VERSION[1], CURSOR)
        made["chains"][0] = late["uri"]
    return made


def _session(caller: str) -> str:
    return {ALICE: "shell-2211", CLAUDE: "claude-7f3a", CURSOR: "cursor-41"}.get(caller, "demo")


def demo_clock(at: datetime | None = None) -> Callable[[], datetime]:
    """A fixed clock for reproducible demos and screenshots (2026-11-30 12:00 UTC)."""
    from datetime import UTC

    moment = at or datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    return lambda: moment
