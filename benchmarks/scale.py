"""Scale on one machine: import, recall, propose and writes at 10k / 100k (/ 1M) facts, with
another process writing, against SQLite FTS5 over the same rows in the same run.

    python benchmarks/scale.py [--sizes 10000,100000] [--seconds 15] [--import-only] [--server]

For each size, a JSONL file of MSC persona facts (8 scopes) is imported into a fresh home by
the installed `gno-tui import` (durable: files synced, rows committed; dedup against the
store and within the file). Then, in this process: hybrid and lexical recall over all 8
scopes, propose, and a durable write end to end. In fresh processes
(benchmarks/scale_roles.py): cold start to the first recall, the CLI's cold `recall --json`,
a reader's recall latency with no writer and while another process writes once a second, how
long until that reader's next recall sees a write, and the reader's peak RSS. Results go to
benchmarks/results/scale.md; with --import-only, only the import is measured (facts/s, and what
became of the items) and the result goes to benchmarks/results/scale_import.md.

With --server every size goes into a database of its own on a throwaway PostgreSQL 16 with
pgvector (pgserver, the test extra), or on the server named by --db: the server mode, where
recall ranks inside the database. Every process (the CLI, this one, the reader) is a client
given the URL in $GNO_TUI_DB, and the writer has a home of its own, as another machine would.
The first recall after the import, which builds the derived tables, is timed on its own.

With --grow, one home grows file by file to the largest size, each file's import rate
recorded, then a held-out file goes into the grown store (benchmarks/scale_grow.py)."""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import DATA, ROOT, machine, write_report
from benchmarks.speed import SCOPES, corpus, fts5_baseline, persona_facts
from engine.facade import open_service
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest
from engine.retrieval.embeddings import EmbedderStatus

QUERIES = 200
CONSOLE = Path(sys.executable).parent / "gno-tui"


def load_average() -> str:
    """The 1-minute load average, so that a reader can tell whether the machine was idle."""
    return f"{os.getloadavg()[0]:.2f}"


# What a process pays to touch memory it has not used yet, measured in a child: on this
# sandbox's virtual machine it ranged from 0.45 s to 8 s a GiB within one hour (the host backs
# a page only when the guest first touches it), and an import touches ~1 GiB. Without this
# figure beside it, a slow import could not be told from a slow machine.
_TOUCH = (
    "import mmap, time\n"
    "m = mmap.mmap(-1, 1 << 29)\n"
    "t = time.perf_counter()\n"
    "for offset in range(0, 1 << 29, 4096): m[offset] = 1\n"
    "print(time.perf_counter() - t)"
)


def fresh_memory_seconds() -> str:
    """Seconds to touch 512 MiB of new memory, in a fresh process."""
    done = subprocess.run([sys.executable, "-c", _TOUCH], capture_output=True, text=True)
    return f"{float(done.stdout):.2f}" if done.returncode == 0 else "?"


def ms(values: list[float], q: float) -> str:
    ordered = sorted(values)
    return f"{ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000:.1f}"


IMPORT_CHUNK = 100_000  # rows per file: `import` takes files up to 64 MiB (it says: split it)


def write_rows(source: Path, rows: list[tuple[str, str]]) -> None:
    """An import file of these (text, scope) rows, one JSON item a line."""
    with source.open("w", encoding="utf-8") as out:
        for text, scope in rows:
            out.write(json.dumps({"text": text, "scopes": [scope]}) + "\n")


def import_file(home: Path, source: Path) -> tuple[float, dict[str, int]]:
    """Seconds the installed `gno-tui import --json` of this file into `home` took, and its
    report (added, proposed, skipped, ...)."""
    start = time.perf_counter()
    done = subprocess.run(
        [str(CONSOLE), "--home", str(home), "import", str(source), "--json"],
        capture_output=True,
        text=True,
    )
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"import failed: {(done.stdout + done.stderr)[-2000:]}")
    return took, json.loads(done.stdout)


def import_store(home: Path, rows: list[tuple[str, str]]) -> tuple[float, dict[str, int]]:
    """facts/s of `gno-tui import` of these rows into a fresh home, and how many items were
    added, proposed and skipped. Past IMPORT_CHUNK rows the rows go in files of that many,
    imported one after another into the same home (each file all or nothing), as a person
    splits a file larger than `import` takes."""
    counts = {"added": 0, "proposed": 0, "skipped": 0}
    took = 0.0
    for first in range(0, len(rows), IMPORT_CHUNK):
        source = home.parent / f"import-{first // IMPORT_CHUNK:03d}.jsonl"
        write_rows(source, rows[first : first + IMPORT_CHUNK])
        seconds, report = import_file(home, source)
        took += seconds
        source.unlink()
        for key in counts:
            counts[key] += int(report[key])
        print(
            f"imported {report['added']} (skipped {report['skipped']}, proposed "
            f"{report['proposed']}) in {took:.1f} s so far",
            file=sys.stderr,
        )
    return len(rows) / took, counts


