"""`gno-tui import` at its limits (issue 39, items 3 and 8): a full disk answers a coded store
error that says so, writes nothing and leaves a store that works once space is freed (import,
remember and reindex alike); an empty file is refused rather than reported as done; an item
whose caller or session is empty is refused with its line, as the contract refuses an empty
caller (docs/contract.md section 4).

The full-disk tests write the home on a small tmpfs they mount (root only; they skip, saying
why, where mounting is not allowed) and fill it up to a chosen free space."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from small_disk import fill, mounted_small_disk


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    with mounted_small_disk(tmp_path) as mount:
        yield mount


def long_items(path: Path, count: int = 120) -> Path:
    """`count` distinct items of about 3 KB, one scope each (no two are near duplicates)."""
    with path.open("w", encoding="utf-8") as out:
        for n in range(count):
            words = " ".join(f"w{n}x{k}" for k in range(400))[:3000]
            out.write(json.dumps({"text": f"Item {n}: {words}", "scopes": [f"s{n}"]}) + "\n")
    return path


def leftovers(home: Path) -> list[Path]:
    """What a write that failed must not leave: staging folders and temp files."""
    return sorted([*home.rglob(".import-*"), *home.rglob(".tmp-*")])


def assert_says_the_disk_is_full(result, disk: Path) -> None:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert result.error is not None, result.stdout
    assert result.error["code"] == "MEMORY_SYNC_FAILED", result.error
    message = result.error["message"]
    assert "The disk is full" in message, message
    assert str(disk) in message, message  # where
    assert "free some space" in message.lower(), message  # what to do


# -- a full disk ------------------------------------------------------------------------------


# 128 KiB: the fact files cannot be staged (before: MEMORY_INTERNAL "OSError: [Errno 28]");
# 900 KiB: the files fit but the index's commit does not (before: MEMORY_INTERNAL
# "PendingRollbackError", the failed commit's connection used again).
@pytest.mark.embedded_mode
@pytest.mark.parametrize("leave_kib", [128, 900])
def test_an_import_on_a_full_disk_says_so_writes_nothing_and_can_be_run_again(
    cli, make_probe, small_disk, tmp_path, leave_kib
):
    home = small_disk / "home"
    probe = make_probe(home)
    before = cli("remember", "A fact from before the disk filled up", "--scope", "s", "--add",
                 "--json", home=home)  # fmt: skip
    assert before.returncode == 0, before.stdout
    source = long_items(tmp_path / "items.jsonl")
    filler = fill(small_disk, leave_kib)

    refused = cli("import", str(source), "--json", home=home)

    assert_says_the_disk_is_full(refused, small_disk)
    assert "Nothing was imported" in refused.error["message"]
    assert probe.state() == (1, 1)
    assert probe.query("SELECT count(*) FROM proposals") == [(0,)]
    assert leftovers(home) == []
    filler.unlink()
    again = cli("import", str(source), "--json", home=home)
    assert again.returncode == 0, again.stdout + again.stderr
    assert (again.doc["added"], again.doc["skipped"], again.doc["proposed"]) == (120, 0, 0)
    assert probe.state() == (121, 121)
    report = cli("reindex", "--json", home=home)
    assert (report.doc["added"], report.doc["changed"], report.doc["removed"]) == (0, 0, 0)
    recalled = cli("recall", "Item 7", "--scope", "s7", "--max-tokens", "2000", "--json", home=home)
    assert [fact["text"][:7] for fact in recalled.doc["facts"]] == ["Item 7:"]


@pytest.mark.embedded_mode
def test_remember_on_a_full_disk_says_so_and_stores_nothing(cli, make_probe, small_disk):
    home = small_disk / "home"
    probe = make_probe(home)
    assert cli("remember", "Written before", "--scope", "s", "--add", home=home).returncode == 0
    # The index's shared-memory file stays while a connection holds the index open, so the
    # command opens the store and fails where it writes: the fact file.
    holder = sqlite3.connect(home / "index.sqlite")
    try:
        holder.execute("SELECT count(*) FROM facts").fetchall()
        filler = fill(small_disk, 0)
        refused = cli("remember", "Alice drinks green tea " + "x" * 4000, "--scope", "s",
                      "--add", "--json", home=home)  # fmt: skip
        assert_says_the_disk_is_full(refused, small_disk)
        assert "Nothing was stored" in refused.error["message"]
        filler.unlink()
    finally:
        holder.close()
    assert probe.state() == (1, 1)
    assert leftovers(home) == []
    written = cli("remember", "Alice drinks green tea", "--scope", "s", "--add", "--json",
                  home=home)  # fmt: skip
    assert written.returncode == 0 and written.doc["sync"] == {"status": "completed"}
    assert probe.state() == (2, 2)


@pytest.mark.embedded_mode
def test_reindex_on_a_full_disk_says_so_and_leaves_the_index_as_it_was(
    cli, make_probe, small_disk, tmp_path
):
    home = small_disk / "home"
    probe = make_probe(home)
    assert cli("remember", "Written before", "--scope", "s", "--add", home=home).returncode == 0
    # Fact files the index does not know yet (copied from another home): reindex adds them.
    other = tmp_path / "other"
    assert cli("import", str(long_items(tmp_path / "items.jsonl")), home=other).returncode == 0
    for day in (other / "collections" / "memory" / "facts").iterdir():
        target = home / "collections" / "memory" / "facts" / day.name
        target.mkdir(parents=True, exist_ok=True)
        for fact in day.iterdir():
            shutil.copy2(fact, target / fact.name)
    filler = fill(small_disk, 100)

    refused = cli("reindex", "--json", home=home)

    assert_says_the_disk_is_full(refused, small_disk)
    assert "reindex could not finish" in refused.error["message"]  # its own words, not a write's
    assert probe.query("SELECT count(*) FROM facts") == [(1,)]
    filler.unlink()
    report = cli("reindex", "--json", home=home)
    assert report.returncode == 0, report.stdout
    assert (report.doc["added"], report.doc["indexed"]) == (120, 121)


def _mcp_remember_lines(text: str) -> str:
    """A handshake and one gno_remember add, as a client writes them on stdin."""
    init = {"protocolVersion": "2025-11-25", "capabilities": {}}
    init["clientInfo"] = {"name": "full-disk-agent", "version": "1"}
    arguments = {"text": text, "scopes": ["s"], "decision": "add"}
    messages = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
         "params": {"name": "gno_remember", "arguments": arguments}},
    ]  # fmt: skip
    return "".join(json.dumps(message) + "\n" for message in messages)


@pytest.mark.embedded_mode
def test_keyed_and_mcp_writes_and_a_new_collection_on_a_full_disk_say_so(
    cli, make_probe, small_disk
):
    """The other ways in: a keyed write (`memory remember`), an MCP server's group commit and
    a new collection's folder each say the disk is full, and store nothing."""
    home = small_disk / "home"
    probe = make_probe(home)
    assert cli("remember", "Written before", "--scope", "s", "--add", home=home).returncode == 0
    holder = sqlite3.connect(home / "index.sqlite")  # keeps the index's shared memory
    try:
        holder.execute("SELECT count(*) FROM facts").fetchall()
        filler = fill(small_disk, 0)
        request = json.dumps({"key": "notes/a", "memory": {"content": "k" * 4000}})
        keyed = cli("memory", "remember", "--request", "-", "--json", home=home, stdin=request)
        assert_says_the_disk_is_full(keyed, small_disk)
        served = subprocess.run(
            [cli.script, "--home", str(home), "mcp", "--enable-write"],
            input=_mcp_remember_lines("Bob drinks coffee " + "y" * 4000),
            capture_output=True,
            text=True,
            env=cli.env(home=home),
            timeout=120,
            check=False,
        )
        answers = {m.get("id"): m for m in map(json.loads, served.stdout.splitlines())}
        result = answers[1]["result"]
        assert result["isError"] is True, result
        error = result["structuredContent"]["error"]
        assert error["code"] == "MEMORY_SYNC_FAILED" and "The disk is full" in error["message"]
        added = cli("collection", "add", "notes", "--json", home=home)
        assert added.error is not None and "No space left" in added.error["message"], added
        filler.unlink()
    finally:
        holder.close()
    assert probe.state() == (1, 1)
    assert leftovers(home) == []
    assert cli("collection", "add", "notes", "--json", home=home).returncode == 0


