"""Cold CLI calls: what an agent that shells out on every turn pays (issue 17, "A fast CLI").

    python benchmarks/cli_cold.py [msc_personas_all.json] [--facts 10000] [--runs 15]
        [--home DIR] [--compare DIR]

A 10k-fact home (MSC persona facts over 8 scopes, as in benchmarks/speed.py) is built once
with the bulk-add path and kept outside the project (default: <tmp>/gno-tui-bench/); then
every run is a fresh `gno-tui --home H ... --json` process: `recall`, `remember` (propose)
and `remember --add`, timed from spawn to exit. `--version` is the floor (interpreter start
and argparse); importing the dependencies alone (no gno-tui code) is the floor of any store
command. `python -X importtime` of one recall says which packages the imports cost.

`--compare DIR` also times another source tree of the project (e.g. the last commit, from
`git archive HEAD | tar -x -C DIR`) through the same console script with PYTHONPATH=DIR, run
for run interleaved with this one, so that a busy machine's load falls on both alike.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import DATA, machine, write_report
from benchmarks.speed import SCOPES, corpus, persona_facts

CLI = Path(sys.executable).with_name("gno-tui")
DEPENDENCIES = "import sqlmodel, numpy, tokenizers, safetensors.numpy, filelock, yaml"


def build_home(home: Path, size: int, facts: list[str]) -> None:
    if (home / "index.sqlite").exists():
        return
    # Imported here: the timed processes must not share this process's warm imports anyway,
    # and a home already built needs none of them.
    from engine.facade.factory import open_engine
    from engine.storage.bulk import BulkFact, add_many

    engine = open_engine(home=home)
    start = time.perf_counter()
    add_many(
        engine,
        [
            BulkFact(text=t, scopes=[s], caller="bench", session="cli")
            for t, s in corpus(facts, size)
        ],
        durable=False,
    )
    engine.db.dispose()
    print(f"built {size} facts in {time.perf_counter() - start:.0f} s", file=sys.stderr)


def timed(argv: list[str], source: str | None = None) -> tuple[float, float]:
    """Wall time (spawn to exit) and the child's CPU time (user + system): on a busy machine
    the wall time carries other processes' load, the CPU time much less of it."""
    env = dict(os.environ)
    if source:
        env["PYTHONPATH"] = source
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # Run from outside the project, so that PYTHONPATH (not the current folder) decides
    # which source tree is imported.
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tempfile.gettempdir())
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stdout}{done.stderr}")
    return elapsed, cpu


def changes_behind(home: Path) -> str:
    """How many changes each index copy on disk is behind the store's change log: every fresh
    process applies them again (a copy is rewritten once 200 have piled up at 10k facts)."""
    import json
    import sqlite3

    import numpy as np

    with sqlite3.connect(home / "index.sqlite") as db:
        newest = db.execute("SELECT coalesce(max(seq), 0) FROM fact_changes").fetchone()[0]
    copies = []
    for path in sorted((home / ".index").glob("*.npz")):
        with np.load(path, allow_pickle=False) as data:
            header = json.loads(data["header"].tobytes())
        copies.append(f"{path.name} {newest - int(header['changeSeq'])}")
    return "; ".join(copies) or "no copy"


def percentiles(times: list[float]) -> tuple[str, str]:
    ordered = sorted(times)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return f"{statistics.median(ordered):.3f}", f"{p95:.3f}"


