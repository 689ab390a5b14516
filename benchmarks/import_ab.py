"""Import speed against a baseline tree, in turns: the same 100k-item JSONL file imported by the
CLI of this tree and by the CLI of an earlier one, into a fresh home each time.

    git worktree add /tmp/base <commit>
    python benchmarks/import_ab.py --baseline /tmp/base [--rounds 3] [--size 100000]

This machine's speed drifts by a third within an hour (docs/decisions.md, "Import speed is
measured in turns"), so a single run says little about a change; runs in turns, a minute
apart, compare the trees under the same conditions. Each run is a fresh process running
`gno-tui import --json` of the tree named (its `gno_tui.cli.entry_point`, with that tree
first on sys.path), durable, with dedup. The homes are removed only at the end: ext4 makes
new files slowly for half a minute after many were deleted. Results go to
benchmarks/results/import_ab.md."""

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

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import DATA, ROOT, machine, write_report
from benchmarks.speed import corpus, persona_facts

# Runs the CLI of the tree in argv[1] with the arguments after it.
_RUN_TREE = (
    "import sys; tree = sys.argv.pop(1); sys.path.insert(0, tree); "
    "from gno_tui.cli import entry_point; sys.argv[0] = 'gno-tui'; entry_point()"
)
QUIET_SECONDS = 20.0  # between runs: the previous run's writeback settles


def tree_commit(tree: Path) -> str:
    done = subprocess.run(
        ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    dirty = subprocess.run(
        ["git", "-C", str(tree), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() + (" (with changes)" if dirty.stdout.strip() else "")


def import_once(tree: Path, home: Path, source: Path) -> tuple[float, dict[str, int]]:
    """Seconds for one `gno-tui import --json` by `tree`'s CLI, and what became of the items."""
    command = [sys.executable, "-c", _RUN_TREE, str(tree), "--home", str(home), "import"]
    start = time.perf_counter()
    done = subprocess.run([*command, str(source), "--json"], capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"import by {tree} failed: {(done.stdout + done.stderr)[-2000:]}")
    report = json.loads(done.stdout)
    return took, {key: int(report[key]) for key in ("added", "proposed", "skipped")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", required=True, help="a checkout of the tree to compare")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--data", default=str(DATA / "msc" / "msc_personas_all.json"))
    args = parser.parse_args()
    trees = {"baseline": Path(args.baseline).resolve(), "this tree": ROOT}
    work = Path(tempfile.mkdtemp(prefix="gno-import-ab-"))
    source = work / "items.jsonl"
    with source.open("w", encoding="utf-8") as out:
        for text, scope in corpus(persona_facts(Path(args.data)), args.size):
            out.write(json.dumps({"text": text, "scopes": [scope]}) + "\n")
    speeds: dict[str, list[float]] = {name: [] for name in trees}
    outcome: dict[str, dict[str, int]] = {}
    rows: list[list[object]] = []
    try:
        for round_no in range(1, args.rounds + 1):
            row: list[object] = [round_no]
            for name, tree in trees.items():
                time.sleep(QUIET_SECONDS)
                load = f"{os.getloadavg()[0]:.2f}"
                took, outcome[name] = import_once(tree, work / f"{name[:4]}-{round_no}", source)
                speeds[name].append(args.size / took)
                row.append(f"{args.size / took:,.0f} ({took:.1f} s, load {load})")
                print(f"round {round_no} {name}: {took:.1f} s", file=sys.stderr)
            rows.append(row)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if outcome["baseline"] != outcome["this tree"]:
        raise SystemExit(f"the trees decided the items differently: {outcome}")
    medians = [statistics.median(speeds[name]) for name in trees]
    rows.append(["median", *(f"{m:,.0f}" for m in medians)])
    rows.append(["ratio", "1.00", f"{medians[1] / medians[0]:.2f}"])
    write_report(
        "import_ab",
        ["round", *(f"{name}: items/s" for name in trees)],
        rows,
        [
            f"machine: {machine()}",
            f"baseline: {tree_commit(trees['baseline'])}; this tree: {tree_commit(ROOT)}",
            f"{args.size:,} MSC persona items in 8 scopes ({args.data}); each tree's "
            f"`gno-tui import --json`, durable, with dedup, into a fresh home; the trees in "
            f"turns, {QUIET_SECONDS:.0f} s apart",
            "items added / proposed / skipped (both trees): "
            + " / ".join(f"{outcome['this tree'][k]:,}" for k in ("added", "proposed", "skipped")),
        ],
    )


if __name__ == "__main__":
    main()
