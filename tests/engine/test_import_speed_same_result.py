"""The batched import writes what remembering its items one by one writes: the same fact files
byte for byte, the same rows, the same vectors, and the same review-queue entries (a likely
duplicate queued with the store's facts and the file's earlier items as its candidates).

The one-by-one side decides each item as the import's dedup promises: an exact duplicate in
scope is skipped, a likely one is held for a person (remember with hold_writes), anything else
is added; both stores mint the same record ids from the same generator at the same instant."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.contract.normalize import counted_record_ids
from engine.facade.factory import open_engine
from engine.interop import transfer
from engine.memory.remember import RememberRequest, propose, remember
from engine.retrieval.embeddings import EmbedderStatus, load_embedder
from engine.storage.store import MemoryEngine

AT = datetime(2026, 5, 4, 9, 30, 0, 125000, tzinfo=UTC)
CALLER = "import"
STORE = [
    ("The deploy runs on Fridays after lunch", "team:infra"),
    ("Erin rides a red bicycle to work", "user:erin"),
    # A weak-tier match (0.74) of an item held as a likely duplicate of the deploy fact: the
    # proposal lists it too, as remember's propose does.
    ("The deploy runs on Mondays before noon", "team:infra"),
]
ITEMS: list[dict[str, Any]] = [
    {"text": "Alice drinks green tea every morning", "scopes": ["user:alice"]},
    {"text": "Alice drinks green tea every morning.", "scopes": ["user:alice"]},
    {"text": "Bob keeps two cats at home", "scopes": ["user:bob"], "source": "chat 2026-04-01"},
    {"text": "The deploy runs on Fridays after lunch", "scopes": ["team:infra"]},
    {"text": "The deploy runs on Fridays, after lunch.", "scopes": ["team:infra"]},
    {"text": 'Carol said: "ship it" #1', "scopes": ["user:carol", "team:x"]},
    {"text": "Dan's birthday is 2026-05-04", "scopes": ["user:dan"], "caller": "hr-bot"},
    {"text": "Bob keeps two cats at home", "scopes": ["user:bob"]},
    {"text": "Erin rides a red bicycle to work!", "scopes": ["user:erin"], "session": "s2"},
    {"text": "Frank moved to Lisbon in March", "scopes": ["user:frank"]},
    {"text": "Alice drinks green tea each morning", "scopes": ["user:alice"]},
]


def _engine(home: Path, status: EmbedderStatus) -> MemoryEngine:
    return open_engine(
        home=home, embedder_status=status, clock=lambda: AT, ids=counted_record_ids()
    )


def _seeded(home: Path, status: EmbedderStatus) -> MemoryEngine:
    engine = _engine(home, status)
    for text, scope in STORE:
        request = RememberRequest(
            text=text, scopes=[scope], caller="c", session="s", decision="add"
        )
        assert remember(engine, request)["outcome"] == "added"
    return engine


def _one_by_one(engine: MemoryEngine, source: Path) -> list[str]:
    """Each item remembered in file order, decided as the import decides; the actions."""
    actions = []
    for item in ITEMS:
        request = RememberRequest(
            text=item["text"],
            scopes=item["scopes"],
            caller=item.get("caller", CALLER),
            session=item.get("session", f"import:{source.name}"),
            source=item.get("source"),
            decision="add",
            created_by="import",
        )
        looked = propose(engine, RememberRequest(**{**request.__dict__, "decision": "propose"}))
        if looked["outcome"] == "existing":
            actions.append("skip")
        elif any(c["match"] in ("likely", "exact") for c in looked["candidates"]):
            assert remember(engine, request, hold_writes=True, origin="import")["outcome"] == (
                "candidates"
            )
            actions.append("propose")
        else:
            assert remember(engine, request)["outcome"] == "added"
            actions.append("add")
    return actions


def _tables(home: Path) -> dict[str, list[tuple[Any, ...]]]:
    db = sqlite3.connect(home / "index.sqlite")
    try:
        return {
            "facts": db.execute("SELECT * FROM facts ORDER BY record_id").fetchall(),
            "fact_scopes": db.execute("SELECT * FROM fact_scopes ORDER BY 1, 2").fetchall(),
            "proposals": db.execute(
                "SELECT origin, state, text, scopes, collection, caller, session, source, "
                "decision, predecessor, candidates, matching, created_at FROM proposals "
                "ORDER BY id"
            ).fetchall(),
            "vectors": db.execute(
                "SELECT record_id, content_hash, vector FROM embeddings ORDER BY record_id"
            ).fetchall(),
        }
    finally:
        db.close()


def _files(home: Path) -> dict[str, bytes]:
    root = home / "collections" / "memory" / "facts"
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.md"))}


def _candidates(proposal_row: tuple[Any, ...]) -> list[dict[str, Any]]:
    return list(json.loads(proposal_row[10]))


@pytest.fixture(params=["bundled model", "lexical"])
def status(request: pytest.FixtureRequest) -> EmbedderStatus:
    if request.param == "lexical":
        return EmbedderStatus(None, "tests: lexical")
    loaded = load_embedder()
    assert loaded.embedder is not None, loaded.unavailable_reason
    return loaded


# It reads both stores' SQLite files and fact files themselves (the server mode has neither;
# tests/pg/test_server_mode.py compares its rows through export).
@pytest.mark.sqlite_only
def test_an_import_writes_what_remembering_each_item_writes(
    status: EmbedderStatus, tmp_path: Path
) -> None:
    source = tmp_path / "items.jsonl"
    source.write_text("".join(json.dumps(item) + "\n" for item in ITEMS), encoding="utf-8")
    batched, single = tmp_path / "batched", tmp_path / "single"
    engine = _seeded(batched, status)
    report = transfer.run_import(engine, source, caller=CALLER)
    engine.db.dispose()
    other = _seeded(single, status)
    actions = _one_by_one(other, source)
    other.db.dispose()

    assert [a["action"] for a in report.actions] == actions
    # The file holds each kind of item: new facts, both kinds of duplicate, and skips.
    assert {"add", "propose", "skip"} <= set(actions)
    assert _files(batched) == _files(single)
    got, want = _tables(batched), _tables(single)
    assert got["facts"] == want["facts"]
    assert got["fact_scopes"] == want["fact_scopes"]
    assert [row[:2] for row in got["vectors"]] == [row[:2] for row in want["vectors"]]
    for mine, theirs in zip(got["vectors"], want["vectors"], strict=True):
        # One batch or one text at a time: the same vector up to float rounding.
        np.testing.assert_allclose(
            np.frombuffer(mine[2], np.float32), np.frombuffer(theirs[2], np.float32), atol=1e-6
        )
    assert len(got["proposals"]) == len(want["proposals"]) == actions.count("propose")
    for mine, theirs in zip(got["proposals"], want["proposals"], strict=True):
        assert mine[:10] + mine[11:] == theirs[:10] + theirs[11:]
        ours, one_by_one = _candidates(mine), _candidates(theirs)
        assert [c["recordId"] for c in ours] == [c["recordId"] for c in one_by_one]
        for a, b in zip(ours, one_by_one, strict=True):
            assert a["similarity"] == pytest.approx(b["similarity"], abs=2e-4)
            assert {**a, "similarity": 0} == {**b, "similarity": 0}