@pytest.mark.embedded_mode
def test_a_home_opened_on_a_disk_with_no_space_left_says_the_disk_is_full(
    cli, make_probe, small_disk
):
    """With not a byte free, SQLite cannot make its log or shared-memory file, nor a new
    home its schema: every command says the disk is full (it said the database server could
    not be reached), and works again once space is freed."""
    old, new = small_disk / "old", small_disk / "new"
    probe = make_probe(old)
    assert cli("remember", "Written before", "--scope", "s", "--add", home=old).returncode == 0
    for leftover in ("index.sqlite-wal", "index.sqlite-shm"):  # a clean close removes them
        (old / leftover).unlink(missing_ok=True)
    filler = fill(small_disk, 0)
    for home in (old, new):
        for command in (
            ("recall", "written", "--scope", "s", "--json"),
            ("status", "--json"),
            ("remember", "Alice drinks green tea", "--scope", "s", "--add", "--json"),
        ):
            assert_says_the_disk_is_full(cli(*command, home=home), home)
    filler.unlink()
    assert probe.state() == (1, 1)
    recalled = cli("recall", "written", "--scope", "s", "--json", home=old)
    assert [fact["text"] for fact in recalled.doc["facts"]] == ["Written before"]
    assert cli("remember", "Alice drinks tea", "--scope", "s", "--add", home=new).returncode == 0


