"""HTTP recall on a large server store: `gno-tui serve` over a PostgreSQL database filled
beforehand (benchmarks/server_store.py), beside the stdio MCP server on the same store.

    python benchmarks/server_store.py --db URL --size 1000000      # once: fills scale_1000000
    python benchmarks/http_server_scale.py --db URL_OF_scale_1000000 [--queries 200]
                                           [--warmup 20] [--clients 8] [--workers 1]

A fresh home points at the database through $GNO_TUI_DB; one reader token (the 8 persona
scopes) per client by `gno-tui token create`; the installed `gno-tui --home H serve --port 0`.
Then, the same queries (persona facts of the data set, seed 11: distinct from the ones the
store was built from only by chance) in each phase:

1. HTTP recall, one client: `POST /api/memory/recall` {query, 8 scopes, maxFacts 8,
   maxTokens 512}, WARMUP untimed, then QUERIES timed one after another (httpx, keep-alive).
2. MCP stdio recall, the baseline: the official MCP client to `gno-tui --home H mcp`,
   `gno_recall` with the same arguments, one call at a time.
Phases 1 and 2 run ROUNDS times, in turn first (the same queries meet the database's caches
warmer the second time), each row pooling its rounds.
3. HTTP recall, CLIENTS clients at once (reported, no target at this size).

The store is not changed except for the tokens and the recalls' receipts, so the run can be
repeated on it. Target (PASS/MISS in the report): HTTP recall p95 <= 150 ms with one client.
The report goes to benchmarks/results/http_server_1m.md (--name to change it).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import DATA, machine, write_report
from benchmarks.http_server import (
    Phase,
    cpu_model,
    http_phase,
    load,
    make_token,
    mcp_recall,
    merged,
    pct,
    serve,
    split,
    tree,
)
from benchmarks.speed import SCOPES, persona_facts

TARGET_P95_MS = 150.0


def fact_count(url: str) -> int:
    from sqlalchemy import create_engine, text

    db = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
    with db.connect() as connection:
        found = connection.execute(
            text("SELECT count(*) FROM facts WHERE superseded_by IS NULL AND retired_at IS NULL")
        ).scalar()
    db.dispose()
    return int(found or 0)


def row(measure: str, who: str, phase: Phase, target: str) -> list[object]:
    calls = max(phase.count, 1)
    return [
        measure,
        who,
        phase.count,
        f"{pct(phase.latencies, 0.5):.1f}",
        f"{pct(phase.latencies, 0.95):.1f}",
        f"{phase.per_s():.1f}",
        phase.errors,
        f"{1000 * phase.server_cpu / calls:.2f}",
        target,
    ]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="the filled database (server_store.py's)")
    parser.add_argument("--queries", type=int, default=200, help="timed recalls (200)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed recalls first (20)")
    parser.add_argument("--clients", type=int, default=8, help="clients of phase 3 (8)")
    parser.add_argument("--workers", type=int, default=1, help="`serve --workers N` (1)")
    parser.add_argument("--rounds", type=int, default=2, help="1-client phases, pooled (2)")
    parser.add_argument("--data", default=str(DATA / "msc" / "msc_personas_all.json"))
    parser.add_argument("--name", default="http_server_1m", help="report name under results/")
    parser.add_argument("--note", action="append", default=[], help="a line for the report")
    args = parser.parse_args()
    load_at_start = load()
    os.environ["GNO_TUI_DB"] = args.db
    facts = fact_count(args.db)
    sample = random.Random(11).sample(persona_facts(Path(args.data)), args.warmup + args.queries)
    warm, queries = sample[: args.warmup], sample[args.warmup :]
    with tempfile.TemporaryDirectory(prefix="gno-http-scale-") as folder:
        work = Path(folder)
        home = work / "home"
        tag = random.Random().randrange(10**6)
        readers = [
            make_token(home, f"scale-reader-{tag}-{i}", SCOPES, write=False)
            for i in range(args.clients)
        ]
        phases: dict[str, list[Phase]] = {"http1": [], "mcp1": [], "httpn": []}
        with serve(home, args.workers) as server:
            pid = server.process.pid

            def http_one() -> None:
                print("HTTP recall, 1 client ...", file=sys.stderr)
                phases["http1"].append(
                    http_phase(server.url, readers, pid, kind="recall", work=[queries], warm=[warm])
                )

            def mcp_one() -> None:
                print("MCP stdio recall, 1 in flight ...", file=sys.stderr)
                phases["mcp1"].append(mcp_recall(home, warm, queries, [1], work)[1])

            for number in range(args.rounds):
                # The phases meet the database's caches in turn: HTTP first in odd rounds.
                for phase in (http_one, mcp_one) if number % 2 == 0 else (mcp_one, http_one):
                    phase()
            print(f"HTTP recall, {args.clients} clients ...", file=sys.stderr)
            phases["httpn"].append(
                http_phase(
                    server.url,
                    readers,
                    pid,
                    kind="recall",
                    work=split(queries, args.clients),
                    warm=[w[:3] for w in split(warm, args.clients)],
                )
            )
    http1, mcp1, httpn = (merged(phases[name]) for name in ("http1", "mcp1", "httpn"))
    p95 = pct(http1.latencies, 0.95)
    verdict = "PASS" if p95 <= TARGET_P95_MS and not http1.errors else "MISS"
    n = args.clients
    write_report(
        args.name,
        [
            "measure",
            "clients / in flight",
            "calls",
            "p50 ms",
            "p95 ms",
            "per s",
            "errors",
            "server CPU ms/call",
            "target",
        ],
        [
            row("recall, HTTP", "1 / 1", http1, f"p95 <= {TARGET_P95_MS:g} ms: {verdict}"),
            row("recall, MCP stdio", "1 / 1", mcp1, "baseline"),
            row("recall, HTTP", f"{n} / {n}", httpn, "-"),
        ],
        notes=[
            f"machine: {machine()}, {cpu_model()}; load average (1/5/15 min) at the start "
            f"{load_at_start}, at the end {load()}",
            f"code: {tree()}",
            f"store: server mode, {facts:,} current facts in the database --db names "
            "(benchmarks/server_store.py's), unchanged by this run but for tokens and receipts",
            *args.note,
            f"server: the installed `gno-tui --home H serve --port 0 --workers {args.workers}`;"
            " clients httpx with keep-alive, threads of this process; MCP stdio: the official "
            "client to `gno-tui --home H mcp` in this process",
            f"recall: {{query, 8 persona scopes, maxFacts 8, maxTokens 512}}; {args.warmup} "
            f"warm-ups then {args.queries} timed queries (persona facts, seed 11), the same in "
            f"every phase; the 1-client phases {args.rounds} times, HTTP first in odd rounds and "
            f"MCP stdio first in even ones, pooled; then {n} clients, 3 warm-ups each and the "
            "queries split among them",
            f"HTTP / MCP stdio, 1 client: p50 "
            f"{pct(http1.latencies, 0.5) / pct(mcp1.latencies, 0.5):.2f}x, p95 "
            f"{p95 / pct(mcp1.latencies, 0.95):.2f}x",
            f"{verdict}: HTTP recall 1 client p95 {p95:.1f} <= {TARGET_P95_MS:g} ms",
        ],
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
