"""Four MCP client processes, one store: each its own write-enabled server, several calls in
flight on each connection, so every server applies its writes in group commits while the other
servers wait on the home's write lock. Correctness only (benchmarks/mcp_writes.py times it):
every acknowledged write (`added`, sync completed) is afterwards its fact file, with its text,
and its index row; no call failed; the files and the index agree (reindex changes nothing)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pg_homes
from mcp_harness import assert_valid, fact_files, server_env
from sqlalchemy import select
from sqlalchemy.orm import Session

from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.schema import tables

CLIENTS = 4
PER_CLIENT = 120
IN_FLIGHT = 8
CLIENT = Path(__file__).with_name("mcp_write_client.py")
TIME_LIMIT_S = 240  # a hang guard, not a performance assertion


def test_four_mcp_client_processes_lose_no_acknowledged_write(
    mcp_home: Path, tmp_path: Path
) -> None:
    outs = [tmp_path / f"client-{n}.jsonl" for n in range(CLIENTS)]
    # The client imports tests/mcp's harness, which imports tests/pg_homes.py.
    path = os.pathsep.join([str(CLIENT.parent), str(CLIENT.parent.parent)])
    env = {**server_env(mcp_home), "PYTHONPATH": path}
    processes = [
        subprocess.Popen(
            [sys.executable, str(CLIENT), str(mcp_home), f"client-{n}"]
            + [str(value) for value in (PER_CLIENT, IN_FLIGHT, out)],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n, out in enumerate(outs)
    ]
    try:
        # Start together: each client says `ready` once its server answered, then waits for
        # a line on its stdin.
        for process in processes:
            assert process.stdout is not None
            assert process.stdout.readline() == "ready\n", process.communicate()[1][-3000:]
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        outputs = [process.communicate(timeout=TIME_LIMIT_S) for process in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    for process, (_, stderr) in zip(processes, outputs, strict=True):
        assert process.returncode == 0, stderr[-3000:]

    calls: list[dict[str, Any]] = [
        json.loads(line) for out in outs for line in out.read_text(encoding="utf-8").splitlines()
    ]
    logs = "".join(Path(f"{out}.server-stderr").read_text(encoding="utf-8") for out in outs)
    assert "Traceback" not in logs and "database is locked" not in logs, logs[-3000:]
    assert len(calls) == CLIENTS * PER_CLIENT
    assert [c for c in calls if c["isError"]] == []
    for call in calls:
        result = assert_valid("remember", call["result"])
        assert result["outcome"] == "added" and result["sync"] == {"status": "completed"}

    # Every acknowledged write is its file, holding its text (on a server: in the export
    # mirror), and its row.
    acknowledged = {c["result"]["record"]["recordId"]: c for c in calls}
    assert len(acknowledged) == len(calls)
    files = {path.stem: path for path in fact_files(mcp_home)}
    assert len(files) == len(calls)
    for record_id, call in acknowledged.items():
        if not pg_homes.server_mode():
            assert Path(call["result"]["absPath"]) == files[record_id].resolve()
        assert call["text"] in files[record_id].read_text(encoding="utf-8")
    store = open_engine(home=mcp_home, embedder_status=EmbedderStatus(None, "test"))
    try:
        with Session(store.db) as session:
            rows = {row.record_id: row for row in session.scalars(select(tables.FactRow))}
        assert set(rows) == set(acknowledged)
        for record_id, call in acknowledged.items():
            assert rows[record_id].text == call["text"]
            assert rows[record_id].docid == call["result"]["record"]["docid"]
        assert store.unfinished_writes() == {}
        report = MemoryService(store).reindex()
    finally:
        store.db.dispose()
    assert (report["added"], report["changed"], report["removed"]) == (0, 0, 0), report
    assert report["indexed"] == len(calls) and report["problems"] == []
