"""`gno-tui backup` and `gno-tui restore` through the installed console script, in the
storage mode the suite runs in (embedded by default; server mode on PostgreSQL with
$GNO_TUI_TEST_PG, where every home is given a database of its own: tests/pg_homes.py).

A restored store answers the same recalls (same facts, same order, same scores), the old
receipts still verify (the fence recognises them), chains and a key's history are whole, and
the person's decisions, proposals and tokens are there. A backup taken while a writer process
writes is one instant of the store. A damaged backup or a store that is not empty is refused
with a code, and nothing is written."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pg_homes
import pytest

WRITER = Path(__file__).with_name("backup_writer.py")
WAIT_S = 120  # a hang guard for a process's next line, not a timing assertion


# -- the store written before the backup ---------------------------------------------------


def _recall_facts(result: Any) -> list[tuple[str, str, float, str]]:
    assert result.returncode == 0, (result.stdout, result.stderr)
    return [(f["recordId"], f["text"], f["score"], f["spanHash"]) for f in result.doc["facts"]]


QUERIES = (
    ("what does alice drink", "user:alice"),
    ("where does carol live", "user:carol"),
    ("project deadline", "project:x"),
    ("tea coffee water", "user:alice", "user:bob", "user:carol"),
)


def _recall(cli: Any, env: dict[str, str], query: tuple[str, ...], home: Path) -> Any:
    scopes = [arg for scope in query[1:] for arg in ("--scope", scope)]
    return cli("recall", query[0], *scopes, "--json", env=env, home=home)


def _write_store(cli: Any, env: dict[str, str], home: Path, model: Path) -> dict[str, Any]:
    """Facts in two collections, a chain superseded twice, a key with two revisions, recalls
    (receipts), a person's decisions on proposals, a policy change and a token."""
    from engine.facade import Decision, RememberRequest, open_service

    def ok(*args: str, stdin: str | None = None) -> Any:
        done = cli(*args, "--json", env=env, stdin=stdin)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.doc

    ok("collection", "add", "team", "--policy", "lan")
    ok("remember", "Alice drinks green tea", "--scope", "user:alice", "--add")
    ok("remember", "Bob likes black coffee", "--scope", "user:bob", "--add")
    ok(
        "remember",
        "The project deadline is on friday",
        "--scope",
        "project:x",
        "--add",
        "--collection",
        "team",
    )
    head = ok("remember", "Carol lives in Paris", "--scope", "user:carol", "--add")["record"]
    for text in ("Carol moved to Lyon", "Carol lives in Berlin"):
        head = ok(
            "remember", text, "--supersede", head["uri"], "--predecessor-hash", head["contentHash"]
        )["record"]
    first = ok(
        "memory",
        "remember",
        stdin=json.dumps(
            {"key": "prefs/carol", "memory": {"content": "Carol drinks water", "tags": ["drink"]}}
        ),
    )
    ok(
        "memory",
        "remember",
        stdin=json.dumps(
            {
                "key": "prefs/carol",
                "if_revision": first["revision"],
                "memory": {"content": "Carol drinks black tea"},
            }
        ),
    )
    token = ok("token", "create", "bot", "--scope", "user:alice", "--write")["token"]
    receipts = []
    for query in QUERIES:
        result = _recall(cli, env, query, home)
        assert result.doc["facts"], (query, result.doc)
        receipts.append(result.doc)

    service = open_service(home=home, model=model)
    try:
        held = [
            service.remember(
                RememberRequest(
                    text=text, scopes=["user:bob"], caller="mcp:agent", session="s1", decision="add"
                ),
                hold_writes=True,
                origin="mcp",
            )
            for text in ("Bob moved to Berlin", "Bob likes zebra stripes", "Bob drinks water")
        ]
        assert all(result["outcome"] == "candidates" for result in held)
        first_id, second_id, _pending = (p["id"] for p in service.curation.proposals())
        service.curation.decide(Decision(first_id, "add", actor="person:ann"))
        service.curation.decide(
            Decision(second_id, "reject", actor="person:ann", reason="not a fact")
        )
    finally:
        service.close()
    ok("collection", "set-policy", "team", "remote")
    return {"token": token, "receipts": receipts, "head": head}


