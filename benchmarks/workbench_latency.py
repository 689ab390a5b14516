"""Workbench latency: time from `gno-tui --demo` to the first painted rows (in a real terminal,
tmux), and keystroke-to-result time of the Remember candidate preview at 10k facts (Pilot,
real keystrokes; the preview waits 300 ms after the last keystroke by design, counted in).

    python benchmarks/workbench_latency.py [msc_personas_all.json] [--facts 10000]
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import DATA, machine, write_report
from benchmarks.speed import persona_facts
from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.storage.bulk import BulkFact, add_many
from gno_tui.app import create_app

PROBES = [
    "I play basketball on weekends",
    "My favourite band is Metallica",
    "I work as a nurse at night",
    "I have two dogs and a cat",
    "I am learning French",
]


def demo_first_paint(runs: int = 3) -> float:
    """Seconds from launching `gno-tui --demo` in tmux to a fact row on screen."""
    if shutil.which("tmux") is None:
        raise SystemExit("tmux is needed for the first-paint measurement")
    script = str(Path(sys.executable).parent / "gno-tui")
    times = []
    for run in range(runs):
        name = f"gno-latency-{run}"
        start = time.perf_counter()
        subprocess.run(
            ["tmux", "new-session", "-d", "-s", name, "-x", "140", "-y", "40", f"{script} --demo"],
            check=True,
        )
        try:
            while time.perf_counter() - start < 60:
                screen = subprocess.run(
                    ["tmux", "capture-pane", "-p", "-t", name], capture_output=True, text=True
                ).stdout
                if "Needs attention" in screen and "team:infra" in screen:
                    times.append(time.perf_counter() - start)
                    break
                time.sleep(0.02)
        finally:
            subprocess.run(["tmux", "kill-session", "-t", name], check=False)
    return statistics.median(times)


async def preview_latency(service: MemoryService) -> list[float]:
    app = create_app(service=service, screen="remember", watch_store=False)
    timings = []
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.pause(1.0)
        await pilot.click("#remember-scopes")
        await pilot.press(*"persona:0")
        for probe in PROBES:
            area = app.screen.query_one("#remember-text")
            area.clear()  # type: ignore[attr-defined]
            area.focus()
            await pilot.pause(0.6)
            matching = app.screen.query_one("#remember-matching")
            before = str(matching.content)  # type: ignore[attr-defined]
            await pilot.press(*probe)
            start = time.perf_counter()
            while time.perf_counter() - start < 10:
                await pilot.pause(0.005)
                now = str(matching.content)  # type: ignore[attr-defined]
                if now != before and "candidate" in now.lower():
                    break
            timings.append(time.perf_counter() - start)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=str(DATA / "msc" / "msc_personas_all.json"))
    parser.add_argument("--facts", type=int, default=10_000)
    args = parser.parse_args()
    paint = demo_first_paint()
    facts = list(dict.fromkeys(persona_facts(Path(args.file))))[: args.facts]
    with tempfile.TemporaryDirectory() as home:
        store = open_engine(home=home)
        add_many(
            store,
            [BulkFact(text=f, scopes=["persona:0"], caller="bench", session="ui") for f in facts],
            durable=False,
        )
        store.snapshot()
        timings = asyncio.run(preview_latency(MemoryService(store)))
    rows = [
        ["gno-tui --demo to first painted rows (tmux, median of 3)", f"{paint:.2f} s"],
        [
            f"Remember preview, last keystroke to candidates, {len(facts)} facts "
            "(median of 5; includes the 300 ms debounce)",
            f"{statistics.median(timings) * 1000:.0f} ms",
        ],
    ]
    write_report("workbench_latency", ["what", "time"], rows, notes=[f"machine: {machine()}"])


if __name__ == "__main__":
    main()
