"""HTTP server latency and writes: `gno-tui serve` over a 10k-fact store (REST recall and
remember, httpx with keep-alive), beside the stdio MCP server measured in the same run.

    python benchmarks/http_server.py [--facts 10000] [--clients 8] [--queries 500]
                                     [--warmup 50] [--writes 250] [--mcp-writes 500]
                                     [--rounds 2] [--server | --db URL] [--name NAME]

One fresh home of FACTS facts (MSC persona facts over 8 scopes, imported by the installed
`gno-tui import`, as benchmarks/scale.py does), tokens made by `gno-tui token create` (a
reader and a writer for each client: a token holds at most 8 scopes, the reader the 8 persona
scopes, the writer `bench` and its own, --write), and one `gno-tui --home H serve --port 0`
started as a subprocess (the installed console script, one worker). Then, on the same store:

1. HTTP recall, one client: `POST /api/memory/recall` {query, 8 scopes, maxFacts 8, maxTokens
   512}, WARMUP calls untimed then QUERIES timed, one after another on one httpx.Client
   (keep-alive). Queries are persona facts of the data set (seed 7), distinct from the warm-ups.
2. MCP stdio recall, the baseline: the official MCP client over stdio to `gno-tui --home H
   mcp`, `gno_recall` with the same arguments and the same queries; first one call at a time,
   then CLIENTS calls in flight on the one session.
3. HTTP recall, CLIENTS clients: threads, each with its own httpx.Client and token, a few
   warm-ups each, then the QUERIES split among them, all started at once: p50/p95 of every
   call, and throughput (calls over the span from the start to the last answer).
4. HTTP writes, CLIENTS clients: `POST /api/memory/remember` {text, scopes, decision "add"},
   WRITES each after one warm-up (a 201 is sent only once the write's group is committed).
5. MCP stdio writes: benchmarks/mcp_writes.py's own client process (one process, CLIENTS
   calls in flight on its `gno-tui mcp --enable-write` server, MCP_WRITES writes).
Every phase runs --rounds times (2), the stdio ones first in every other round, so neither
transport always meets the store or the machine first; each row pools all rounds' calls.
Lost: every acknowledged write must be in the store afterwards (its row in the index, and its
fact file when the store has files), and the count of facts must have grown by exactly the
acknowledged writes.

The benchmark's clients run in this process (the HTTP ones as threads; the MCP recall client
on an event loop), so "client CPU" is this process's, over the timed span; "server CPU" is
the serving process's (the HTTP server, or the stdio MCP server).

With --server the store is a fresh database on a throwaway PostgreSQL 16 + pgvector
(pgserver, the test extra), with --db URL one on that PostgreSQL server (dropped afterwards):
the server mode, every process given the URL in $GNO_TUI_DB. --facts N changes the store's
size (1M on a server: expect the import to take most of an hour).

Targets (printed PASS/MISS and written in the report): HTTP recall p95 <= 25 ms with one
client and <= 60 ms with 8; HTTP writes >= 400/s with 8 clients and 0 lost.
The report goes to benchmarks/results/http_server.md (with --server/--db:
http_server_pg.md), with the machine and its load average at the start: the machine has 2
cores, often shared, so absolute figures mean little without it.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import mcp_writes
from benchmarks.common import (
    DATA,
    fresh_database,
    machine,
    postgres_server,
    serving,
    write_report,
)
from benchmarks.scale import fact_count, import_store
from benchmarks.speed import SCOPES, corpus, persona_facts

CONSOLE = Path(sys.executable).parent / "gno-tui"
RECALL_BUDGET = {"maxFacts": 8, "maxTokens": 512}
START_TIMEOUT = 180.0

TARGETS = {
    "http recall 1 client p95 ms": 25.0,
    "http recall N clients p95 ms": 60.0,
    "http writes N clients per s": 400.0,
}


# -- small helpers ----------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    """The q-quantile of `values` in ms (nearest rank, as the other benchmarks)."""
    ordered = sorted(values)
    return 1000 * ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def cpu_model() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text(encoding="ascii").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return "?"


def tree() -> str:
    """The commit measured, and whether the served code had uncommitted changes (other work
    in progress in the same tree is served too: the console script runs this tree)."""
    from benchmarks.common import ROOT

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else "?"

    changed = [
        line[3:]
        for line in git("status", "--porcelain", "--", "engine", "gno_tui").splitlines()
        if line.strip()
    ]
    return f"commit {git('rev-parse', '--short', 'HEAD')}" + (
        f" with {len(changed)} uncommitted file(s) in engine/ and gno_tui/" if changed else ""
    )


def child_env() -> dict[str, str]:
    """The environment of every gno-tui process started here: no home, caller or session of
    the person running the benchmark; $GNO_TUI_DB only when this run set it (server mode)."""
    env = dict(os.environ)
    for name in ("GNO_TUI_HOME", "GNO_TUI_CALLER", "GNO_TUI_SESSION", "PYTHONPATH"):
        env.pop(name, None)
    return env


def cli(home: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run(
        [str(CONSOLE), "--home", str(home), *args, "--json"],
        env=child_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        raise SystemExit(f"gno-tui {' '.join(args)} failed: {done.stdout}{done.stderr}")
    return json.loads(done.stdout)


def make_token(home: Path, name: str, scopes: list[str], *, write: bool) -> str:
    args = ["token", "create", name, *(["--write"] if write else [])]
    for scope in scopes:
        args += ["--scope", scope]
    return str(cli(home, *args)["token"])


def cpu_of(pid: int | None) -> float:
    """CPU seconds so far of process `pid` (this process when None) and of its live children
    (`serve --workers N`'s worker processes: the supervisor itself does little)."""
    import psutil

    process = psutil.Process(pid)
    total = 0.0
    for one in [process, *(process.children(recursive=True) if pid is not None else [])]:
        with contextlib.suppress(psutil.NoSuchProcess):
            times = one.cpu_times()
            total += times.user + times.system
    return total


# -- the server -------------------------------------------------------------------------------


@dataclass
class Server:
    url: str
    process: subprocess.Popen[str]
    log: list[str] = field(default_factory=list)


@contextlib.contextmanager
def serve(home: Path, workers: int = 1) -> Iterator[Server]:
    """`gno-tui --home H serve --port 0 --workers N`, its address read from its start line;
    SIGTERM at the end (then waited for)."""
    command = [str(CONSOLE), "--home", str(home), "serve", "--port", "0"]
    with serving([*command, "--workers", str(workers)], child_env(), timeout=START_TIMEOUT) as (
        url,
        process,
        lines,
    ):
        if url is None:
            raise SystemExit("gno-tui serve did not start:\n" + "".join(lines))
        print(f"server: {lines[0].strip()}", file=sys.stderr)
        yield Server(url, process, lines)


# -- HTTP clients (threads) -------------------------------------------------------------------


@dataclass
class Phase:
    """One measured phase: every timed call's latency, the span, CPU and what went wrong."""

    latencies: list[float]
    wall: float
    errors: int
    server_cpu: float
    client_cpu: float
    acked: list[dict[str, Any]] = field(default_factory=list)  # writes: recordId, absPath

    @property
    def count(self) -> int:
        return len(self.latencies)

    def per_s(self) -> float:
        return (self.count - self.errors) / self.wall if self.wall else 0.0


def _recall_body(query: str) -> dict[str, Any]:
    return {"query": query, "scopes": SCOPES, **RECALL_BUDGET}


def _write_body(name: str, index: int) -> dict[str, Any]:
    return mcp_writes._arguments(name, index)  # the MCP writes benchmark's own texts


def http_phase(
    url: str,
    tokens: list[str],
    server_pid: int,
    *,
    kind: str,  # "recall" or "write"
    work: list[list[Any]],  # per client: its timed items (queries, or write indexes)
    warm: list[list[Any]],  # per client: its untimed items
) -> Phase:
    """len(work) clients, each a thread with its own httpx.Client (keep-alive) and token,
    warmed up, then started together; the span runs from that start to the last answer."""
    import httpx

    clients = len(work)
    ready = threading.Barrier(clients + 1)
    done: list[tuple[float, list[float], int, list[dict[str, Any]]]] = [
        (0.0, [], 0, []) for _ in range(clients)
    ]
    failures: list[BaseException] = []

    def call(client: httpx.Client, name: str, item: Any) -> tuple[bool, dict[str, Any]]:
        if kind == "recall":
            response = client.post("/api/memory/recall", json=_recall_body(item))
            return response.status_code == 200, {}
        response = client.post("/api/memory/remember", json=_write_body(name, item))
        body = response.json() if response.status_code in (200, 201) else {}
        ok = response.status_code == 201 and body.get("outcome") == "added"
        if not ok:
            print(f"write refused: {response.status_code} {response.text[:300]}", file=sys.stderr)
        record = body.get("record", {}) if ok else {}
        return ok, {"recordId": record.get("recordId"), "absPath": body.get("absPath")}

    def run(i: int) -> None:
        name = f"h{i}"
        latencies: list[float] = []
        errors = 0
        acked: list[dict[str, Any]] = []
        try:
            with httpx.Client(
                base_url=url, headers={"Authorization": f"Bearer {tokens[i]}"}, timeout=120
            ) as client:
                for item in warm[i]:
                    ok, ack = call(client, name, item)
                    if not ok:
                        raise RuntimeError(f"warm-up call of client {name} failed")
                    if ack:
                        acked.append(ack)
                ready.wait()
                for item in work[i]:
                    begun = time.perf_counter()
                    ok, ack = call(client, name, item)
                    latencies.append(time.perf_counter() - begun)
                    if ok and ack:
                        acked.append(ack)
                    errors += not ok
        except BaseException as exc:  # noqa: BLE001 - reported by the main thread
            failures.append(exc)
            ready.abort()
        done[i] = (time.perf_counter(), latencies, errors, acked)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(clients)]
    for thread in threads:
        thread.start()
    with contextlib.suppress(threading.BrokenBarrierError):
        ready.wait()
    server_before, client_before = cpu_of(server_pid), cpu_of(None)
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    if failures:
        raise SystemExit(f"an HTTP client failed: {failures[0]!r}")
    return Phase(
        latencies=[t for _, lat, _, _ in done for t in lat],
        wall=max(end for end, _, _, _ in done) - started,
        errors=sum(e for _, _, e, _ in done),
        server_cpu=cpu_of(server_pid) - server_before,
        client_cpu=cpu_of(None) - client_before,
        acked=[a for _, _, _, acks in done for a in acks],
    )