def import_breakdown(home: Path, query: str, top: int = 14) -> list[str]:
    """Where the imports of one cold recall go: each module's own time (-X importtime's
    "self") summed by package (engine and gno_tui by subpackage), largest first, so that the
    lines add up to the total instead of nesting."""
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "gno_tui",
            "--home",
            str(home),
            "recall",
            query,
            "--scope",
            SCOPES[0],
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    by_package: dict[str, int] = {}
    modules: dict[str, set[str]] = {}
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+\d+ \| *(\S+)", line)
        if not match:
            continue
        name = match[2]
        parts = name.split(".")
        key = ".".join(parts[:2]) if parts[0] in ("engine", "gno_tui") else parts[0]
        by_package[key] = by_package.get(key, 0) + int(match[1])
        modules.setdefault(key, set()).add(name)
    total = sum(by_package.values())
    ranked = sorted(by_package.items(), key=lambda item: -item[1])[:top]
    lines = [
        f"imports of one cold recall: {total / 1e6:.3f} s in {len(done.stderr.splitlines())}"
        " modules (-X importtime, own time summed by package):"
    ]
    lines += [f"  `{key}` {us / 1e3:.0f} ms ({len(modules[key])} modules)" for key, us in ranked]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=str(DATA / "msc" / "msc_personas_all.json"))
    parser.add_argument("--facts", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--home", help="the store (default <tmp>/gno-tui-bench/cli-cold-N)")
    parser.add_argument("--compare", metavar="DIR", help="another source tree, timed alongside")
    parser.add_argument("--label", default="", help="report name suffix (cli_cold_LABEL.md)")
    args = parser.parse_args()
    facts = persona_facts(Path(args.file))
    home = Path(
        args.home or Path(tempfile.gettempdir()) / "gno-tui-bench" / f"cli-cold-{args.facts}"
    )
    build_home(home, args.facts, facts)
    rng = random.Random(11)
    queries = rng.sample(facts, args.runs)
    base = [str(CLI), "--home", str(home)]
    tag = f"{os.getpid()}-{int(time.time())}"
    kinds: dict[str, list[list[str]]] = {
        "--version (floor)": [[str(CLI), "--version"]] * args.runs,
        # What any store command imports before gno-tui's own code runs: the database layer
        # (SQLModel over SQLAlchemy and pydantic), numpy and the model's readers.
        "import of the dependencies alone": [[sys.executable, "-c", DEPENDENCIES]] * args.runs,
        "recall --json": [
            [*base, "recall", q, "--scope", rng.choice(SCOPES), "--json"] for q in queries
        ],
        "remember --json (propose)": [
            [*base, "remember", q + " again", "--scope", SCOPES[0], "--json"] for q in queries
        ],
        "remember --add --json": [
            [
                *base,
                "remember",
                f"{q} (cold run {tag}-{i}-TREE)",  # TREE: which tree adds it
                "--scope",
                SCOPES[1],
                "--add",
                "--json",
            ]
            for i, q in enumerate(queries)
        ],
    }
    trees = {
        "this tree": None,
        **({f"compare ({args.compare})": args.compare} if args.compare else {}),
    }
    # The first recall persists the ranking index (as any first real call leaves it) and warms
    # the page cache, as on a machine in use.
    for source in trees.values():
        timed(kinds["recall --json"][0], source)
    behind_at_start = changes_behind(home)
    rows = []
    # Interleaved, so that a burst of load elsewhere hits every kind and tree alike.
    results: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for i in range(args.runs):
        for name, argvs in kinds.items():
            for number, (tree, source) in enumerate(trees.items()):
                argv = [part.replace("TREE", str(number)) for part in argvs[i]]
                results.setdefault((name, tree), []).append(timed(argv, source))
    for (name, tree), times in sorted(
        results.items(), key=lambda item: list(kinds).index(item[0][0])
    ):
        wall, cpu = [t for t, _ in times], [c for _, c in times]
        rows.append(
            [name, tree, args.runs, *percentiles(wall), f"{min(wall):.3f}", percentiles(cpu)[0]]
        )
        print(rows[-1], file=sys.stderr)
    load = os.getloadavg()
    notes = [
        f"machine: {machine()}; load average at the end {load[0]:.2f} / {load[1]:.2f} / "
        f"{load[2]:.2f} (1/5/15 min)",
        f"store: {args.facts} facts (+ the adds of earlier runs) in {home}; data {args.file}",
        "each run a fresh process of .venv/bin/gno-tui, spawn to exit; kinds interleaved",
        f"changes each index copy was behind at the start (one copy per model folder, so per "
        f"tree): {behind_at_start}; at the end: {changes_behind(home)}",
        *import_breakdown(home, queries[0]),
    ]
    name = "cli_cold" + (f"_{args.label}" if args.label else "")
    write_report(
        name, ["command", "source", "runs", "p50 s", "p95 s", "min s", "CPU p50 s"], rows, notes
    )


if __name__ == "__main__":
    main()
