"""A store grown file by file, and an import into it once grown (issue 38):

    python benchmarks/scale.py --grow --sizes 1000000 [--step 100000] [--held-out 20000]
        [--keep DIR | --home DIR] [--name NAME] [--data PATH]

The corpus of benchmarks/scale.py for the largest size is cut into files of --step items,
imported one after another into one home by the installed `gno-tui import --json` as
scale.py imports (durable, with dedup within the file and against the store). Each file's
rate is recorded beside the facts the store held before it, so a rate that falls as the store
grows shows; the first file goes into an empty home. Then --held-out items of the corpus past
the grown ones (items no file held) are imported into the grown store, and the CLI's cold
`recall --json` is timed twice: the first after that import, then a second.

--keep DIR grows the home in DIR and keeps it. --home DIR grows nothing: it imports held-out
items into DIR, grown before by --keep with the same --sizes and --held-out, taking the next
--held-out items of the corpus past those the --keep run imported (a second --home run would
find its items all there already)."""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchmarks.common import machine, write_report
from benchmarks.scale import (
    QUERIES,
    cli_recall_seconds,
    fact_count,
    fresh_memory_seconds,
    import_file,
    load_average,
    write_rows,
)
from benchmarks.speed import SCOPES, corpus, persona_facts

HEADER = [
    "file",
    "facts before",
    "items",
    "s",
    "items/s",
    "added",
    "queued (proposed)",
    "skipped",
    "load before (1 min)",
]


@dataclass(frozen=True)
class FileImport:
    """One file's import into the store: what the store held before, and what became of it."""

    label: str
    facts_before: int
    items: int
    seconds: float
    report: dict[str, int]
    load_before: str

    @property
    def rate(self) -> float:
        return self.items / self.seconds

    def row(self) -> list[object]:
        return [
            self.label,
            f"{self.facts_before:,}",
            f"{self.items:,}",
            f"{self.seconds:.1f}",
            f"{self.rate:,.0f}",
            f"{self.report['added']:,}",
            f"{self.report['proposed']:,}",
            f"{self.report['skipped']:,}",
            self.load_before,
        ]


def import_measured(home: Path, work: Path, label: str, rows: list[tuple[str, str]]) -> FileImport:
    """Import these rows into `home` as one file, timed; the file is written beforehand."""
    source = work / f"grow-{label}.jsonl"
    write_rows(source, rows)
    # A home not made yet holds nothing; connecting would leave an empty index.sqlite in it.
    facts_before = fact_count(home) if (home / "index.sqlite").exists() else 0
    load_before = load_average()
    seconds, report = import_file(home, source)
    source.unlink()
    measured = FileImport(label, facts_before, len(rows), seconds, report, load_before)
    print(" | ".join(str(cell) for cell in measured.row()), file=sys.stderr)
    return measured


def grow(args: argparse.Namespace) -> None:
    """The --grow run of benchmarks/scale.py (its options: see the module's docstring)."""
    if args.step <= 0 or args.held_out <= 0:
        raise SystemExit("--step and --held-out take a positive number of items")
    largest = max(int(size) for size in args.sizes.split(","))
    facts = persona_facts(Path(args.data))
    query = random.Random(7).sample(facts, QUERIES)[0]  # scale.py's first query
    # corpus(n)'s rows are the first n of any longer corpus, so an earlier --keep run's
    # items are known here: the grown ones, then its held-out ones, which --home skips.
    held_out_start = largest + (args.held_out if args.home else 0)
    rows = corpus(facts, held_out_start + args.held_out)
    work = Path(tempfile.mkdtemp(prefix="gno-scale-grow-"))
    home = Path(args.home or args.keep or work / "home")
    touch_before = fresh_memory_seconds()
    files: list[FileImport] = []
    if not args.home:
        for number, first in enumerate(range(0, largest, args.step), start=1):
            chunk = rows[first : min(first + args.step, largest)]
            files.append(import_measured(home, work, f"{number}", chunk))
    held_out = import_measured(home, work, "held-out", rows[held_out_start:])
    first_recall = cli_recall_seconds(home, query)
    second_recall = cli_recall_seconds(home, query)
    facts_after = fact_count(home)
    touch_after = fresh_memory_seconds()
    shutil.rmtree(work, ignore_errors=True)
    if args.keep:
        print(f"the grown home is kept in {home}", file=sys.stderr)

    if args.home:
        grown = (
            f"the store was grown before (--home {args.home}), its held-out items imported"
            " then too; no files were imported here"
        )
    else:
        grown = (
            f"{len(files)} files of up to {args.step:,} items imported one after another into"
            f" one home; file 1 goes into an empty home, each later one into the store the"
            f" files before it made"
        )
    if len(files) >= 2:
        ratio = (
            f"last file / first file rate: {files[-1].rate / files[0].rate:.2f}"
            f" ({files[-1].rate:,.0f} items/s into {files[-1].facts_before:,} facts,"
            f" {files[0].rate:,.0f} into an empty home)"
        )
    else:
        ratio = "last file / first file rate: (one file or none: no ratio)"
    write_report(
        args.name or "scale_grow",
        HEADER,
        [measured.row() for measured in [*files, held_out]],
        [
            f"machine: {machine()}",
            f"data: {args.data} (MSC persona facts, 8 scopes; the corpus of scale.py)",
            "import: the installed `gno-tui import --json`, durable, with dedup within the file"
            " and against the store; queued = likely duplicates left in the review queue",
            grown,
            ratio,
            f"held-out: items {held_out_start + 1:,} to {held_out_start + args.held_out:,} of"
            f" the corpus (in no file), into a store of {held_out.facts_before:,} facts:"
            f" {held_out.rate:,.0f} items/s",
            f"CLI cold `recall --json` (scope {SCOPES[0]}, the same query) after the held-out"
            f" import: first {first_recall:.2f} s, second {second_recall:.2f} s",
            f"facts in the store at the end: {facts_after:,}",
            "load before: the 1-minute load average as each import started; s to touch 512 MiB"
            f" of new memory before / after the run: {touch_before} / {touch_after}",
        ],
    )
