"""Cold CLI calls: what an agent that shells out on every turn pays (issue 17, "A fast CLI").

    python benchmarks/cli_cold.py [msc_personas_all.json] [--facts 10000] [--runs 15]
        [--home DIR] [--compare DIR]

A 10k-fact home (MSC persona facts over 8 scopes, as in benchmarks/speed.py) is built once
with the bulk-add path and kept outside the project (default: <tmp>/gno-tui-bench/); then
every run is a fresh `gno-tui --home H ... --json` process: `recall`, `remember` (propose)
and `remember --add`, timed from spawn to exit. `--version` is the floor (interpreter start
and argparse); importing the dependencies alone (no gno-tui code) is the floor of a command
through the full engine (the ORM), and importing what the read path needs (numpy, the model's
readers, sqlite3) the floor of a recall or propose on a SQLite home, which reads through
sqlite3 (engine/storage/embedded/sqlite_reader.py). `python -X importtime` of one recall says which
packages the imports cost.

The timed processes run with bytecode writing on (PYTHONDONTWRITEBYTECODE dropped), as an
installed package has its bytecode: otherwise each would compile every module it imports.

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
READ_PATH_DEPENDENCIES = "import numpy, tokenizers, safetensors.numpy, sqlite3"


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
    env.pop("PYTHONDONTWRITEBYTECODE", None)
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


def copy_header(path: Path) -> dict[str, object]:
    """The header of an index copy: FORMAT 2 (`.idx`, engine/retrieval/persisted.py) or the
    former `.npz` (what an older tree under --compare keeps)."""
    import json
    import struct

    if path.suffix == ".npz":
        import numpy as np

        with np.load(path, allow_pickle=False) as data:
            header: dict[str, object] = json.loads(data["header"].tobytes())
            return header
    with path.open("rb") as source:
        (length,) = struct.unpack("<Q", source.read(16)[8:])
        header = json.loads(source.read(length))
        return header


def changes_behind(home: Path) -> str:
    """How many changes each index copy on disk is behind the store's change log: every fresh
    process applies them again (a copy is rewritten once 200 have piled up at 10k facts)."""
    import sqlite3

    with sqlite3.connect(home / "index.sqlite") as db:
        newest = db.execute("SELECT coalesce(max(seq), 0) FROM fact_changes").fetchone()[0]
    copies = []
    for path in sorted([*(home / ".index").glob("*.npz"), *(home / ".index").glob("*.idx")]):
        seq = copy_header(path)["changeSeq"]
        assert isinstance(seq, int)
        copies.append(f"{path.name} {newest - seq}")
    return "; ".join(copies) or "no copy"


# Times reading a home's index copy (engine/retrieval/persisted.py `load`, whose signature both
# formats share) in one process, after one untimed read: what a cold call pays for it.
LOAD_PROBE = """
import sqlite3, statistics, sys, time
from pathlib import Path
from engine.retrieval import persisted
from engine.retrieval.embeddings import load_embedder
from engine.retrieval.word_alignment import WordVectors
home = Path(sys.argv[1])
embedder = load_embedder(None).embedder
with sqlite3.connect(home / "index.sqlite") as db:
    store = str(db.execute("SELECT value FROM store_meta WHERE name = 'store_id'").fetchone()[0])
    newest = db.execute("SELECT coalesce(max(seq), 0) FROM fact_changes").fetchone()[0]
times = []
for _ in range(8):
    start = time.perf_counter()
    loaded = persisted.load(persisted.index_file(home, embedder.model_id), store_id=store,
        model_id=embedder.model_id, dims=embedder.dims, word_vectors=WordVectors(embedder),
        newest_change=newest)
    times.append(time.perf_counter() - start)
    assert loaded is not None, "no usable copy"
print(statistics.median(times[1:]))
"""


def load_time(home: Path, source: str | None) -> float | None:
    env = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    if source:
        env["PYTHONPATH"] = source
    done = subprocess.run(
        [sys.executable, "-c", LOAD_PROBE, str(home)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tempfile.gettempdir(),
        check=False,
    )
    return float(done.stdout) if done.returncode == 0 else None


def load_times(home: Path, trees: dict[str, str | None], rounds: int = 5) -> str:
    """Each tree's time to read its index copy: the median over `rounds` processes, the trees
    taking turns (a busy machine's load falls on both alike)."""
    found: dict[str, list[float]] = {tree: [] for tree in trees}
    for _ in range(rounds):
        for tree, source in trees.items():
            seconds = load_time(home, source)
            if seconds is not None:
                found[tree].append(seconds)
    return ", ".join(
        f"{tree} {statistics.median(times) * 1000:.0f} ms" if times else f"{tree} no usable copy"
        for tree, times in found.items()
    )


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
        "import of the read path's dependencies": [[sys.executable, "-c", READ_PATH_DEPENDENCIES]]
        * args.runs,
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
    loads = load_times(home, trees)
    load = os.getloadavg()
    notes = [
        f"machine: {machine()}; load average at the end {load[0]:.2f} / {load[1]:.2f} / "
        f"{load[2]:.2f} (1/5/15 min)",
        f"store: {args.facts} facts (+ the adds of earlier runs) in {home}; data {args.file}",
        "each run a fresh process of .venv/bin/gno-tui, spawn to exit; kinds interleaved",
        f"changes each index copy was behind at the start (one copy per model folder, so per "
        f"tree): {behind_at_start}; at the end: {changes_behind(home)}",
        "reading the index copy in process (median of 7 reads after one untimed, in each of "
        f"5 processes per tree, taking turns; the median of those): {loads}",
        *import_breakdown(home, queries[0]),
    ]
    name = "cli_cold" + (f"_{args.label}" if args.label else "")
    write_report(
        name, ["command", "source", "runs", "p50 s", "p95 s", "min s", "CPU p50 s"], rows, notes
    )


if __name__ == "__main__":
    main()
