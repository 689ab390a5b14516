"""Six writers on three machines sharing one server, one machine's home deleted halfway:
benchmarks/server_team.py in its count mode (each writer a fixed number of operations, so
nothing waits on the clock), on the test session's PostgreSQL 16. The same run as the 60 s
benchmark, smaller: every acknowledged write is in the database and nothing else is, no
chain or key forks, and no writer is shown a lock error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "server_team.py"
OPS = 3  # per writer; each operation is two writes (a fact or key, then a shared head moved)


def test_six_writers_on_three_machines_lose_nothing_and_fork_nothing(
    pg_server: str, tmp_path: Path
) -> None:
    out = tmp_path / "verdict.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--db", pg_server, "--ops", str(OPS), "--json", str(out),
         "--no-results"],
        capture_output=True,
        text=True,
        timeout=900,
    )  # fmt: skip
    assert out.exists(), done.stderr[-3000:]
    verdict = json.loads(out.read_text(encoding="utf-8"))
    assert done.returncode == 0, (verdict, done.stderr[-3000:])
    writers = verdict["writers"]
    assert sorted((w["kind"], w["machine"]) for w in writers.values()) == [
        ("cli", "a"), ("cli", "c"), ("keyed", "b"), ("keyed", "c"), ("mcp", "a"), ("mcp", "b"),
    ]  # fmt: skip
    assert verdict["exits"] == [0] * 6
    # Every writer was answered, and the deleted machine's writers went on writing after it.
    assert all(w["finished"] and w["acknowledged"] > 0 for w in writers.values())
    assert verdict["deleted_at_s"] is not None
    after = [w["acknowledged_after_deletion"] for w in writers.values() if w["machine"] == "c"]
    assert after and all(count > 0 for count in after), writers
    # What the writers were told is what the database holds, and nothing more.
    assert verdict["missing"] == []
    assert verdict["unacknowledged_rows"] == 0
    assert verdict["acknowledged_supersedes"] >= 1
    # One head per chain and per key, however the races went.
    assert set(verdict["chain_heads"].values()) == {1}
    assert verdict["successors"] == 1
    assert set(verdict["key_heads"].values()) == {1}
    assert verdict["key_gaps"] == []
    # A lost compare-and-swap is an answer a writer can act on; nothing else surfaced.
    assert verdict["errors"] == [] and verdict["lock_errors"] == []


def test_the_team_check_sees_a_fork_a_gap_and_a_lost_write() -> None:
    """The verdict above is only as good as its check: fed a forked chain, a key with a
    missing revision and an acknowledged write that is not stored, it reports each."""
    from collections import namedtuple

    from benchmarks import server_team

    Row = namedtuple(
        "Row",
        "record_id text uri supersedes superseded_by retired_at kv_namespace kv_key kv_revision",
    )
    rows = [
        Row("r1", "root", "u1", [], "r2", None, None, None, None),
        Row("r2", "left", "u2", ["u1"], None, None, None, None, None),
        Row("r3", "right", "u3", ["u1"], None, None, None, None, None),  # a second successor
        Row("k1", "v1", "uk1", [], "k3", None, "default", "team/plan", 1),
        Row("k3", "v3", "uk3", ["uk1"], None, None, "default", "team/plan", 3),  # no revision 2
    ]
    assert server_team.chain_heads(rows) == {"root": 2}
    assert server_team.most_successors(rows) == 2
    assert server_team.key_gaps(rows) == ["team/plan"]
    assert server_team.key_heads(rows) == {"team/plan": 1}
    written = {"op": "add", "recordId": "r9", "text": "never stored"}
    assert server_team.missing_writes(
        rows, [written, {"op": "add", "recordId": "r2", "text": "left"}]
    ) == [written]
