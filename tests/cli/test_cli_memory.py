"""remember / recall / review / reindex through the console script.

Stores are prepared through the engine in this process where the preparation is not what is
under test (the index is shared by every process on the home); the behaviour under test runs
through `gno-tui`."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from engine.curation.review import Decision, decide


def canonical_sha256(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@pytest.fixture
def prepared(home, make_client):
    """A lexical engine on the CLI's home, closed after the test."""
    client = make_client(home)
    yield client
    client.engine.db.dispose()


def test_existing_in_intersecting_scope_and_added_in_disjoint(cli, prepared, probe):
    record = prepared.add("Alice drinks green tea", "user:alice", "team:x")["record"]
    existing, disjoint = cli.many(
        [
            ("remember", "Alice  drinks green tea", "--scope", "TEAM:X", "--add", "--json"),
            (
                "remember",
                "Alice drinks green tea",
                "--scope",
                "user:bob",
                "--add",
                "--caller",
                "agent:cli",
                "--session",
                "s-1",
                "--json",
            ),
        ]
    )
    assert (existing.returncode, existing.doc["outcome"]) == (0, "existing")
    assert existing.doc["record"] == record

    assert (disjoint.returncode, disjoint.doc["outcome"]) == (0, "added")
    added = disjoint.doc["record"]
    assert added["recordId"] != record["recordId"]
    assert added["contentHash"] == record["contentHash"]
    assert (added["caller"], added["session"]) == ("agent:cli", "s-1")
    assert disjoint.doc["sync"] == {"status": "completed"}
    assert disjoint.doc["absPath"] == probe.abs_path(added)  # its file, or on a server its uri
    assert probe.server_mode or Path(disjoint.doc["absPath"]).is_file()
    matching = disjoint.doc["matching"]
    assert matching["mode"] == "lexical"
    assert "/nonexistent/gno-tui-test-model" in matching["semanticUnavailable"]
    assert probe.state() == (2, 2)


