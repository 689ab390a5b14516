"""Many processes, one store: 4 processes write 500 facts each into one SQLite home at once.

Two are `gno-tui --home H mcp --enable-write` servers driven by the official MCP client (four
calls in flight on each connection, so each server also has several engine threads writing).
The other two are CLI-like writers: a Python process that opens the engine exactly as the CLI
does (engine.facade.open_service) and calls remember 500 times. They stand in for 500
`gno-tui remember --add` launches each, which would take minutes of interpreter start-up and
test nothing more about the store: the write path, the lock and the index are the same.

Afterwards no write may be lost (2000 facts indexed, 2000 files), no caller may have seen
"database is locked" or any other error (every result `added`, sync `completed`), the files
and the index must agree (reindex changes nothing), and every result validates."""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp_harness import assert_valid, fact_files, mcp_session, server_env, structured_ok
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.schema import tables

PER_WRITER = 500
IN_FLIGHT = 4  # concurrent tool calls on each MCP connection
WRITER = Path(__file__).with_name("stress_writer.py")
LATENCIES: list[float] = []  # seconds per MCP call, for the printed figures
TIME_LIMIT_S = 240  # a hang guard, not a performance assertion (see docs/contract.md section 12)


async def _drive_mcp(home: Path, name: str, go: Path, results: list[dict[str, Any]]) -> None:
    with (go.parent / f"{name}.stderr").open("w", encoding="utf-8") as errlog:
        async with mcp_session(home, enable_write=True, client_name=name, errlog=errlog) as session:
            await session.list_tools()  # the client validates results against the output schema
            (go.parent / f"{name}.ready").touch()
            while not go.exists():
                await anyio.sleep(0.01)
            indexes = iter(range(PER_WRITER))

            async def worker() -> None:
                for index in indexes:
                    call_started = time.perf_counter()
                    result = await session.call_tool(
                        "gno_remember",
                        {
                            "text": f"Stress fact {index} written by {name}: the {name} ledger "
                            f"entry {index}",
                            "scopes": ["stress", f"writer:{name}"],
                            "decision": "add",
                        },
                    )
                    LATENCIES.append(time.perf_counter() - call_started)
                    results.append(
                        result.structured_content
                        if result.is_error
                        else structured_ok(result, "remember")
                    )

            async with anyio.create_task_group() as group:
                for _ in range(IN_FLIGHT):
                    group.start_soon(worker)


async def test_four_processes_write_one_store(mcp_home: Path, tmp_path: Path) -> None:
    mcp_home.mkdir(parents=True)
    go = tmp_path / "go"
    cli_names = ["cli-a", "cli-b"]
    mcp_names = ["mcp-a", "mcp-b"]
    writers = [
        subprocess.Popen(
            [
                sys.executable,
                str(WRITER),
                str(mcp_home),
                name,
                str(PER_WRITER),
                str(tmp_path / f"{name}.jsonl"),
                str(go),
            ],
            env=server_env(mcp_home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in cli_names
    ]
    mcp_results: dict[str, list[dict[str, Any]]] = {name: [] for name in mcp_names}
    started = 0.0

    async def start_when_ready() -> None:
        nonlocal started
        while not all((tmp_path / f"{name}.ready").exists() for name in mcp_names):
            await anyio.sleep(0.01)
        await anyio.sleep(1.0)  # the CLI writers have opened their engines by now
        started = time.perf_counter()
        go.touch()

    try:
        with anyio.fail_after(TIME_LIMIT_S):
            async with anyio.create_task_group() as group:
                group.start_soon(start_when_ready)
                for name in mcp_names:
                    group.start_soon(_drive_mcp, mcp_home, name, go, mcp_results[name])
            mcp_done = time.perf_counter()
            for process in writers:
                while process.poll() is None:
                    await anyio.sleep(0.05)
    finally:
        for process in writers:
            if process.poll() is None:
                process.kill()
    elapsed = time.perf_counter() - started
    outputs = [process.communicate() for process in writers]
    for process, (_, stderr) in zip(writers, outputs, strict=True):
        assert process.returncode == 0, stderr

    results = {
        name: [json.loads(line) for line in (tmp_path / f"{name}.jsonl").read_text().splitlines()]
        for name in cli_names
    }
    results.update(mcp_results)
    everything = [result for batch in results.values() for result in batch]
    total = len(everything)
    print(
        f"\nstress: {total} writes by {len(results)} processes in {elapsed:.1f} s = "
        f"{total / elapsed:.0f} writes/s (MCP clients done after "
        f"{mcp_done - started:.1f} s)"
    )
    latencies = sorted(LATENCIES)
    print(
        f"stress: MCP call latency median {statistics.median(latencies) * 1000:.0f} ms, "
        f"p99 {latencies[int(0.99 * len(latencies))] * 1000:.0f} ms, "
        f"max {latencies[-1] * 1000:.0f} ms (the write lock waits up to 10 s)"
    )

    # Every caller saw `added` with a completed sync: no lock error, no retry needed.
    surfaced = json.dumps(everything)
    server_logs = "".join((tmp_path / f"{name}.stderr").read_text() for name in mcp_names)
    writer_logs = "".join(stderr for _, stderr in outputs)
    for text in (surfaced, server_logs, writer_logs):
        assert "database is locked" not in text and "Traceback" not in text, text[-2000:]
    problems = [r for r in everything if "error" in r or "crash" in r]
    assert problems == [], problems[:3]
    assert {name: len(batch) for name, batch in results.items()} == dict.fromkeys(
        results, PER_WRITER
    )
    for result in everything:
        assert_valid("remember", result)
        assert result["outcome"] == "added" and result["sync"] == {"status": "completed"}
    assert len({r["record"]["recordId"] for r in everything}) == total
    assert len({r["record"]["docid"] for r in everything}) == total

    # No write lost: every fact is a file and an index row, and they agree.
    assert len(fact_files(mcp_home)) == total == 4 * PER_WRITER
    store = open_engine(home=mcp_home, embedder_status=EmbedderStatus(None, "test"))
    try:
        with Session(store.db) as session:
            indexed = session.scalar(select(func.count()).select_from(tables.FactRow))
            scoped = session.scalar(select(func.count()).select_from(tables.FactScopeRow))
        assert indexed == total and scoped == 2 * total
        reindex_started = time.perf_counter()
        report = MemoryService(store).reindex()
        print(
            f"stress: reindex of {report['files']} files took "
            f"{time.perf_counter() - reindex_started:.1f} s"
        )
    finally:
        store.db.dispose()
    assert (report["added"], report["changed"], report["removed"]) == (0, 0, 0), report
    assert report["indexed"] == total and report["problems"] == []