def fact_count(home: Path) -> int:
    url = os.environ.get("GNO_TUI_DB")
    if url:
        from sqlalchemy import create_engine, text

        engine = create_engine(url)
        with engine.connect() as connection:
            count = int(connection.scalar(text("SELECT count(*) FROM facts")) or 0)
        engine.dispose()
        return count
    db = sqlite3.connect(home / "index.sqlite")
    try:
        return int(db.execute("SELECT count(*) FROM facts").fetchone()[0])
    finally:
        db.close()


class Server:
    """A PostgreSQL server for --server: pgserver's throwaway one, or the one --db names."""

    def __init__(self, url: str | None) -> None:
        self._folder: Path | None = None
        self._pg: Any = None
        if url is None:
            import pgserver  # the test extra

            self._folder = Path(tempfile.mkdtemp(prefix="gno-scale-pg-"))
            self._pg = pgserver.get_server(self._folder, cleanup_mode="delete")
            url = self._pg.get_uri()
        self._url = make_url(url)

    def database(self, name: str, *, fresh: bool) -> str:
        """The URL of database `name` on this server, made empty first when `fresh`."""
        from sqlalchemy import create_engine, text

        admin = create_engine(self._url, isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            if fresh:
                connection.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
                connection.execute(text(f'CREATE DATABASE "{name}"'))
        admin.dispose()
        return self._url.set(database=name).render_as_string(hide_password=False)

    def describe(self) -> str:
        kind = "pgserver (PostgreSQL 16 + pgvector)" if self._pg is not None else "--db"
        return f"{kind}, a database per size"

    def close(self) -> None:
        if self._pg is not None:
            self._pg.cleanup()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)


def in_process(home: Path, queries: list[str], *, imported_now: bool = True) -> dict[str, str]:
    found: dict[str, str] = {}
    for mode, options in (
        ("hybrid", {}),
        ("lexical", {"embedder_status": EmbedderStatus(None, "off")}),
    ):
        service = open_service(home=home, **options)  # type: ignore[arg-type]
        start = time.perf_counter()
        service.recall(RecallRequest(query="warm up", scopes=SCOPES, caller="b", session="w"))
        if mode == "hybrid" and os.environ.get("GNO_TUI_DB"):
            what = (
                "first recall after the import s (derived tables built)"
                if imported_now
                else "first recall of this process s (store built before)"
            )
            found[what] = f"{time.perf_counter() - start:.1f}"
        timings = []
        for query in queries:
            start = time.perf_counter()
            service.recall(RecallRequest(query=query, scopes=SCOPES, caller="b", session="q"))
            timings.append(time.perf_counter() - start)
        found[f"{mode} recall p50/p95 ms"] = f"{ms(timings, 0.5)} / {ms(timings, 0.95)}"
        if mode == "hybrid":
            proposes, writes = [], []
            for n, query in enumerate(queries[:100]):
                start = time.perf_counter()
                service.remember(
                    RememberRequest(
                        text=query, scopes=SCOPES[:1], caller="b", session="p", decision="propose"
                    )
                )
                proposes.append(time.perf_counter() - start)
                if n < 50:
                    start = time.perf_counter()
                    service.remember(
                        RememberRequest(
                            text=f"A new benchmark fact number {n} about {query[:40]}",
                            scopes=SCOPES[:1],
                            caller="b",
                            session="p",
                            decision="add",
                        )
                    )
                    writes.append(time.perf_counter() - start)
            found["propose p50/p95 ms"] = f"{ms(proposes, 0.5)} / {ms(proposes, 0.95)}"
            found["write end to end p50/p95 ms"] = f"{ms(writes, 0.5)} / {ms(writes, 0.95)}"
        service.close()
    return found


def role(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "benchmarks.scale_roles", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )


def last_json(process: subprocess.Popen[str]) -> dict[str, Any]:
    out, _ = process.communicate()
    return json.loads(out.strip().splitlines()[-1])


def cli_recall_seconds(home: Path, query: str) -> float:
    """Seconds of one `gno-tui recall --json` in a fresh process, spawn to exit."""
    start = time.perf_counter()
    subprocess.run(
        [str(CONSOLE), "--home", str(home), "recall", query, "--scope", SCOPES[0], "--json"],
        capture_output=True,
        check=True,
    )
    return time.perf_counter() - start


