"""Crash and corruption through the console script (docs/decisions.md, "Crash and
corruption"): a writer really killed (SIGKILL) between its fact file and its index row (on a
server, where there is no file, inside its one transaction); an index deleted, overwritten
with garbage or cut short under the home; two homes on one index database creating the same
keys at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pg_homes
import pytest

# A writer that dies (SIGKILL, from itself) after its fact file is written and before its row.
KILLED_WRITER = textwrap.dedent(
    """
    import json, os, signal, sys
    from engine.facade.service import open_service
    from engine.keyed import service as keyed
    from engine.memory.remember import RememberRequest
    from engine.retrieval.embeddings import EmbedderStatus
    from engine.storage.store import MemoryEngine

    home, what = sys.argv[1], json.loads(sys.argv[2])
    memory = open_service(home=home, embedder_status=EmbedderStatus(None, "no model"))
    MemoryEngine.index_new_fact = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)
    if what["kind"] == "keyed":
        keyed.remember(memory.engine, what["request"])
    else:
        memory.remember(RememberRequest(**what["request"]))
    print("not killed")
    """
)


def kill_a_writer(home: Path, what: dict) -> None:
    done = subprocess.run(
        [sys.executable, "-c", KILLED_WRITER, str(home), json.dumps(what)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **pg_homes.database_env(home)},
        check=False,
    )
    assert done.returncode == -signal.SIGKILL, (done.returncode, done.stdout, done.stderr)


@pytest.fixture
def prepared(home, make_client):
    client = make_client(home)
    yield client
    client.engine.db.dispose()


def test_a_writer_killed_between_file_and_row_does_not_fork_the_chain(cli, prepared, home, probe):
    old = prepared.add("Alice lives in Paris", "user:alice")["record"]
    prepared.engine.db.dispose()
    kill_a_writer(
        home,
        {
            "kind": "gno",
            "request": {
                "text": "Alice lives in Lyon",
                "scopes": None,
                "caller": "cli:killed",
                "session": "killed",
                "decision": "supersede",
                "predecessor": old["uri"],
                "predecessor_hash": old["contentHash"],
            },
        },
    )
    # Killed: embedded, its file is written and its row is not; on a server, nothing is.
    assert probe.state() == ((1, 1) if probe.server_mode else (2, 1))
    second = cli(
        "remember",
        "Alice lives in Berlin",
        "--supersede",
        old["uri"],
        "--predecessor-hash",
        old["contentHash"],
        "--json",
    )
    if probe.server_mode:
        # No file: the killed write's transaction never committed, so nothing of it is
        # left, and the next supersede of the same head is the one that lands.
        assert second.returncode == 0, second.stderr
        head = "Alice lives in Berlin"
    else:
        # Killed after its file: the file is written, its row is not; opening the home
        # finishes the write, and the second supersede of the old head is refused.
        assert (second.returncode, second.error["code"]) == (4, "MEMORY_SUPERSEDE_CONFLICT")
        assert "unfinished write" in second.stderr  # what opening the home repaired
        head = "Alice lives in Lyon"
    recalled = cli("recall", "where does alice live", "--scope", "user:alice", "--json")
    assert [f["text"] for f in recalled.doc["facts"]] == [head]
    assert recalled.stderr == ""  # nothing left to repair

    report = cli("reindex", "--json")
    assert report.returncode == 0
    assert (report.doc["added"], report.doc["changed"], report.doc["forks"]) == (0, 0, [])
    heads = probe.query("SELECT text FROM facts WHERE superseded_by IS NULL")
    assert heads == [(head,)]
    assert probe.state() == (2, 2)


def test_a_keyed_writer_killed_mid_update_leaves_one_head(cli, home, probe):
    created = cli("memory", "remember", stdin='{"key": "city", "memory": {"content": "Paris"}}')
    assert created.returncode == 0, created.stderr
    kill_a_writer(
        home,
        {
            "kind": "keyed",
            "request": {"key": "city", "if_revision": 1, "memory": {"content": "Lyon"}},
        },
    )
    update = cli(
        "memory",
        "remember",
        "--json",
        stdin='{"key": "city", "if_revision": 1, "memory": {"content": "Berlin"}}',
    )
    if probe.server_mode:  # the killed update never committed: revision 1 is still current
        assert update.returncode == 0, update.stderr
        city = "Berlin"
    else:  # its file was written, so opening the home finished it: revision 1 is stale
        assert (update.returncode, update.error["code"]) == (4, "MEMORY_REVISION_CONFLICT")
        city = "Lyon"
    got = cli("memory", "get", "city", "--json")
    assert (got.doc["revision"], got.doc["memory"]["content"]) == (2, city)
    heads = probe.query(
        "SELECT kv_revision, text FROM facts WHERE kv_key = 'city' AND superseded_by IS NULL"
    )
    assert heads == [(2, city)]


@pytest.mark.sqlite_only
def test_a_deleted_index_is_rebuilt_before_a_command_answers(cli, prepared, home, probe):
    tea = prepared.add("Bob drinks green tea", "user:bob")["record"]
    prepared.engine.db.dispose()
    for leftover in home.glob("index.sqlite*"):
        leftover.unlink()

    recalled = cli("recall", "green tea", "--scope", "user:bob", "--json")
    assert recalled.returncode == 0
    assert [f["recordId"] for f in recalled.doc["facts"]] == [tea["recordId"]]
    assert "missing" in recalled.stderr and "rebuilt" in recalled.stderr
    again = cli("remember", "Bob drinks green tea", "--scope", "user:bob", "--add", "--json")
    assert (again.doc["outcome"], again.doc["record"]["recordId"]) == ("existing", tea["recordId"])
    report = cli("reindex", "--json")
    assert (report.doc["added"], report.doc["changed"], report.doc["notes"]) == (0, 0, [])
    assert probe.state() == (1, 1)


@pytest.mark.sqlite_only
@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_an_unreadable_index_is_set_aside_and_rebuilt(cli, prepared, home, probe, damage):
    prepared.add("Carol likes chess", "user:carol")
    for i in range(200):
        prepared.add(f"Carol note {i}: nothing in particular", "user:carol")
    prepared.engine.db.dispose()
    index = home / "index.sqlite"
    for suffix in ("-wal", "-shm"):
        Path(f"{index}{suffix}").unlink(missing_ok=True)
    data = index.read_bytes()
    index.write_bytes(b"\x00garbage" * 512 if damage == "garbage" else data[: len(data) // 3])

    report = cli("reindex", "--json")
    assert report.returncode == 0, report.stdout
    aside = sorted(home.glob("index.sqlite.corrupt-*"))
    assert aside, "the damaged index was not set aside"
    assert any("corrupt" in note and aside[0].name in note for note in report.doc["notes"])
    assert (report.doc["indexed"], report.doc["added"]) == (201, 201)
    assert "corrupt" in report.stderr
    recalled = cli("recall", "chess", "--scope", "user:carol", "--json")
    assert [f["text"] for f in recalled.doc["facts"]] == ["Carol likes chess"]
    assert probe.state() == (201, 201)


WRITER = textwrap.dedent(
    """
    import json, sys, time
    from pathlib import Path
    from engine.contract.errors import MemoryFailure
    from engine.facade.service import open_service
    from engine.keyed import service as keyed
    from engine.retrieval.embeddings import EmbedderStatus

    home, url, go, name = sys.argv[1:5]
    memory = open_service(home=home, db_url=url, embedder_status=EmbedderStatus(None, "none"))
    while not Path(go).exists():
        time.sleep(0.005)
    outcomes = []
    for i in range(40):
        try:
            keyed.remember(memory.engine, {"key": f"k{i}", "memory": {"content": f"{name} {i}"}})
            outcomes.append("ok")
        except MemoryFailure as failure:
            outcomes.append(failure.code)
    print(json.dumps(outcomes))
    """
)


def test_two_homes_on_one_index_never_give_a_key_two_heads(tmp_path, make_probe):
    # One database both homes name: a SQLite file, or on a server run a database there.
    shared = tmp_path / "shared"
    shared.mkdir()
    url = pg_homes.database_env(shared).get("GNO_TUI_DB", f"sqlite:///{shared / 'index.sqlite'}")
    homes = [tmp_path / "one", tmp_path / "two"]
    for home in homes:  # create the schema first, one home at a time
        from engine.facade.factory import open_engine
        from engine.retrieval.embeddings import EmbedderStatus

        open_engine(home=home, db_url=url, embedder_status=EmbedderStatus(None, "x")).db.dispose()
    go = tmp_path / "go"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(home), url, str(go), home.name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for home in homes
    ]
    go.touch()
    outcomes = []
    for writer in writers:
        out, err = writer.communicate(timeout=120)
        assert writer.returncode == 0, err
        outcomes.append(json.loads(out))
    heads = make_probe(shared).query(
        "SELECT kv_key, count(*) FROM facts WHERE kv_key IS NOT NULL "
        "AND superseded_by IS NULL GROUP BY kv_key"
    )
    assert sorted(heads) == sorted((f"k{i}", 1) for i in range(40))
    for first, second in zip(*outcomes, strict=True):
        assert "ok" in (first, second)
        assert {first, second} <= {"ok", "MEMORY_KEY_EXISTS"}
