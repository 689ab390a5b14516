"""The engine's only sources of identity and time are the `ids` and `clock` it is opened with:
every write path (remember, the keyed API, bulk import) takes its record ids and createdAt
from them, and an id read from an imported file is kept as it is."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import counted_record_ids, is_record_id
from engine.facade.factory import open_engine
from engine.interop import transfer
from engine.keyed import service as keyed
from engine.memory.remember import RememberRequest, remember
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.embedded.factfiles import parse_fact_file
from engine.storage.schema import tables
from engine.storage.store import MemoryEngine

FIXED = datetime(2026, 3, 14, 15, 9, 26, 535000, tzinfo=UTC)
IDS = ["mem-0123456789abcdef", "mem-fedcba9876543210", "mem-00112233445566ff"]


def _open(home: Path, ids: Callable[[], str] | None, clock: Callable[[], datetime]) -> MemoryEngine:
    return open_engine(
        home=home, embedder_status=EmbedderStatus(None, "tests: lexical"), clock=clock, ids=ids
    )


def _add(engine: MemoryEngine, text: str, scope: str = "user:alice") -> dict:
    request = RememberRequest(text=text, scopes=[scope], caller="c", session="s", decision="add")
    return remember(engine, request)


def test_injected_ids_and_clock_make_the_facts_record_ids_and_times(home: Path, probe: Any) -> None:
    moments = iter([FIXED, FIXED + timedelta(hours=1), FIXED + timedelta(hours=2)])
    now = {"at": FIXED}
    engine = _open(home, iter(IDS).__next__, lambda: now["at"])
    try:
        written = []
        for text in ("Alice drinks green tea", "Bob lives in Lyon"):
            now["at"] = next(moments)
            written.append(_add(engine, text)["record"])
        assert [r["recordId"] for r in written] == IDS[:2]
        assert [r["createdAt"] for r in written] == [
            "2026-03-14T15:09:26.535Z",
            "2026-03-14T16:09:26.535Z",
        ]
        assert [r["docid"] for r in written] == ["#01234567", "#fedcba98"]
        # An exact duplicate writes nothing and spends no id.
        assert _add(engine, "Alice drinks green tea")["outcome"] == "existing"
        # The fact files (canonical, or the server's mirror) carry the same identity and time.
        on_disk = probe.files()
        assert [p.stem for p in on_disk] == sorted(IDS[:2])
        parsed = parse_fact_file(on_disk[0].read_text(encoding="utf-8"))
        assert parsed.record_id == IDS[0] and parsed.created_at == "2026-03-14T15:09:26.535Z"
        # The keyed API writes through the same path: the next id, the engine's time.
        now["at"] = next(moments)
        keyed.remember(engine, {"key": "k", "memory": {"content": "a keyed memory"}})
        with Session(engine.db) as db:
            row = db.scalars(select(tables.FactRow).where(tables.FactRow.kv_key == "k")).one()  # type: ignore[arg-type]
        assert row.record_id == IDS[2]
        assert row.created_at == FIXED + timedelta(hours=2)
    finally:
        engine.db.dispose()


def test_an_import_mints_ids_from_the_generator_and_keeps_given_ones(
    home: Path, tmp_path: Path
) -> None:
    engine = _open(home, iter(IDS).__next__, lambda: FIXED)
    source = tmp_path / "facts.jsonl"
    items = [
        {"text": "Carol moved to Berlin", "scopes": ["user:carol"]},
        {"text": "Dan plays chess", "scopes": ["user:dan"], "recordId": "mem-aaaaaaaaaaaaaaaa"},
    ]
    source.write_text("".join(json.dumps(i) + "\n" for i in items), encoding="utf-8")
    try:
        report = transfer.run_import(engine, source)
        assert report.count("add") == 2
        with Session(engine.db) as db:
            rows = {r.text: r for r in db.scalars(select(tables.FactRow))}
        assert rows["Carol moved to Berlin"].record_id == IDS[0]
        assert rows["Carol moved to Berlin"].created_at == FIXED
        assert rows["Dan plays chess"].record_id == "mem-aaaaaaaaaaaaaaaa"
    finally:
        engine.db.dispose()


def test_counted_ids_are_reproducible_and_spread() -> None:
    first, second = counted_record_ids(), counted_record_ids()
    made = [first() for _ in range(50)]
    assert made == [second() for _ in range(50)]
    assert all(is_record_id(i) for i in made)
    assert len({i[4:12] for i in made}) == 50  # distinct docids (the first 8 hex)
    assert counted_record_ids("other")() != made[0]


def test_the_default_ids_are_random_record_ids(home: Path) -> None:
    engine = _open(home, None, lambda: FIXED)
    try:
        made = {engine.new_record_id() for _ in range(100)}
        assert len(made) == 100 and all(is_record_id(i) for i in made)
    finally:
        engine.db.dispose()


def test_a_generator_that_returns_no_record_id_is_refused_before_anything_is_written(
    home: Path, probe: Any
) -> None:
    engine = _open(home, lambda: "0123456789abcdef", lambda: FIXED)
    try:
        with pytest.raises(MemoryFailure) as failure:
            _add(engine, "Alice drinks green tea")
        assert failure.value.code == "MEMORY_INTERNAL"
        assert probe.state() == (0, 0)
    finally:
        engine.db.dispose()