def processes(home: Path, queries: list[str], seconds: float) -> dict[str, str]:
    found: dict[str, str] = {}
    colds = [float(last_json(role("cold", str(home), queries[i]))["cold"]) for i in range(3)]
    found["cold start to first recall s (median of 3)"] = f"{statistics.median(colds):.2f}"
    cli = [cli_recall_seconds(home, query) for query in queries[:5]]
    found["CLI cold recall --json p50 s"] = f"{statistics.median(cli):.2f}"
    query_file = home.parent / "queries.json"
    query_file.write_text(json.dumps(queries), encoding="utf-8")
    quiet = last_json(role("reader", str(home), str(seconds), str(query_file)))
    base = quiet["latencies"]
    reader = role("reader", str(home), str(seconds), str(query_file))
    assert reader.stdout is not None
    reader.stdout.readline()  # ready: its index is built before the writer starts
    # On a server the writer is another machine: a home of its own, the same database.
    own = [str(home.parent / "writer-home")] if os.environ.get("GNO_TUI_DB") else []
    writer = role("writer", str(home), str(int(seconds) - 2), *own)
    busy = last_json(reader)
    writer.communicate()
    under = busy["latencies"]
    marks = busy["marks"]
    found["reader recall p50/p95 ms, no writer"] = f"{ms(base, 0.5)} / {ms(base, 0.95)}"
    found["reader recall p50/p95 ms, 1 write/s"] = f"{ms(under, 0.5)} / {ms(under, 0.95)}"
    if marks:
        lags = [m["lag"] for m in marks]
        seeing = [m["recall"] for m in marks]
        found["write seen by the other process after, p50 ms"] = ms(lags, 0.5)
        found["that recall p50 ms (vs warm p50)"] = f"{ms(seeing, 0.5)} (vs {ms(base, 0.5)})"
    found["reader peak RSS MiB"] = f"{busy['rss_mib']:.0f}"
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--data", default=str(DATA / "msc" / "msc_personas_all.json"))
    parser.add_argument(
        "--import-only", action="store_true", help="measure the import alone (scale_import.md)"
    )
    parser.add_argument(
        "--home",
        help="measure recall and writes on this home, imported before by --keep (one size)",
    )
    parser.add_argument(
        "--keep", help="import into this new home and keep it (for a later --home run)"
    )
    parser.add_argument(
        "--name", help="the report's name under results/ (default scale, or scale_grow)"
    )
    parser.add_argument(
        "--server", action="store_true", help="the server mode, on pgserver or --db (see above)"
    )
    parser.add_argument("--db", help="with --server: a PostgreSQL URL to use instead of pgserver")
    parser.add_argument(
        "--grow",
        action="store_true",
        help="grow one home file by file to the largest size (benchmarks/scale_grow.py)",
    )
    parser.add_argument("--step", type=int, default=100_000, help="with --grow: items a file")
    parser.add_argument(
        "--held-out", type=int, default=20_000, help="with --grow: items imported after it"
    )
    args = parser.parse_args()
    if args.grow:
        if args.server:
            parser.error("--grow measures the embedded store; it takes no --server")
        from benchmarks.scale_grow import grow

        grow(args)
        return
    server = Server(args.db) if args.server else None
    facts = persona_facts(Path(args.data))
    queries = random.Random(7).sample(facts, QUERIES)
    table: list[list[object]] = []
    measures: list[str] = []
    # Each size's home is removed at the end, not before the next size's import: ext4 skips
    # the inodes freed in the last half minute when it makes a file, and right after 80k files
    # were deleted, creating 80k more took 11 s of kernel time instead of 1.5 s here.
    workdirs: list[Path] = []
    for size in [int(s) for s in args.sizes.split(",")]:
        work = Path(tempfile.mkdtemp(prefix=f"gno-scale-{size}-"))
        workdirs.append(work)
        home = Path(args.home or args.keep or work / "home")
        if server is not None:
            os.environ["GNO_TUI_DB"] = server.database(f"scale_{size}", fresh=not args.home)
        rows = corpus(facts, size)
        load_before, touch_before = load_average(), fresh_memory_seconds()
        if args.home:  # imported by an earlier run (--keep); its import was measured there
            found = {"import facts/s": "(imported before)"}
        else:
            speed, counts = import_store(home, rows)
            found = {"import facts/s": f"{speed:,.0f}"}
        if args.import_only:
            found["items added / proposed / skipped"] = (
                f"{counts['added']:,} / {counts['proposed']:,} / {counts['skipped']:,}"
            )
            found["load average before / after (1 min)"] = f"{load_before} / {load_average()}"
            found["s to touch 512 MiB of new memory, before / after"] = (
                f"{touch_before} / {fresh_memory_seconds()}"
            )
            measures = list(found)
            table.append([size, *found.values()])
            continue
        found.update(in_process(home, queries, imported_now=not args.home))
        fts = fts5_baseline(rows, queries)
        found["FTS5 bm25 p50/p95 ms (baseline)"] = f"{ms(fts, 0.5)} / {ms(fts, 0.95)}"
        found["facts in the store"] = str(fact_count(home))
        found.update(processes(home, queries, args.seconds))
        print(found, file=sys.stderr)
        measures = list(found)
        table.append([size, *found.values()])
    for work in workdirs:
        shutil.rmtree(work, ignore_errors=True)
    if server is not None:
        server.close()
        os.environ.pop("GNO_TUI_DB", None)
    rows_out = [[name, *(row[i + 1] for row in table)] for i, name in enumerate(measures)]
    write_report(
        "scale_import" if args.import_only else args.name or "scale",
        ["measure", *(f"{row[0]:,} facts" for row in table)],
        rows_out,
        [
            f"machine: {machine()}",
            f"data: {args.data} (MSC persona facts, 8 scopes; every recall names all 8)",
            f"{QUERIES} queries sampled with seed 7; reader runs {args.seconds:.0f} s each",
            "import: the installed `gno-tui import --json`, durable, with dedup",
            *([f"server mode: {server.describe()}"] if server is not None else []),
        ],
    )


if __name__ == "__main__":
    main()