def test_recall_egress_lineage_receipt_and_empty_answer(cli, prepared, home, tmp_path):
    prepared.engine.add_collection("shared", policy="lan")
    prepared.engine.add_collection("private", policy="local_only")
    lan = prepared.add("Coffee is on the team budget", "team", collection="shared")["record"]
    local = prepared.add("Coffee is my guilty pleasure", "team", collection="private")["record"]

    limited, everything, empty = cli.many(
        [
            ("recall", "coffee", "--scope", "team", "--egress", "lan", "--json"),
            (
                "recall",
                "coffee",
                "--scope",
                "team",
                "--caller",
                "agent:r",
                "--session",
                "r-1",
                "--json",
            ),
            ("recall", "coffee", "--scope", "nobody", "--json"),
        ]
    )
    assert limited.returncode == everything.returncode == empty.returncode == 0

    assert [f["recordId"] for f in limited.doc["facts"]] == [lan["recordId"]]
    assert limited.doc["egressLineage"] == {
        "effectivePolicy": "lan",
        "digest": canonical_sha256(
            [{"collection": "shared", "policy": "lan", "source": "explicit"}]
        ),
        "sources": [{"collection": "shared", "policy": "lan", "source": "explicit"}],
    }

    doc = everything.doc
    assert {f["recordId"] for f in doc["facts"]} == {lan["recordId"], local["recordId"]}
    assert doc["egressLineage"]["effectivePolicy"] == "local_only"
    assert [s["collection"] for s in doc["egressLineage"]["sources"]] == ["private", "shared"]
    assert doc["egressLineage"]["digest"] == canonical_sha256(doc["egressLineage"]["sources"])
    assert doc["retrieval"]["mode"] == "lexical" and doc["retrieval"]["semanticUnavailable"]
    receipt = doc["receipt"]
    assert (receipt["caller"], receipt["session"]) == ("agent:r", "r-1")
    assert receipt["memoryIds"] == [f["recordId"] for f in doc["facts"]]
    assert receipt["spanHashes"] == [f["spanHash"] for f in doc["facts"]]
    assert receipt["digest"] == canonical_sha256(
        {k: receipt[k] for k in ("caller", "session", "issuedAt", "memoryIds", "spanHashes")}
    )
    assert doc["budget"]["usedTokens"] == sum(
        -(-len(f["text"].encode("utf-8")) // 4) for f in doc["facts"]
    )

    assert empty.doc["facts"] == []
    assert "gno-tui remember" in empty.doc["hint"]
    assert "egressLineage" not in empty.doc

    # A valid saved recall does not fence new text.
    saved = tmp_path / "recall.json"
    saved.write_text(everything.stdout, encoding="utf-8")
    fresh = cli(
        "remember",
        "Coffee moved to the kitchen",
        "--scope",
        "team",
        "--add",
        "--receipt",
        str(saved),
        "--json",
    )
    assert (fresh.returncode, fresh.doc["outcome"]) == (0, "added")


def test_review_list_shows_held_writes_until_decided(cli, prepared):
    held = prepared.remember(
        "Bob likes black coffee", ["user:bob"], decision="add", hold_writes=True, origin="mcp"
    )
    assert held["outcome"] == "candidates"
    listed = cli("review", "--list", "--json")
    assert listed.returncode == 0
    (proposal,) = listed.doc["proposals"]
    assert proposal["text"] == "Bob likes black coffee"
    assert (proposal["state"], proposal["origin"], proposal["decision"]) == (
        "pending",
        "mcp",
        "add",
    )
    decide(prepared.engine, Decision(proposal["id"], "add", actor="person:tester"))
    after = cli.here("review", "--list", "--json")
    assert (after.returncode, after.doc) == (0, {"proposals": []})


@pytest.mark.sqlite_only
def test_reindex_rebuilds_a_deleted_index(cli, prepared, home, probe, make_client):
    a = prepared.add("Carol lives in Paris", "user:carol")
    b = prepared.supersede(a, "Carol lives in Lyon")
    other = prepared.add("Carol likes green tea", "user:carol")
    prepared.engine.db.dispose()
    for leftover in home.glob("index.sqlite*"):
        leftover.unlink()

    report = cli("reindex", "--json")
    assert report.returncode == 0
    # Opening the home already rebuilt the missing index; reindex counts that in and says so.
    notes = report.doc.pop("notes")
    assert len(notes) == 1 and "missing" in notes[0] and "rebuilt" in notes[0]
    assert report.doc == {
        "files": 3,
        "indexed": 3,
        "added": 3,
        "changed": 0,
        "removed": 0,
        "problems": [],
        "forks": [],
        "duplicates": [],
    }
    rebuilt = make_client(home)
    try:
        recalled = rebuilt.recall("carol lives likes paris lyon tea", ["user:carol"])
    finally:
        rebuilt.engine.db.dispose()
    assert {f["recordId"] for f in recalled["facts"]} == {
        b["record"]["recordId"],
        other["record"]["recordId"],
    }
    superseded = probe.query(
        "SELECT superseded_by FROM facts WHERE record_id = ?", a["record"]["recordId"]
    )
    assert superseded == [(b["record"]["recordId"],)]


def test_semantic_mode_through_the_cli(cli, tiny_model_dir, probe):
    env = cli.env(model=tiny_model_dir)
    added = cli(
        "remember", "Alice drinks green tea", "--scope", "user:alice", "--add", "--json", env=env
    )
    assert added.returncode == 0, added.stderr
    assert added.doc["matching"]["mode"] == "semantic"
    assert "semanticUnavailable" not in added.doc["matching"]
    recalled = cli("recall", "what does alice drink", "--scope", "user:alice", "--json", env=env)
    assert recalled.doc["retrieval"] == {"mode": "hybrid"}
    assert [f["recordId"] for f in recalled.doc["facts"]] == [added.doc["record"]["recordId"]]
    assert probe.state() == (1, 1)


@pytest.mark.sqlite_only
def test_sync_failure_exits_2_and_reindex_repairs(cli, prepared, home, probe):
    prepared.add("Alice drinks green tea", "user:alice")
    with sqlite3.connect(home / "index.sqlite") as db:
        db.execute(
            "CREATE TRIGGER refuse_facts BEFORE INSERT ON facts "
            "BEGIN SELECT RAISE(ABORT, 'injected index failure'); END"
        )
    failed = cli("remember", "Alice moved to Lyon", "--scope", "user:alice", "--add", "--json")
    assert failed.returncode == 2
    assert failed.doc["outcome"] == "added"
    assert failed.doc["sync"]["status"] == "failed"
    assert "injected index failure" in failed.doc["sync"]["error"]
    assert Path(failed.doc["absPath"]).is_file()
    assert probe.state() == (2, 1)
    with sqlite3.connect(home / "index.sqlite") as db:
        db.execute("DROP TRIGGER refuse_facts")

    report = prepared.memory.reindex()
    assert (report["added"], report["changed"], report["removed"]) == (1, 0, 0)
    found = prepared.recall("lyon", ["user:alice"])
    assert [f["recordId"] for f in found["facts"]] == [failed.doc["record"]["recordId"]]