def split(items: list[Any], parts: int) -> list[list[Any]]:
    return [items[i::parts] for i in range(parts)]


# -- MCP stdio recall (the official client, in this process) ----------------------------------


async def _mcp_recall(
    home: Path, warm: list[str], queries: list[str], in_flight: list[int], errlog: Path
) -> dict[int, Phase]:
    """One `gno-tui --home H mcp` over stdio: the warm-ups, then `queries` with each number
    of calls in flight of `in_flight` in turn."""
    import mcp_types as types
    import psutil
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=str(CONSOLE), args=["--home", str(home), "mcp"], env=child_env()
    )
    info = types.Implementation(name="bench-recall", version="1.0")
    before = {child.pid for child in psutil.Process().children(recursive=True)}
    phases: dict[int, Phase] = {}
    with errlog.open("w", encoding="utf-8") as log:
        async with stdio_client(params, errlog=log) as (read, write):
            async with ClientSession(read, write, client_info=info, read_timeout_seconds=120) as s:
                await s.initialize()
                await s.list_tools()  # the client validates results against the output schema
                server = next(
                    child.pid
                    for child in psutil.Process().children(recursive=True)
                    if child.pid not in before and "mcp" in " ".join(child.cmdline())
                )
                for query in warm:
                    result = await s.call_tool("gno_recall", _recall_body(query))
                    if result.is_error:
                        raise SystemExit(f"MCP gno_recall failed: {result.content}")
                for flight in in_flight:
                    phases[flight] = await _mcp_recall_phase(s, server, queries, flight)
    return phases


