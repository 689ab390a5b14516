"""Workbench "speed of feel" (issue 16): each measure against its target, as a person sees it.

    python benchmarks/workbench_latency.py [msc_personas_all.json] [--facts 100000]

Everything runs in a real terminal: the installed `gno-tui` in a 140x40 tmux pane, keys sent
with `tmux send-keys`, the pane read with `tmux capture-pane` in a tight loop until the
expected text is on it. A time is from just before the key is sent to the first capture that
shows the text, so it includes tmux's own delivery and drawing and is late by at most one
capture (the mean capture interval is in the report). Measured: `--demo` to its first rows,
the keys 1-6 (first visit and later visits; the screen's frame and its loaded data apart),
a modal and the first key inside it, a home of `--facts` facts to its first rows, each
keystroke of a Library filter there to the refiltered rows, and ctrl+q to the process gone.
Wall time is the point here (benchmarks are not tests); the machine's load is in the report.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import DATA, machine, write_report
from benchmarks.speed import CACHE, corpus, persona_facts
from engine.facade.factory import open_engine
from engine.storage.bulk import BulkFact, add_many

SCRIPT = str(Path(sys.executable).parent / "gno-tui")  # --command replaces it
FILTER_WORD = "basketball"  # typed a key at a time into the Library filter
TIMEOUT = 60.0


@dataclass(frozen=True)
class Target:
    """A screen of the demo: its key, a text its frame shows as soon as it is up, and a text
    that needs its data loaded (the same when the screen shows no store data at first)."""

    key: str
    frame: str
    data: str
    boxed: bool  # it opens with the focus in a text box: escape first, or a digit is text


# Texts of the seeded demo (gno_tui/demo_data.py); a regex each.
DEMO_SCREENS = {
    "library": Target("1", r"Needs attention", r"Needs attention \d+", False),
    "remember": Target("2", r"Scopes \(comma-separated\)", r"Scopes \(comma-separated\)", True),
    "review": Target("3", r"Proposals", r"\d+ pending", False),
    "recall": Target("4", r"egress ceiling", r"scopes.*\n.*project:", True),
    "supersession": Target("5", r"No fact chosen", r"No fact chosen", True),
    # A receipt's time: HH:MM:SS (today's, or any in trees before 2026-12-06), MM-DD HH:MM
    # (this year's), or the date.
    "receipts": Target(
        "6",
        r"Receipts, newest first",
        r"(\d\d:\d\d:\d\d|\d\d-\d\d \d\d:\d\d|\d{4}-\d\d-\d\d)\s+(mcp|cli):",
        False,
    ),
}
UNBOXED_FOOTER = re.compile(r"(?<!alt\+)1-6 Screens")  # the digits switch screens here


@dataclass
class Pane:
    """One tmux session running one command; every capture is counted (the poll interval)."""

    name: str
    captures: list[float] = field(default_factory=list)  # seconds each capture-pane took

    def start(self, command: str) -> float:
        start = time.perf_counter()
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", self.name, "-x", "140", "-y", "40", command],
            check=True,
        )
        return start

    def text(self) -> str:
        start = time.perf_counter()
        shown = subprocess.run(
            ["tmux", "capture-pane", "-p", "-t", self.name], capture_output=True, text=True
        ).stdout
        self.captures.append(time.perf_counter() - start)
        return shown

    def send(self, key: str) -> float:
        start = time.perf_counter()
        subprocess.run(["tmux", "send-keys", "-t", self.name, key], check=True)
        return start

    def wait(self, shown: Callable[[str], bool], since: float) -> float:
        """Seconds from `since` until a capture satisfies `shown`."""
        text = ""
        while time.perf_counter() - since < TIMEOUT:
            if shown(text := self.text()):
                return time.perf_counter() - since
        raise TimeoutError(f"{self.name}: not shown within {TIMEOUT:.0f} s; the pane:\n{text}")

    def wait_for(self, pattern: str, since: float) -> float:
        return self.wait(lambda text: re.search(pattern, text) is not None, since)

    def settle(self) -> None:
        """Until the pane stops changing (loads done) for a while: the next key starts from an
        idle workbench."""
        last, still_since = self.text(), time.perf_counter()
        while time.perf_counter() - still_since < 0.5:
            time.sleep(0.02)
            if (now := self.text()) != last:
                last, still_since = now, time.perf_counter()

    def alive(self) -> bool:
        found = subprocess.run(["tmux", "has-session", "-t", self.name], capture_output=True)
        return found.returncode == 0

    def quit(self) -> float:
        """ctrl+q to the process gone (the pane closes with it)."""
        since = self.send("C-q")
        while self.alive() and time.perf_counter() - since < TIMEOUT:
            time.sleep(0.002)
        return time.perf_counter() - since

    def close(self) -> None:
        subprocess.run(["tmux", "kill-session", "-t", self.name], check=False, capture_output=True)


@dataclass
class Found:
    launch: list[float] = field(default_factory=list)
    first_frame: list[float] = field(default_factory=list)
    first_data: list[float] = field(default_factory=list)
    again_frame: list[float] = field(default_factory=list)
    again_data: list[float] = field(default_factory=list)
    eager_frame: list[float] = field(default_factory=list)
    eager_data: list[float] = field(default_factory=list)
    modal: list[float] = field(default_factory=list)
    in_modal: list[float] = field(default_factory=list)
    quit: list[float] = field(default_factory=list)
    big_launch: list[float] = field(default_factory=list)
    big_quit: list[float] = field(default_factory=list)
    typed: list[float] = field(default_factory=list)
    captures: list[float] = field(default_factory=list)


def switch(pane: Pane, at: str, to: str) -> tuple[float, float]:
    """From screen `at` to screen `to` by its digit: (to its frame, to its data)."""
    if DEMO_SCREENS[at].boxed:
        since = pane.send("Escape")
        pane.wait(lambda text: UNBOXED_FOOTER.search(text) is not None, since)
    target = DEMO_SCREENS[to]
    since = pane.send(target.key)
    frame = pane.wait_for(target.frame, since)
    data = pane.wait_for(target.data, since)
    return frame, data


def demo_run(found: Found, command: str, run: int) -> None:
    """One demo session: launch, every screen twice, the modals, quit."""
    pane = Pane(f"gno-latency-{os.getpid()}-{run}")
    try:
        since = pane.start(f"{command} --demo")
        found.launch.append(pane.wait_for(r"team:infra", since))
        pane.settle()
        at = "library"
        for visit in ("first", "again", "again"):
            for to in ("receipts", "supersession", "recall", "review", "remember", "library"):
                if visit == "first" and to == "library":
                    continue  # the launch was its first visit
                frame, data = switch(pane, at, to)
                (found.first_frame if visit == "first" else found.again_frame).append(frame)
                (found.first_data if visit == "first" else found.again_data).append(data)
                at = to
                pane.settle()
        for key, shown in (("F1", r"Keys on this screen"), ("@", r"Decision log ·")) * 2:
            found.modal.append(pane.wait_for(shown, pane.send(key)))
            pane.settle()
            before = pane.text()
            # The first key inside: the help scrolls, the log's cursor moves a row.

            def moved_on(text: str, shown: str = before) -> bool:
                return text != shown

            moved = pane.wait(moved_on, pane.send("Down"))
            found.in_modal.append(moved)
            pane.send("Escape")
            pane.settle()
        found.quit.append(pane.quit())
    finally:
        found.captures += pane.captures
        pane.close()


def eager_run(found: Found, command: str, run: int) -> None:
    """A key 3 (Review) pressed the moment the demo's first rows show, while the workbench is
    still busy starting (building its other screens)."""
    pane = Pane(f"gno-latency-eager-{os.getpid()}-{run}")
    try:
        since = pane.start(f"{command} --demo")
        pane.wait_for(r"team:infra", since)
        frame, data = switch(pane, "library", "review")
        found.eager_frame.append(frame)
        found.eager_data.append(data)
        pane.settle()
        pane.quit()
    finally:
        found.captures += pane.captures
        pane.close()


def big_run(found: Found, command: str, home: Path, run: int, *, typing: bool) -> None:
    """The big home: launch to its first rows, (`typing`) the filter a key at a time, quit."""
    pane = Pane(f"gno-latency-big-{os.getpid()}-{run}")
    try:
        since = pane.start(f"{command} --home {home}")
        found.big_launch.append(pane.wait_for(r"current +0\.70", since))
        pane.settle()
        if typing:
            pane.send("/")
            pane.settle()
            for end in range(1, len(FILTER_WORD) + 1):
                typed = FILTER_WORD[:end]
                # The summary names the filter once the page for it is on screen.
                since = pane.send(FILTER_WORD[end - 1])
                found.typed.append(pane.wait_for(rf"filter: {typed}(\s|$)", since))
                pane.settle()
            pane.send("C-u")  # an empty filter again, kept for the next launch
            pane.wait(lambda text: "shown · filter: " not in text, time.perf_counter())
            pane.settle()
        found.big_quit.append(pane.quit())
    finally:
        found.captures += pane.captures
        pane.close()


def build_home(size: int, facts: list[str]) -> Path:
    """A home of `size` distinct facts (speed.corpus), built once and cached: bulk adds
    without fsync, vectors of the bundled model included (as a user's store has)."""
    home = CACHE / f"workbench-{size}"
    if (home / "index.sqlite").exists():
        return home
    store = open_engine(home=home)
    start = time.perf_counter()
    add_many(
        store,
        [
            BulkFact(text=t, scopes=[s], caller="bench", session="ui")
            for t, s in corpus(facts, size)
        ],
        durable=False,
    )
    store.snapshot()
    store.db.dispose()
    print(f"built {size} facts in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    return home


def shown_time(values: list[float], unit: str) -> str:
    """median / worst, in ms or s; "not run" for a measure not taken."""
    if not values:
        return "not run"
    if unit == "ms":
        return f"{statistics.median(values) * 1000:.0f} / {max(values) * 1000:.0f} ms"
    return f"{statistics.median(values):.2f} / {max(values):.2f} s"


def ratio(values: list[float], baseline: list[float]) -> str:
    if not values or not baseline:
        return "—"
    return f"{statistics.median(values) / statistics.median(baseline):.2f}x"


def measures(n: int) -> list[tuple[str, str, str, float | None]]:
    """(what, the Found field, unit, target in seconds or None), in the report's order."""
    return [
        ("key 1-6 to the screen's frame, first visit", "first_frame", "ms", 0.1),
        ("key 1-6 to the screen with its data, first visit", "first_data", "ms", 0.1),
        ("key 1-6 to the screen's frame, later visits", "again_frame", "ms", 0.1),
        ("key 1-6 to the screen with its data, later visits", "again_data", "ms", 0.1),
        ("key 3 the moment the first rows show, to Review's frame", "eager_frame", "ms", 0.1),
        ("key 3 the moment the first rows show, to Review with its data", "eager_data", "ms",
         0.1),
        ("key to a modal shown (F1 help, @ log)", "modal", "ms", None),
        ("first key in a modal to its effect shown", "in_modal", "ms", 0.1),
        ("ctrl+q to the process gone (--demo)", "quit", "s", 0.5),
        (f"ctrl+q to the process gone ({n} facts)", "big_quit", "s", 0.5),
        ("gno-tui --demo to first rows (launch included)", "launch", "s", 1.5),
        (f"{n}-fact home to first rows (launch included)", "big_launch", "s", 2.0),
        (f"Library filter keystroke to its rows shown, {n} facts", "typed", "ms", 0.15),
    ]  # fmt: skip


def report_rows(found: Found, baseline: Found | None, n: int) -> list[list[object]]:
    rows: list[list[object]] = []
    for what, name, unit, target in measures(n):
        values: list[float] = getattr(found, name)
        row: list[object] = [what, shown_time(values, unit)]
        if baseline is not None:
            before: list[float] = getattr(baseline, name)
            row += [shown_time(before, unit), ratio(values, before)]
        goal = "—" if target is None else f"<= {target * 1000:.0f} ms" if unit == "ms" else (
            f"<= {target:g} s")  # fmt: skip
        met = "" if target is None or not values else (
            "meets" if max(values) <= target else "misses")  # fmt: skip
        rows.append([*row, goal, met])
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=str(DATA / "msc" / "msc_personas_all.json"))
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--name", default="workbench_latency", help="the report's file name")
    parser.add_argument("--command", default=SCRIPT, help="the gno-tui to measure")
    parser.add_argument(
        "--baseline",
        help="another gno-tui command (say, the last commit's checkout) measured in the same "
        "run, session for session in turn with --command, for the ratios (a tree older than "
        "2026-12-01, whose Library's summary line was hidden under the footer, cannot have "
        "its filter typing timed)",
    )
    args = parser.parse_args()
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is needed: every measure is taken in a real terminal")
    home = build_home(args.facts, persona_facts(Path(args.file)))
    # The Library keeps its filter per home: a filter typed by an earlier run would be shown.
    (home / ".surface-state.json").unlink(missing_ok=True)
    load_before = os.getloadavg()
    found, baseline = Found(), Found() if args.baseline else None
    for run in range(args.runs):
        # The filter is typed in every run (ten keystrokes a run), by both commands.
        compared = [(found, args.command, True)]
        if baseline is not None:
            compared.append((baseline, args.baseline, True))
        for into, command, typing in compared if run % 2 == 0 else reversed(compared):
            demo_run(into, command, run)
            eager_run(into, command, run)
            big_run(into, command, home, run, typing=typing)
    load_after = os.getloadavg()

    header = ["what", "time (median / worst)"]
    if baseline is not None:
        header += ["baseline", "ratio"]
    captures = found.captures + (baseline.captures if baseline else [])
    notes = [
        f"machine: {machine()}",
        "load average (1/5/15 min) before: {:.2f} {:.2f} {:.2f}, after: {:.2f} {:.2f} {:.2f}"
        " (other engineers' work ran on the machine meanwhile)".format(*load_before, *load_after),
        "every time: the installed gno-tui in a 140x40 tmux pane; from just before "
        "`tmux send-keys` to the first `tmux capture-pane` showing the expected text (so "
        "tmux's delivery and drawing are included); times are median / worst",
        f"polling: {len(captures)} captures, one every {statistics.mean(captures) * 1000:.1f} "
        "ms on average (a time is late by at most one interval)",
        f"command: {args.command}" + (f"; baseline: {args.baseline}" if args.baseline else ""),
        f"{args.runs} demo sessions (each screen visited once, then twice more; F1 and @ "
        f"twice each), {args.runs} more with a key 3 at the first rows, and {args.runs} "
        f"launches of the {args.facts}-fact home (benchmarks/speed.py corpus()), per command, "
        "the two commands in turn; verdicts take the worst case",
        "the screen's frame: its own fixed text is on screen; with its data: a text only the "
        "store's data gives (tab counts, rows, pending count, scopes); Remember and Chain "
        "open on an empty form, so their frame is all there is; a screen that opens in a text "
        "box gets escape first (not timed), as a person presses it",
        f"the filter: {FILTER_WORD!r} typed a key at a time (every run), each key timed until "
        "the summary line names the filter typed so far (it is written when that filter's "
        "rows are)",
    ]
    rows = report_rows(found, baseline, args.facts)
    write_report(args.name, [*header, "target", "verdict"], rows, notes)


if __name__ == "__main__":
    main()
