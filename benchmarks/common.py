"""Shared bits of the benchmarks: where the data is, the machine, and the report writer."""

from __future__ import annotations

import contextlib
import os
import platform
import re
import signal
import subprocess
import tempfile
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# The evaluation data lives beside the project, never inside it.
DATA = Path(os.environ.get("GNO_TUI_DATA", ROOT.parent / "shared" / "data"))
RESULTS = ROOT / "benchmarks" / "results"


def peak_rss_mib() -> float:
    """This process's peak resident set, in MiB: /proc's VmHWM, the high-water mark of the
    process's own memory. Not getrusage's ru_maxrss: Linux carries that over an exec from
    the process that forked, so a reader started by a benchmark holding 3 GB reported 3 GB
    (measured here: a child of a process holding 1.5 GB, itself 13 MiB, reported 1,513)."""
    status = Path("/proc/self/status")
    for line in status.read_text(encoding="ascii").splitlines() if status.exists() else []:
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    import resource  # not on Linux: the best there is

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


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


def read_sts_pairs(path: Path) -> tuple[list[str], list[str], np.ndarray]:
    """One STS-B-format file: TAB separated, no header, no quoting; columns 4, 5, 6 (0-based)
    are the gold score and the two sentences (some rows carry extra columns after them)."""
    left: list[str] = []
    right: list[str] = []
    gold: list[float] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cols = line.split("\t")
        if len(cols) < 7:
            continue
        gold.append(float(cols[4]))
        left.append(cols[5])
        right.append(cols[6])
    return left, right, np.asarray(gold, dtype=np.float64)


def sts_split_files(folder: Path, dev: str | None, test: str | None) -> dict[str, Path]:
    """The dev and test files: sts-dev.csv / sts-test.csv in `folder` unless given one by one
    (so the benchmark runs unchanged on any other pair file of the same format)."""
    files = {
        "dev": Path(dev) if dev else folder / "sts-dev.csv",
        "test": Path(test) if test else folder / "sts-test.csv",
    }
    for split, path in files.items():
        if not path.is_file():
            raise SystemExit(f"error: the {split} file {path} was not found")
    return files


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks with ties given their average rank (as scipy.stats.rankdata)."""
    x = np.asarray(x, dtype=np.float64)
    order = np.argsort(x, kind="mergesort")
    xs = x[order]
    starts = np.r_[0, np.flatnonzero(xs[1:] != xs[:-1]) + 1]
    ends = np.r_[starts[1:], len(xs)]
    ranks = np.empty(len(xs))
    ranks[order] = np.repeat((starts + ends - 1) / 2.0 + 1.0, ends - starts)
    return ranks


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    ra, rb = _ranks(a), _ranks(b)
    ra -= ra.mean()
    rb -= rb.mean()
    return float((ra * rb).sum() / np.sqrt((ra * ra).sum() * (rb * rb).sum()))


# -- PostgreSQL for the server-mode benchmarks ------------------------------------------------


@contextlib.contextmanager
def postgres_server(url: str | None, *, prefix: str) -> Iterator[str]:
    """`url` itself, else a throwaway pgserver (PostgreSQL 16 + pgvector, the test extra)
    in a temporary folder, stopped and removed afterwards."""
    if url:
        yield url
        return
    import pgserver

    folder = Path(tempfile.mkdtemp(prefix=prefix))
    server = pgserver.get_server(folder, cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


@contextlib.contextmanager
def fresh_database(server: str, *, prefix: str) -> Iterator[str]:
    """A new, empty database on `server` (its postgresql:// URL), dropped afterwards."""
    from sqlalchemy import create_engine, make_url, text

    url = make_url(server).set(drivername="postgresql+psycopg")
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    name = prefix + uuid.uuid4().hex[:12]
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        rendered = url.set(database=name).render_as_string(hide_password=False)
        yield rendered.replace("postgresql+psycopg://", "postgresql://", 1)
    finally:
        with admin.connect() as connection:
            connection.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


# `gno-tui serve`'s start line names the address it listens on (gno_tui/http/serve.py).
_LISTENING = re.compile(r"listening on (http://\S+?):(\d+) ")


@contextlib.contextmanager
def serving(
    command: list[str], env: dict[str, str], *, timeout: float
) -> Iterator[tuple[str | None, subprocess.Popen[str], list[str]]]:
    """Run a `gno-tui ... serve --port 0` command: (its URL, read from its start line, or None
    when it ended or said nothing within `timeout`; the process; its stderr lines, growing as
    they come). Waits for the line, never for a time; SIGTERM at the end, then waited for."""
    process = subprocess.Popen(
        command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    lines: list[str] = []
    found: list[str] = []
    started = threading.Event()

    def read_log() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append(line)
            match = _LISTENING.search(line)
            if match and not found:
                found.append(f"{match.group(1)}:{match.group(2)}")
                started.set()
        started.set()  # the process ended: stop waiting

    reader = threading.Thread(target=read_log, daemon=True)
    reader.start()
    try:
        started.wait(timeout)
        yield (found[0] if found else None), process, lines
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        reader.join(timeout=10)