def _store_view(cli: Any, env: dict[str, str], home: Path, model: Path) -> dict[str, Any]:
    """Everything a person could compare between two stores, read through the CLI and the
    façade: recalls, every fact with its history, chains, a key's history, the decision log,
    proposals, tokens, collections."""
    from engine.facade import FactQuery, open_service

    def doc(*args: str) -> Any:
        done = cli(*args, "--json", env=env, home=home)
        assert done.returncode == 0, (args, done.stdout, done.stderr)
        return done.doc

    exported = cli("export", "--format", "jsonl", env=env, home=home)
    assert exported.returncode == 0, exported.stderr
    service = open_service(home=home, model=model)
    try:
        head = service.facts.page(FactQuery(scope="user:carol", status="current"))
        chain = [
            (row.record_id, row.text, row.superseded_by)
            for row in service.facts.chain(head.rows[0].record_id)
        ]
        decisions = [
            {k: v for k, v in entry.items() if k != "id"}
            for entry in service.curation.decision_log()
        ]
    finally:
        service.close()
    return {
        "recalls": [_recall_facts(_recall(cli, env, query, home)) for query in QUERIES],
        "facts": sorted(exported.stdout.splitlines()),
        "chain": chain,
        "key": doc("memory", "history", "prefs/carol"),
        "decisions": decisions,
        "proposals": doc("review", "--list", "--all"),
        "tokens": doc("token", "list", "--all"),
        "collections": [
            (c["name"], c["policy"], c["policySource"], c["policyRevision"])
            for c in doc("collection", "list")["collections"]
        ],
    }


def test_a_restored_store_answers_the_same_recalls_receipts_and_chains(
    tmp_path: Path, make_cli: Any, tiny_model_dir: Path
) -> None:
    home, restored = tmp_path / "home", tmp_path / "restored"
    cli = make_cli(home)
    env = make_cli.env(tiny_model_dir)
    written = _write_store(cli, env, home, tiny_model_dir)
    before = _store_view(cli, env, home, tiny_model_dir)
    assert len(before["chain"]) == 3 and before["chain"][-1][2] is None
    assert len(before["decisions"]) >= 3  # accept, reject, set-policy

    backup = cli("backup", str(tmp_path / "backup"), "--json", env=env)
    assert backup.returncode == 0, (backup.stdout, backup.stderr)
    assert backup.doc["facts"] == len(before["facts"]) and backup.doc["receipts"] >= 4
    assert backup.doc["proposals"] == 3 and backup.doc["decisions"] == len(before["decisions"])
    done = cli("restore", str(tmp_path / "backup"), "--json", env=env, home=restored)
    assert done.returncode == 0, (done.stdout, done.stderr)
    check = done.doc["check"]
    assert (check["added"], check["changed"], check["removed"]) == (0, 0, 0), check
    assert check["problems"] == [] and check["forks"] == [], check
    assert done.doc["facts"] == backup.doc["facts"]

    after = _store_view(cli, env, restored, tiny_model_dir)
    assert after == before

    # Every receipt issued before the backup is the restored store's: presenting one with a
    # text it returned is a replay (the fence verified it), not an unknown receipt.
    for number, saved in enumerate(written["receipts"]):
        path = tmp_path / f"receipt-{number}.json"
        path.write_text(json.dumps(saved), encoding="utf-8")
        fact = saved["facts"][0]
        replay = cli(
            "remember",
            fact["text"],
            "--scope",
            fact["scopes"][0],
            "--add",
            "--receipt",
            str(path),
            "--json",
            env=env,
            home=restored,
        )
        assert replay.error is not None and replay.error["code"] == "MEMORY_FENCED_REPLAY", (
            replay.stdout
        )
    elsewhere = cli(
        "remember",
        fact["text"],
        "--scope",
        fact["scopes"][0],
        "--add",
        "--receipt",
        str(path),
        "--json",
        env=env,
        home=tmp_path / "new",
    )
    assert elsewhere.error is not None and elsewhere.error["code"] == "MEMORY_RECEIPT_INVALID"

    from engine.facade import open_service

    service = open_service(home=restored, model=tiny_model_dir)
    try:
        for saved in written["receipts"]:
            verdict = service.receipts.verify(saved["receipt"])
            assert verdict.digest_ok and verdict.stored, saved["receipt"]["digest"]
        grant = service.access.verify_token(written["token"])  # the agent's token still works
        assert grant is not None and grant.scopes == ("user:alice",) and grant.can_write
    finally:
        service.close()
    if not pg_homes.server_mode():  # the fact files are in the new home
        roots = {item["name"]: Path(item["root"]) for item in done.doc["collections"]}
        assert roots == {n: restored / "collections" / n for n in ("memory", "team")}
        assert len(list(restored.glob("collections/*/facts/*/mem-*.md"))) == len(before["facts"])


