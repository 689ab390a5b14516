"""Shared bits of the benchmarks: where the data is, the machine, and the report writer."""

from __future__ import annotations

import os
import platform
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The evaluation data lives beside the project, never inside it.
DATA = Path(os.environ.get("GNO_TUI_DATA", ROOT.parent / "shared" / "data"))
RESULTS = ROOT / "benchmarks" / "results"


def machine() -> str:
    cores = os.cpu_count()
    cpu = platform.processor() or platform.machine()
    return f"{cpu}, {cores} cores, Python {platform.python_version()}"


def write_report(
    name: str, header: list[str], rows: list[list[object]], notes: list[str] | None = None
) -> Path:
    """Print a Markdown table and write it to benchmarks/results/<name>.md."""
    lines = [f"# {name}", "", f"Run {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}.", ""]
    lines += [f"- {note}" for note in notes or []]
    lines += ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    text = "\n".join(lines) + "\n"
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.md"
    path.write_text(text, encoding="utf-8")
    print(text)
    return path