async def _mcp_recall_phase(session: Any, server: int, queries: list[str], flight: int) -> Phase:
    """`queries` as gno_recall calls, `flight` of them in flight at once on `session`."""
    import anyio

    latencies: list[float] = []
    errors = 0
    pending = iter(queries)

    async def worker() -> None:
        nonlocal errors
        for query in pending:
            begun = time.perf_counter()
            result = await session.call_tool("gno_recall", _recall_body(query))
            latencies.append(time.perf_counter() - begun)
            errors += bool(result.is_error)

    server_before, client_before = cpu_of(server), cpu_of(None)
    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(flight):
            group.start_soon(worker)
    return Phase(
        latencies=latencies,
        wall=time.perf_counter() - started,
        errors=errors,
        server_cpu=cpu_of(server) - server_before,
        client_cpu=cpu_of(None) - client_before,
    )


def mcp_recall(
    home: Path, warm: list[str], queries: list[str], in_flight: list[int], work: Path
) -> dict[int, Phase]:
    import anyio

    return anyio.run(_mcp_recall, home, warm, queries, in_flight, work / "mcp-recall.stderr")


# -- MCP stdio writes (benchmarks/mcp_writes.py's client, in a process of its own) ------------


def mcp_write_phase(home: Path, name: str, writes: int, in_flight: int, work: Path) -> Phase:
    """One client process of benchmarks/mcp_writes.py (one warm-up write, then `writes` writes
    with `in_flight` calls at once on its own `gno-tui mcp --enable-write`)."""
    go, out = work / f"mcp-go-{name}", work / f"mcp-writer-{name}.json"
    process = subprocess.Popen(
        [sys.executable, __file__, "--mcp-writer", str(home), name, str(writes),
         str(in_flight), str(go), str(out)],
        env={**child_env(), "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )  # fmt: skip
    deadline = time.monotonic() + START_TIMEOUT
    while not Path(f"{out}.ready").exists():
        if time.monotonic() > deadline or process.poll() not in (None, 0):
            raise SystemExit(f"the MCP writer did not start (see {out}.server-stderr)")
        time.sleep(0.01)
    go.touch()
    if process.wait(timeout=1800) != 0:
        raise SystemExit(f"the MCP writer failed (exit {process.returncode})")
    report = json.loads(out.read_text(encoding="utf-8"))
    calls = report["calls"]
    return Phase(
        latencies=[call["latency"] for call in calls],
        wall=report["elapsed"],
        errors=sum(1 for call in calls if not call["ok"]),
        server_cpu=report["cpu"][1],
        client_cpu=report["cpu"][0],
        acked=[
            {"recordId": call["recordId"], "absPath": call["absPath"]}
            for call in calls
            if call["ok"]
        ],
    )


def _mcp_writer_main(arguments: list[str]) -> None:
    """The hidden --mcp-writer: benchmarks/mcp_writes.py's client, its server given this
    run's environment ($GNO_TUI_DB on a server-mode run, which mcp_writes leaves out)."""
    import anyio

    mcp_writes._server_env = child_env
    home, name, count, in_flight, go, out = arguments
    anyio.run(mcp_writes._client, home, name, int(count), int(in_flight), go, out)


# -- what the store holds afterwards ----------------------------------------------------------


def stored_record_ids(home: Path) -> set[str]:
    """Every record id in the index: read with plain sqlite (read-only) on an embedded home,
    so that nothing is repaired first; on a server, from $GNO_TUI_DB."""
    url = os.environ.get("GNO_TUI_DB")
    if url:
        from sqlalchemy import create_engine, text

        engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
        try:
            with engine.connect() as pg:
                return {row[0] for row in pg.execute(text("SELECT record_id FROM facts"))}
        finally:
            engine.dispose()
    connection = sqlite3.connect(f"file:{home / 'index.sqlite'}?mode=ro", uri=True)
    try:
        return {row[0] for row in connection.execute("SELECT record_id FROM facts")}
    finally:
        connection.close()


def fact_file(home: Path, address: str | None) -> Path:
    """Where an acknowledged fact's file is: its absPath, or over HTTP (which answers the
    fact's gno:// uri instead of a server path) the default collection root's file."""
    if address and address.startswith("gno://"):
        collection, rest = address.removeprefix("gno://").split("/", 1)
        return home / "collections" / collection / rest
    return Path(address or "/nonexistent")


def lost(acked: list[dict[str, Any]], rows: set[str], *, files: bool, home: Path) -> int:
    """Acknowledged writes without their index row, or (`files`: an embedded store) without
    their fact file."""
    return sum(
        1
        for ack in acked
        if ack["recordId"] not in rows or (files and not fact_file(home, ack["absPath"]).is_file())
    )


# -- the run ----------------------------------------------------------------------------------


def build(home: Path, facts: list[str], size: int) -> dict[str, str]:
    rows = corpus(facts, size)
    speed, counts = import_store(home, rows)
    return {
        "import": f"{size:,} items imported at {speed:,.0f}/s by `gno-tui import` "
        f"({counts['added']:,} added, {counts['skipped']:,} skipped as duplicates, "
        f"{counts['proposed']:,} proposed)"
    }


def run(args: argparse.Namespace, work: Path, load_at_start: str) -> None:
    facts = persona_facts(Path(args.data))
    home = work / "home"
    notes: dict[str, str] = build(home, facts, args.facts)
    stored = fact_count(home)
    sample = random.Random(7).sample(facts, args.queries + args.warmup)
    warm, queries = sample[: args.warmup], sample[args.warmup :]
    clients = args.clients
    # A token has at most 8 scopes: the readers get the 8 persona scopes, the writers their
    # own two (writes apply at once: --write).
    readers = [make_token(home, f"reader-{i}", SCOPES, write=False) for i in range(clients)]
    writers = [
        make_token(home, f"writer-{i}", ["bench", f"client:h{i}"], write=True)
        for i in range(clients)
    ]
    server_mode = bool(os.environ.get("GNO_TUI_DB"))
    rounds: list[dict[str, Phase]] = []
    before = fact_count(home)
    load_at_phases = load()
    with serve(home, args.workers) as server:
        for number in range(args.rounds):
            print(f"round {number + 1} of {args.rounds} ...", file=sys.stderr)
            rounds.append(
                one_round(args, number, home, server, readers, writers, warm, queries, work)
            )
        load_after = load()
    rows_now = stored_record_ids(home)
    after = fact_count(home)
    results = {name: merged([r[name] for r in rounds]) for name in rounds[0]}
    # One warm-up write per HTTP client is among http_writes' acked; the MCP writer's one
    # warm-up write a round is not in its report.
    http_acked = results["http_writes"].acked
    mcp_acked = results["mcp_writes"].acked
    expected = len(http_acked) + len(mcp_acked) + args.rounds
    files = not server_mode  # a server-mode store has no fact files (absPath is the uri)
    losses = {
        "http": lost(http_acked, rows_now, files=files, home=home),
        "mcp": lost(mcp_acked, rows_now, files=files, home=home),
    }
    losses["count"] = abs(after - before - expected)
    notes["store"] = (
        f"{stored:,} facts after the import; {after - before:,} facts added by the write "
        f"phases, {expected:,} acknowledged (both counts include the untimed warm-up writes): "
        + ("none lost" if after == before + expected else "COUNTS DIFFER")
    )
    notes["load"] = (
        f"load average (1/5/15 min) at the start {load_at_start}, before the measured phases "
        f"{load_at_phases}, after them {load_after}"
    )
    report(args, results, losses, notes, server_mode=server_mode)


def one_round(
    args: argparse.Namespace,
    number: int,
    home: Path,
    server: Server,
    readers: list[str],
    writers: list[str],
    warm: list[str],
    queries: list[str],
    work: Path,
) -> dict[str, Phase]:
    """Every phase once: HTTP first in an even round, MCP stdio first in an odd one (so that
    neither always meets the store, or the machine, first)."""
    clients, pid, found = args.clients, server.process.pid, {}

    def http_recall() -> None:
        print("HTTP recall, 1 client, then 8 ...", file=sys.stderr)
        found["http1"] = http_phase(
            server.url, readers, pid, kind="recall", work=[queries], warm=[warm]
        )
        found["httpN"] = http_phase(
            server.url,
            readers,
            pid,
            kind="recall",
            work=split(queries, clients),
            warm=[w[:5] for w in split(warm, clients)],
        )

    def stdio_recall() -> None:
        print("MCP stdio recall, 1 in flight, then 8 ...", file=sys.stderr)
        mcp = mcp_recall(home, warm, queries, [1, clients], work)
        found["mcp1"], found["mcpN"] = mcp[1], mcp[clients]

    def http_writes() -> None:
        print(f"HTTP writes, {clients} clients ...", file=sys.stderr)
        first = number * args.writes  # distinct texts in every round
        found["http_writes"] = http_phase(
            server.url,
            writers,
            pid,
            kind="write",
            work=[list(range(first, first + args.writes)) for _ in range(clients)],
            warm=[[-1 - number] for _ in range(clients)],
        )

    def stdio_writes() -> None:
        print(f"MCP stdio writes, {clients} in flight ...", file=sys.stderr)
        found["mcp_writes"] = mcp_write_phase(home, f"m{number}", args.mcp_writes, clients, work)

    order = [http_recall, stdio_recall, http_writes, stdio_writes]
    if number % 2:
        order = [stdio_recall, http_recall, stdio_writes, http_writes]
    for phase in order:
        phase()
    return found


def merged(phases: list[Phase]) -> Phase:
    """The rounds of one phase as one: every call's latency, the spans and CPU added."""
    return Phase(
        latencies=[t for phase in phases for t in phase.latencies],
        wall=sum(phase.wall for phase in phases),
        errors=sum(phase.errors for phase in phases),
        server_cpu=sum(phase.server_cpu for phase in phases),
        client_cpu=sum(phase.client_cpu for phase in phases),
        acked=[ack for phase in phases for ack in phase.acked],
    )


def report(
    args: argparse.Namespace,
    results: dict[str, Phase],
    losses: dict[str, int],
    notes: dict[str, str],
    *,
    server_mode: bool,
) -> None:
    n = args.clients
    header = [
        "measure",
        "transport",
        "clients / in flight",
        "calls",
        "p50 ms",
        "p95 ms",
        "per s",
        "errors",
        "lost",
        "server CPU ms/call",
        "client CPU ms/call",
        "target",
    ]
    verdicts: list[str] = []

    def verdict(ok: bool, what: str) -> str:
        word = "PASS" if ok else "MISS"
        verdicts.append(f"{word}: {what}")
        return word

    def row(
        measure: str, transport: str, who: str, phase: Phase, lost_: object, target: str
    ) -> list[object]:
        calls = max(phase.count, 1)
        return [
            measure,
            transport,
            who,
            phase.count,
            f"{pct(phase.latencies, 0.5):.1f}",
            f"{pct(phase.latencies, 0.95):.1f}",
            f"{phase.per_s():.0f}",
            phase.errors,
            lost_,
            f"{1000 * phase.server_cpu / calls:.2f}",
            f"{1000 * phase.client_cpu / calls:.2f}",
            target,
        ]

    h1, hn, m1, mn = results["http1"], results["httpN"], results["mcp1"], results["mcpN"]
    hw, mw = results["http_writes"], results["mcp_writes"]
    p95_1, p95_n = pct(h1.latencies, 0.95), pct(hn.latencies, 0.95)
    t1 = TARGETS["http recall 1 client p95 ms"]
    tn = TARGETS["http recall N clients p95 ms"]
    tw = TARGETS["http writes N clients per s"]
    v1 = verdict(
        p95_1 <= t1 and not h1.errors, f"HTTP recall 1 client p95 {p95_1:.1f} <= {t1:g} ms"
    )
    vn = verdict(
        p95_n <= tn and not hn.errors, f"HTTP recall {n} clients p95 {p95_n:.1f} <= {tn:g} ms"
    )
    vw = verdict(
        hw.per_s() >= tw and not losses["http"] and not losses["count"] and not hw.errors,
        f"HTTP writes {n} clients {hw.per_s():.0f}/s >= {tw:g}/s, lost {losses['http']}"
        + (f", fact count off by {losses['count']}" if losses["count"] else ""),
    )
    rows = [
        row("recall", "HTTP", "1 / 1", h1, "-", f"p95 <= {t1:g} ms: {v1}"),
        row("recall", "MCP stdio", "1 / 1", m1, "-", "baseline"),
        row("recall", "HTTP", f"{n} / {n}", hn, "-", f"p95 <= {tn:g} ms: {vn}"),
        row("recall", "MCP stdio", f"1 session / {n}", mn, "-", "baseline"),
        row("write (add)", "HTTP", f"{n} / {n}", hw, losses["http"], f">= {tw:g}/s, 0 lost: {vw}"),
        row("write (add)", "MCP stdio", f"1 process / {n}", mw, losses["mcp"], "baseline"),
    ]
    ratio_p50 = pct(h1.latencies, 0.5) / pct(m1.latencies, 0.5)
    ratios = (
        f"HTTP / MCP stdio: recall 1 client p50 {ratio_p50:.2f}x, "
        f"p95 {p95_1 / pct(m1.latencies, 0.95):.2f}x; recall {n} at once p50 "
        f"{pct(hn.latencies, 0.5) / pct(mn.latencies, 0.5):.2f}x, p95 "
        f"{p95_n / pct(mn.latencies, 0.95):.2f}x, throughput {hn.per_s() / mn.per_s():.2f}x; "
        f"writes/s {hw.per_s() / mw.per_s():.2f}x"
    )
    mode = "server mode: " + args.pg_describe if server_mode else "embedded (SQLite + fact files)"
    write_report(
        args.name,
        header,
        rows,
        notes=[
            f"machine: {machine()}, {cpu_model()}; {notes['load']}",
            f"code: {tree()}",
            f"store: {mode}; {notes['import']}; {notes['store']}",
            "model: " + (args.model or "the bundled one (hybrid recall)"),
            f"server: the installed `gno-tui --home H serve --port 0 --workers {args.workers}`, "
            "tokens by "
            f"`gno-tui token create`, a reader and a writer per client; clients "
            f"httpx {_httpx_version()} with keep-alive, threads of this process",
            f"recall: {{query, 8 persona scopes, maxFacts 8, maxTokens 512}}, queries persona "
            f"facts of {args.data} (seed 7); {args.warmup} warm-ups then {args.queries} timed "
            f"with 1 client; with {n}, 5 warm-ups each then the same {args.queries} split "
            f"among them, started together",
            f"MCP stdio: the official MCP client to `gno-tui --home H mcp` (recall: in this "
            f"process, one session; writes: benchmarks/mcp_writes.py's client process, "
            f"{args.mcp_writes} writes, {n} in flight, on `mcp --enable-write`)",
            f"writes: {{text, scopes [bench, client:NAME], decision add}}, {args.writes} per "
            f"HTTP client; a 201 only after the write's group commit; lost: acknowledged "
            f"writes without their index row (or fact file), checked afterwards",
            f"{args.rounds} round(s) of every phase, HTTP first in the odd-numbered rounds and "
            "MCP stdio first in the even-numbered ones; each row pools the calls of all rounds",
            "per s: answered calls over the span from the common start to the last answer "
            "(summed over the rounds)",
            ratios,
            *verdicts,
        ],
    )


def _httpx_version() -> str:
    import httpx

    return str(httpx.__version__)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n", 1)[0].replace("\n", " "),
        epilog=__doc__.split("\n\n", 2)[2],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--facts", type=int, default=10_000, help="store size (10000)")
    parser.add_argument("--clients", type=int, default=8, help="concurrent clients (8)")
    parser.add_argument("--queries", type=int, default=500, help="timed recalls (500)")
    parser.add_argument("--warmup", type=int, default=50, help="untimed recalls first (50)")
    parser.add_argument("--writes", type=int, default=250, help="HTTP writes per client (250)")
    parser.add_argument("--mcp-writes", type=int, default=500, help="MCP stdio writes (500)")
    parser.add_argument(
        "--rounds", type=int, default=2, help="every phase this many times, pooled (2)"
    )
    parser.add_argument(
        "--data", default=str(DATA / "msc" / "msc_personas_all.json"), help="MSC persona facts"
    )
    parser.add_argument("--model", help="model folder (default: the bundled one)")
    parser.add_argument(
        "--server", action="store_true", help="server mode on a throwaway pgserver PostgreSQL"
    )
    parser.add_argument("--db", help="server mode on this PostgreSQL server (a fresh database)")
    parser.add_argument("--name", help="report name under results/ (http_server[_pg])")
    parser.add_argument("--workers", type=int, default=1, help="`serve --workers N` processes (1)")
    parser.add_argument("--mcp-writer", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.mcp_writer:
        _mcp_writer_main(args.mcp_writer)
        return 0
    load_at_start = load()
    os.environ.pop("GNO_TUI_DB", None)
    if args.model:
        os.environ["GNO_TUI_MODEL"] = args.model
    server_mode = args.server or args.db is not None
    args.name = args.name or ("http_server_pg" if server_mode else "http_server")
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="gno-http-bench-")))
        if server_mode:
            server = stack.enter_context(postgres_server(args.db, prefix="gno-http-bench-pg-"))
            os.environ["GNO_TUI_DB"] = stack.enter_context(
                fresh_database(server, prefix="gno_http_bench_")
            )
            args.pg_describe = "a fresh database on " + (
                "--db's server" if args.db else "pgserver (PostgreSQL 16 + pgvector)"
            )
        try:
            run(args, work, load_at_start)
        finally:
            os.environ.pop("GNO_TUI_DB", None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