# -- refusals --------------------------------------------------------------------------------


def _nothing_written(home: Path) -> bool:
    """No store was made for `home`: no folder (embedded); on the server, its database holds
    what a new home's database holds (tests/pg_homes.py)."""
    if pg_homes.database_of(home) is None:
        return not home.exists()
    return pg_homes.as_made(home)


def test_a_damaged_backup_or_a_store_that_is_not_empty_is_refused(
    tmp_path: Path, make_cli: Any
) -> None:
    home = tmp_path / "home"
    cli = make_cli(home)
    added = cli("remember", "Alice drinks green tea", "--scope", "s", "--add", "--json")
    assert added.returncode == 0, added.stderr
    folder = tmp_path / "backup"
    assert cli("backup", str(folder), "--json").returncode == 0

    # The backup folder exists now: a second backup never writes over it.
    again = cli("backup", str(folder), "--json")
    assert again.error is not None and again.error["code"] == "MEMORY_USAGE_INVALID"
    assert "not empty" in again.error["message"]

    # A store that is not empty: the home just backed up, and a home restored once.
    restored = tmp_path / "restored"
    assert cli("restore", str(folder), "--json", home=restored).returncode == 0
    for target in (home, restored):
        result = cli("restore", str(folder), "--json", home=target)
        assert result.error is not None and result.error["code"] == "MEMORY_STORE_NOT_EMPTY"
        assert result.returncode == 1
        assert "nothing was restored" in result.error["message"]
        exported = cli("export", "--format", "jsonl", home=target)
        assert len(exported.stdout.splitlines()) == 1, target  # one fact, not two

    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    victim = next(n for n in sorted(manifest["files"]) if n.endswith((".md", "facts.jsonl")))
    cases = {"missing": tmp_path / "no-such-backup"}
    damaged = cases["damaged"] = tmp_path / "damaged"
    shutil.copytree(folder, damaged)
    data = bytearray((damaged / victim).read_bytes())
    data[len(data) // 2] ^= 0x20  # one letter's case: a backup edited or rotted on disk
    (damaged / victim).write_bytes(bytes(data))
    cut = cases["cut short"] = tmp_path / "cut"
    shutil.copytree(folder, cut)
    (cut / "manifest.json").unlink()
    for case, source in cases.items():
        target = tmp_path / f"target-{case.replace(' ', '-')}"
        result = cli("restore", str(source), "--json", home=target)
        assert result.error is not None and result.error["code"] == "MEMORY_BACKUP_INVALID", case
        assert result.returncode == 1
        if case == "damaged":
            assert victim in result.error["message"]
        assert _nothing_written(target), case


@pytest.mark.sqlite_only  # a receipt waits beside a busy SQLite index; PostgreSQL has no wait
def test_a_receipt_waiting_for_a_busy_index_is_in_the_backup(tmp_path: Path, make_cli: Any) -> None:
    """A recall while another connection holds the index's write lock stores its receipt
    beside the index (`.receipts-pending/`); a backup taken then holds it, and it verifies in
    the restored store."""
    home, restored = tmp_path / "home", tmp_path / "restored"
    cli = make_cli(home)
    assert cli("remember", "Alice drinks green tea", "--scope", "s", "--add").returncode == 0
    holder = sqlite3.connect(home / "index.sqlite", isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # a writer stopped inside its transaction
    try:
        recalled = cli("recall", "green tea", "--scope", "s", "--json")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    digest = recalled.doc["receipt"]["digest"]
    assert [p.stem for p in (home / ".receipts-pending").glob("*.json")] == [digest]
    assert cli("backup", str(tmp_path / "backup"), "--json").returncode == 0
    assert cli("restore", str(tmp_path / "backup"), "--json", home=restored).returncode == 0
    saved = tmp_path / "recall.json"
    saved.write_text(json.dumps(recalled.doc), encoding="utf-8")
    replay = cli(
        "remember",
        "Alice drinks green tea",
        "--scope",
        "s",
        "--add",
        "--receipt",
        str(saved),
        "--json",
        home=restored,
    )
    assert replay.error is not None and replay.error["code"] == "MEMORY_FENCED_REPLAY"


# -- a backup while a writer writes -----------------------------------------------------------


class Writer:
    """backup_writer.py in a process of its own: supersedes one chain's head over and over
    through the façade, printing each acknowledged write with the time it was acknowledged."""

    def __init__(self, home: Path, stop: Path, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, str(WRITER), str(home), str(stop)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        self.acks: list[dict[str, Any]] = []
        self._seen = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._seen:
                self.acks.append(json.loads(line))
                self._seen.notify_all()
        with self._seen:
            self._seen.notify_all()

    def wait_for(self, count: int) -> None:
        with self._seen:
            ended = self._seen.wait_for(
                lambda: len(self.acks) >= count or self.process.poll() is not None, WAIT_S
            )
        assert ended and len(self.acks) >= count, (len(self.acks), self.stderr())

    def stderr(self) -> str:
        self.process.wait(timeout=WAIT_S)
        assert self.process.stderr is not None
        return self.process.stderr.read()[-2000:]


def _chain_in(probe: Any) -> list[str]:
    """The writer's chain in a restored store, root first; asserts that it has one head, that
    no fact has two successors and that every version is on it."""
    rows = {
        record_id: (
            text,
            json.loads(supersedes) if isinstance(supersedes, str) else supersedes,
            superseded_by,
        )
        for record_id, text, supersedes, superseded_by in probe.query(
            "SELECT record_id, text, supersedes, superseded_by FROM facts WHERE text LIKE ?",
            "writer version %",
        )
    }
    heads = [record_id for record_id, row in rows.items() if row[2] is None]
    assert len(heads) == 1, f"the chain has {len(heads)} heads"
    predecessors = [
        uri.rsplit("/", 1)[-1].removesuffix(".md") for row in rows.values() for uri in row[1]
    ]
    assert len(predecessors) == len(set(predecessors)), "a fact was superseded twice"
    chain = [heads[0]]
    while rows[chain[-1]][1]:
        chain.append(rows[chain[-1]][1][0].rsplit("/", 1)[-1].removesuffix(".md"))
    assert len(chain) == len(rows), f"{len(rows) - len(chain)} versions are off the chain"
    return [rows[record_id][0] for record_id in reversed(chain)]


def test_a_backup_taken_while_a_writer_writes_is_one_instant(
    tmp_path: Path, make_cli: Any, make_probe: Any
) -> None:
    home, stop = tmp_path / "home", tmp_path / "stop"
    cli = make_cli(home)
    env = {**make_cli.env(), **pg_homes.database_env(home)}
    writer = Writer(home, stop, env)
    overlapped = 0
    try:
        for round_number in range(3):
            writer.wait_for(len(writer.acks) + 15)  # writing before the backup starts
            acked_before = len(writer.acks)
            started = time.monotonic()
            folder = tmp_path / f"backup-{round_number}"
            done = cli("backup", str(folder), "--json")
            ended = time.monotonic()
            assert done.returncode == 0, (done.stdout, done.stderr)
            writer.wait_for(len(writer.acks) + 15)  # and after it ended
            during = [ack for ack in writer.acks if started <= ack["at"] <= ended]
            overlapped += bool(during)
            acked_after = max(ack["n"] for ack in writer.acks if ack["at"] <= ended)

            restored = tmp_path / f"restored-{round_number}"
            back = cli("restore", str(folder), "--json", home=restored)
            assert back.returncode == 0, (back.stdout, back.stderr)
            check = back.doc["check"]
            assert (check["added"], check["changed"], check["removed"]) == (0, 0, 0), check
            assert check["problems"] == [] and check["forks"] == [], check
            texts = _chain_in(make_probe(restored))
            print(
                f"backup {round_number}: {len(during)} writes acknowledged while it ran, "
                f"{len(texts) - 1} versions in it, writers paused "
                f"{done.doc['writersPausedMs']} ms"
            )
            # One instant: the chain is the writer's first k versions, k at least what was
            # acknowledged before the backup began and at most one write past what was
            # acknowledged before it ended (committed, its answer on the way).
            assert texts == [f"writer version {n}" for n in range(len(texts))], texts[-3:]
            assert acked_before <= len(texts) - 1 <= acked_after + 1, (
                acked_before,
                len(texts),
                acked_after,
            )
    finally:
        stop.touch()
        writer.process.wait(timeout=WAIT_S)
    assert writer.process.returncode == 0, writer.stderr()
    # The writer kept writing while the backups ran (each takes a console script's start).
    assert overlapped >= 1, "no write was acknowledged while a backup ran"
