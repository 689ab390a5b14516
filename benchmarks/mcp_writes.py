"""MCP write throughput: real `gno-tui --home H mcp --enable-write` servers over stdio, driven by
the official MCP client, each call a `gno_remember` add of a distinct text; then a check that
every acknowledged write is in the store (its fact file, and its row in the index).

    python benchmarks/mcp_writes.py [--writes 500] [--in-flight 1,8] [--lexical] [--model DIR]
                                    [--baseline SRC --rounds 3]

Scenarios, each on a fresh home:
- one client process, IN_FLIGHT calls at a time on its connection (1: an agent that waits for
  each answer; more: an agent, or a host, that sends the next write before the last answer);
- four client processes, one server each, all on one home, each with IN_FLIGHT calls at once.

Each client is a separate process (this script re-run with --client), so the clients' own JSON
and schema work does not share one interpreter. Latency is per call, as the client sees it.

On a machine that is not idle, absolute rates say little: `--baseline SRC` (a source tree,
e.g. `git archive HEAD | tar -x -C SRC` of the code before a change) also serves every
scenario from SRC (on PYTHONPATH), alternating with this tree, each scenario `--rounds` times;
the report has both, medians over the rounds, measured under the same load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import machine, write_report

CONSOLE_SCRIPT = Path(sys.executable).parent / "gno-tui"


# -- one client process ---------------------------------------------------------------------


async def _client(home: str, name: str, count: int, in_flight: int, go: str, out: str) -> None:
    import anyio
    import mcp_types as types
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=str(CONSOLE_SCRIPT),
        args=["--home", home, "mcp", "--enable-write"],
        env=_server_env(),
    )
    info = types.Implementation(name=name, version="1.0")
    acknowledged: list[dict[str, Any]] = []
    errlog = Path(f"{out}.server-stderr").open("w", encoding="utf-8")  # noqa: SIM115
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(read, write, client_info=info, read_timeout_seconds=120) as s:
            await s.initialize()
            await s.list_tools()  # the client validates results against the output schema
            # One warm-up call outside the timing (the first write opens what stays open).
            await s.call_tool("gno_remember", _arguments(name, -1))
            Path(f"{out}.ready").touch()
            while not Path(go).exists():
                await anyio.sleep(0.005)
            indexes = iter(range(count))
            cpu = _cpu_seconds()
            started = time.perf_counter()

            async def worker() -> None:
                for index in indexes:
                    begun = time.perf_counter()
                    result = await s.call_tool("gno_remember", _arguments(name, index))
                    took = time.perf_counter() - begun
                    document = result.structured_content or {}
                    ok = not result.is_error and document.get("outcome") == "added"
                    acknowledged.append(
                        {
                            "ok": ok,
                            "latency": took,
                            "recordId": document.get("record", {}).get("recordId"),
                            "absPath": document.get("absPath"),
                            "sync": document.get("sync"),
                            "error": None if ok else document,
                        }
                    )

            async with anyio.create_task_group() as group:
                for _ in range(in_flight):
                    group.start_soon(worker)
            elapsed = time.perf_counter() - started
            cpu_used = [after - before for before, after in zip(cpu, _cpu_seconds(), strict=True)]
    Path(out).write_text(
        json.dumps({"elapsed": elapsed, "cpu": cpu_used, "calls": acknowledged}),
        encoding="utf-8",
    )


def _cpu_seconds() -> tuple[float, float]:
    """CPU seconds so far of this client process and of its server (its one child)."""
    import psutil

    me = psutil.Process()
    times = me.cpu_times()
    server = sum(sum(child.cpu_times()[:2]) for child in me.children(recursive=True))
    return times.user + times.system, server


def _arguments(name: str, index: int) -> dict[str, Any]:
    return {
        "text": f"Benchmark fact {index} from {name}: ledger line {index} of client {name}",
        "scopes": ["bench", f"client:{name}"],
        "decision": "add",
    }


def _server_env() -> dict[str, str]:
    env = dict(os.environ)
    for name in ("GNO_TUI_HOME", "GNO_TUI_DB", "GNO_TUI_CALLER", "GNO_TUI_SESSION"):
        env.pop(name, None)
    return env


# -- a scenario -----------------------------------------------------------------------------


def run_scenario(
    clients: int, writes: int, in_flight: int, source: str | None = None
) -> dict[str, Any]:
    """One scenario on a fresh home; `source`: serve it from that source tree instead."""
    work = Path(tempfile.mkdtemp(prefix="gno-mcp-writes-"))
    env = os.environ.copy()
    env.pop("PYTHONPATH", None)
    if source is not None:
        env["PYTHONPATH"] = source  # the servers' imports; the clients need only the SDK
    home = work / "home"
    go = work / "go"
    outs = [work / f"client-{i}.json" for i in range(clients)]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                __file__,
                "--client",
                str(home),
                f"c{i}",
                str(writes),
                str(in_flight),
                str(go),
                str(out),
            ],
            env=env,
        )
        for i, out in enumerate(outs)
    ]
    deadline = time.monotonic() + 120
    while not all(Path(f"{out}.ready").exists() for out in outs):
        if time.monotonic() > deadline or any(p.poll() not in (None, 0) for p in procs):
            raise SystemExit("a client did not start")
        time.sleep(0.01)
    wall_start = time.perf_counter()
    go.touch()
    for proc in procs:
        if proc.wait(timeout=600) != 0:
            raise SystemExit(f"a client failed (exit {proc.returncode})")
    wall = time.perf_counter() - wall_start
    reports = [json.loads(out.read_text(encoding="utf-8")) for out in outs]
    calls = [call for report in reports for call in report["calls"]]
    latencies = sorted(call["latency"] for call in calls)
    acked = [call for call in calls if call["ok"]]
    lost = _lost(home, acked)
    shutil.rmtree(work, ignore_errors=True)  # a home per scenario: nothing left in /tmp
    return {
        "clients": clients,
        "in_flight": in_flight,
        "writes": len(calls),
        "acked": len(acked),
        "failed": len(calls) - len(acked),
        "sync_failed": sum(1 for call in acked if call["sync"] != {"status": "completed"}),
        # Throughput over the slowest client's span: every write was sent and answered in it.
        "per_s": len(acked) / max(report["elapsed"] for report in reports),
        "wall_s": wall,
        "p50_ms": 1000 * statistics.median(latencies),
        "p95_ms": 1000 * latencies[int(0.95 * (len(latencies) - 1))],
        "lost": lost,
        # CPU per acknowledged write, over the timed span: the clients' and the servers'.
        "client_cpu_ms": 1000 * sum(r["cpu"][0] for r in reports) / max(len(acked), 1),
        "server_cpu_ms": 1000 * sum(r["cpu"][1] for r in reports) / max(len(acked), 1),
    }


def _lost(home: Path, acked: list[dict[str, Any]]) -> int:
    """Acknowledged writes missing as a fact file or as an index row (read with plain sqlite,
    not through the engine, so that opening a home cannot repair anything first)."""
    import sqlite3

    connection = sqlite3.connect(f"file:{home / 'index.sqlite'}?mode=ro", uri=True)
    try:
        rows = {row[0] for row in connection.execute("SELECT record_id FROM facts")}
    finally:
        connection.close()
    return sum(
        1
        for call in acked
        if call["recordId"] not in rows or not Path(call["absPath"] or "/nonexistent").is_file()
    )


def _load_note() -> str:
    one, five, _ = os.getloadavg()
    return f"load average before the run {one:.2f} (1 min), {five:.2f} (5 min)"


_COLUMNS = [
    "client processes",
    "calls in flight each",
    "writes",
    "writes/s (all)",
    "p50 ms",
    "p95 ms",
    "errors",
    "sync failed",
    "lost",
    "client CPU ms/write",
    "server CPU ms/write",
]


def _row(result: dict[str, Any]) -> list[object]:
    return [
        result["clients"],
        result["in_flight"],
        result["writes"],
        f"{result['per_s']:.0f}",
        f"{result['p50_ms']:.1f}",
        f"{result['p95_ms']:.1f}",
        result["failed"],
        result["sync_failed"],
        result["lost"],
        f"{result['client_cpu_ms']:.1f}",
        f"{result['server_cpu_ms']:.1f}",
    ]


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The rounds of one scenario: medians of the rates and times, sums of the counts."""
    merged = dict(runs[0])
    for name in ("per_s", "p50_ms", "p95_ms", "client_cpu_ms", "server_cpu_ms", "wall_s"):
        merged[name] = statistics.median(run[name] for run in runs)
    for name in ("writes", "acked", "failed", "sync_failed", "lost"):
        merged[name] = sum(run[name] for run in runs)
    return merged


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--writes", type=int, default=500, help="writes per client")
    parser.add_argument("--in-flight", default="1,8", help="calls at once per client, a list")
    parser.add_argument("--lexical", action="store_true", help="no model: lexical mode")
    parser.add_argument("--model", help="model folder (default: the bundled one)")
    parser.add_argument("--name", default="mcp_writes", help="report name under results/")
    parser.add_argument("--baseline", help="a source tree to serve each scenario from as well")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each scenario (medians)")
    parser.add_argument("--client", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        import anyio

        home, name, count, in_flight, go, out = args.client
        anyio.run(_client, home, name, int(count), int(in_flight), go, out)
        return 0
    if args.lexical:
        os.environ["GNO_TUI_MODEL"] = "/nonexistent/gno-tui-bench-model"
    elif args.model:
        os.environ["GNO_TUI_MODEL"] = args.model
    load = _load_note()
    sources: list[tuple[str, str | None]] = [("this tree", None)]
    if args.baseline:
        sources.insert(0, ("baseline", str(Path(args.baseline).resolve())))
    runs: dict[tuple[int, int, str], list[dict[str, Any]]] = {}
    scenarios = [(c, int(f)) for f in args.in_flight.split(",") for c in (1, 4)]
    for _round in range(args.rounds):
        for clients, in_flight in scenarios:
            for label, source in sources:  # alternating, so both see the same load
                result = run_scenario(clients, args.writes, in_flight, source)
                print(json.dumps({"code": label, **result}), file=sys.stderr)
                runs.setdefault((clients, in_flight, label), []).append(result)
    rows = [
        ([label] if args.baseline else []) + _row(_median_run(runs[(clients, in_flight, label)]))
        for clients, in_flight in scenarios
        for label, _source in sources
    ]
    notes = [
        f"machine: {machine()}; {load}, after {os.getloadavg()[0]:.2f}",
        "model: " + ("none (lexical)" if args.lexical else args.model or "the bundled one"),
        "each client its own process and its own `gno-tui mcp --enable-write` server "
        "(stdio, official MCP client); all servers of a row share one fresh home",
        "lost: acknowledged (`added`) writes without their fact file or index row afterwards",
    ]
    if args.baseline:
        notes.append(
            f"baseline: servers run from {args.baseline} (PYTHONPATH), alternating with this "
            f"tree; {args.rounds} round(s), medians (counts summed)"
        )
    write_report(args.name, (["code"] if args.baseline else []) + _COLUMNS, rows, notes=notes)
    return 0


if __name__ == "__main__":
    sys.exit(main())
