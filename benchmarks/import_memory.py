"""Peak memory of `gno-tui import`: near-identical long facts (one near-duplicate group that
grows with the file) and many short distinct facts, by this tree and, with --baseline, by an
earlier one, in the same run.

    git archive HEAD engine gno_tui schemas screens | tar -x -C /tmp/base_import
    python benchmarks/import_memory.py --baseline /tmp/base_import

Each import is a fresh process running the CLI of the tree named (`gno-tui import --json`,
that tree first on sys.path, the bundled model, a fresh home), and its peak resident set is
its own high-water mark (/proc's VmHWM, read as it exits: getrusage of a child would carry
over the peak of the process that started it). The data is generated (a fixed seed):

- near-identical: about 4 KB of text, each line the same words with its own number in front,
  all in one scope, so that every line is a likely duplicate of the first (issue 39: 12,500
  such lines peaked at 7.86 GB);
- distinct: short facts made of random words of the model's vocabulary, 500 to a scope.

Other JSONL files can be measured as they are with --file. The report goes to
benchmarks/results/import_memory.md."""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import ROOT, machine, write_report

# Runs the CLI of the tree in argv[1] with the arguments after it, then writes the process's
# peak resident set (VmHWM, KiB) to stderr's last line.
_RUN_TREE = (
    "import sys; tree = sys.argv.pop(1); sys.path.insert(0, tree); "
    "from gno_tui.cli import main; code = main(sys.argv[1:]); "
    "hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM:')][0].split()[1]; "
    "sys.stderr.write(f'\\nVmHWM {hwm}\\n'); sys.exit(code)"
)
NEAR_SIZES = (1_000, 4_000, 12_500)
DISTINCT_SIZE = 232_000
LONG_TEXT_BYTES = 4_000
VOCABULARY = ROOT / "engine" / "retrieval" / "model" / "tokenizer.json"


def words() -> list[str]:
    """Whole words of the bundled model's vocabulary (no word pieces, no digits)."""
    vocab = json.loads(VOCABULARY.read_text(encoding="utf-8"))["model"]["vocab"]
    return sorted(w for w in vocab if w.isascii() and w.isalpha() and len(w) >= 4)


def near_identical(path: Path, count: int, vocabulary: list[str]) -> Path:
    pick = random.Random(39)
    body = ""
    while len(body) < LONG_TEXT_BYTES - 40:
        body += pick.choice(vocabulary) + " "
    with path.open("w", encoding="utf-8") as out:
        for n in range(count):
            text = f"Note {n}: {body}".strip()[:LONG_TEXT_BYTES]
            out.write(json.dumps({"text": text, "scopes": ["bench"]}) + "\n")
    return path


def distinct(path: Path, count: int, vocabulary: list[str]) -> Path:
    pick = random.Random(232)
    with path.open("w", encoding="utf-8") as out:
        for n in range(count):
            text = " ".join(pick.choice(vocabulary) for _ in range(pick.randint(5, 9)))
            out.write(json.dumps({"text": f"{text} {n}", "scopes": [f"s{n // 500}"]}) + "\n")
    return path


def import_peak(tree: Path, source: Path, workdir: Path) -> tuple[float, float, dict[str, int]]:
    """Peak RSS (MiB) and seconds of one import of `source` by `tree`, into a fresh home, and
    its report's counts."""
    home = Path(tempfile.mkdtemp(prefix="home-", dir=workdir))
    command = [sys.executable, "-c", _RUN_TREE, str(tree), "--home", str(home), "import"]
    start = time.perf_counter()
    done = subprocess.run([*command, str(source), "--json"], capture_output=True, text=True)
    took = time.perf_counter() - start
    shutil.rmtree(home, ignore_errors=True)
    if done.returncode != 0:
        raise SystemExit(f"import by {tree} failed: {(done.stdout + done.stderr)[-2000:]}")
    hwm = next(line for line in reversed(done.stderr.splitlines()) if line.startswith("VmHWM "))
    report = json.loads(done.stdout)
    counts = {name: report[name] for name in ("items", "added", "skipped", "proposed")}
    return int(hwm.split()[1]) / 1024, took, counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", type=Path, help="an earlier tree to measure as well")
    parser.add_argument("--tree", type=Path, default=ROOT, help="the tree to measure (this one)")
    parser.add_argument(
        "--near", type=int, nargs="*", default=list(NEAR_SIZES), help="near-identical sizes"
    )
    parser.add_argument("--distinct", type=int, default=DISTINCT_SIZE, help="distinct facts")
    parser.add_argument("--file", type=Path, nargs="*", default=[], help="more JSONL files")
    parser.add_argument("--name", default="import_memory", help="the report's name")
    args = parser.parse_args()
    trees = [("this tree", args.tree)] + ([("baseline", args.baseline)] if args.baseline else [])
    vocabulary = words()
    rows: list[list[object]] = []
    with tempfile.TemporaryDirectory(prefix="gno-import-memory-") as folder:
        workdir = Path(folder)
        sources = [
            (
                f"{n:,} near-identical ~4 KB",
                near_identical(workdir / f"near-{n}.jsonl", n, vocabulary),
            )
            for n in args.near
        ]
        if args.distinct:
            sources.append(
                (
                    f"{args.distinct:,} short distinct",
                    distinct(workdir / "distinct.jsonl", args.distinct, vocabulary),
                )
            )
        sources += [(str(path), path) for path in args.file]
        for label, source in sources:
            size = source.stat().st_size / 2**20
            measured = {name: import_peak(tree, source, workdir) for name, tree in trees}
            ours = measured["this tree"]
            row: list[object] = [label, f"{size:.1f}", f"{ours[0]:,.0f}", f"{ours[1]:.1f}"]
            if args.baseline:
                before = measured["baseline"]
                if before[2] != ours[2]:
                    raise SystemExit(f"{label}: the trees disagree: {before[2]} vs {ours[2]}")
                row += [f"{before[0]:,.0f}", f"{before[1]:.1f}", f"{before[0] / ours[0]:.1f}x"]
            row.append(", ".join(f"{k} {v:,}" for k, v in ours[2].items()))
            rows.append(row)
            print(row, flush=True)
    header = ["file", "MiB", "peak RSS MiB", "s"]
    if args.baseline:
        header += ["before: peak RSS MiB", "before: s", "before / after"]
    header.append("report (identical in both trees)" if args.baseline else "report")
    notes = [
        f"Machine: {machine()}.",
        "Each import: a fresh process and a fresh home, the bundled model, durable writes; "
        "peak RSS is the process's own VmHWM.",
    ]
    notes.append(f"This tree: {args.tree}.")
    if args.baseline:
        notes.append(f"Baseline: the tree at {args.baseline}.")
    write_report(args.name, header, rows, notes)


if __name__ == "__main__":
    main()