# -- an empty file, an empty caller -----------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "content", "fmt"),
    [
        ("empty.jsonl", "", "jsonl"),
        ("blank.jsonl", "\n  \n\n", "jsonl"),
        ("mem0.json", '{"results": []}', "mem0"),
    ],
)
def test_an_import_of_a_file_without_items_is_refused(cli, probe, tmp_path, name, content, fmt):
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    for dry in ([], ["--dry-run"]):
        refused = cli("import", str(path), "--format", fmt, *dry, "--json")
        assert refused.returncode == 1, refused.stdout
        assert refused.error["code"] == "MEMORY_IMPORT_INVALID"
        assert "holds no items" in refused.error["message"]
        assert "Nothing was imported" in refused.error["message"]
    plain = cli("import", str(path), "--format", fmt)
    assert plain.returncode == 1
    assert "MEMORY_IMPORT_INVALID" in plain.stderr and "holds no items" in plain.stderr
    assert probe.state() == (0, 0)


@pytest.mark.parametrize(("field", "value"), [("caller", ""), ("caller", "   "), ("session", "")])
def test_an_import_item_with_an_empty_identity_is_refused_with_its_line(
    cli, probe, tmp_path, field, value
):
    path = tmp_path / "items.jsonl"
    lines = [
        {"text": "Alice drinks green tea", "scopes": ["user:alice"], "caller": "agent-7"},
        {"text": "Bob moved to Lyon", "scopes": ["user:bob"], field: value},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    refused = cli("import", str(path), "--json")
    assert refused.returncode == 1, refused.stdout
    assert refused.error["code"] == "MEMORY_IMPORT_INVALID"
    assert refused.error["message"].startswith(f"{path}:2: {field} is empty")
    assert probe.state() == (0, 0)
    # Left out, the item is the import's own: recorded as import:<the importer's caller>.
    del lines[1][field]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    assert cli("import", str(path), "--json").returncode == 0
    who = {text: (caller, session) for text, caller, session in probe.query(
        "SELECT text, caller, session FROM facts")}  # fmt: skip
    assert who["Alice drinks green tea"] == ("agent-7", "import:items.jsonl")
    assert who["Bob moved to Lyon"] == ("import:test:agent", "import:items.jsonl")


def test_an_import_from_a_pipe_is_read_once(cli, probe, tmp_path):
    """A JSONL import reads a file twice (to check, then to import); a pipe is read once."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("no named pipes here")
    pipe = tmp_path / "items.pipe"
    os.mkfifo(pipe)
    lines = "".join(
        json.dumps({"text": f"Piped fact {n}", "scopes": [f"s{n}"]}) + "\n" for n in range(5)
    )

    def feed() -> None:
        with pipe.open("w", encoding="utf-8") as out:  # waits for the import to open it
            out.write(lines)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    result = cli("import", str(pipe), "--format", "jsonl", "--json")
    writer.join()
    assert result.returncode == 0, result.stdout + result.stderr
    assert (result.doc["items"], result.doc["added"]) == (5, 5)
    assert sorted(text for _, text in probe.rows()) == [f"Piped fact {n}" for n in range(5)]
