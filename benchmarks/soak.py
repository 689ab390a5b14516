"""A soak: mixed load on one store for a long while, writer processes SIGKILLed every few
minutes and (server mode) PostgreSQL restarted once; then every acknowledged write must be in
the store (0 lost), no chain or key may have two heads (0 forks), and disk and memory are
sampled throughout (their slopes after the warm-up are reported).

    python benchmarks/soak.py [--minutes 30] [--mode embedded|server] [--kill-every 180]
                              [--rate 3] [--model bundled|none] [--name soak]
    python benchmarks/soak.py --writes 200 --kills 2      # a bounded amount of work, no clock

The load (benchmarks/soak_writers.py, a process each): the console script (adds, chain
supersedes, key moves), the official MCP client over stdio to `gno-tui mcp --enable-write`,
httpx to `gno-tui serve` on loopback with a writing token and a propose-only one, a reader
recalling through the façade, and a person deciding the held proposals and superseding chain
heads through the façade. The kills take turns: the console-script writer (and its running
call), the MCP client with its server, the HTTP server, the person; each is started again at
once. The reader is never killed, so its memory is one process's from start to end.

With --writes N the run ends once N writes were acknowledged, the kills (--kills) fall at
even shares of N and PostgreSQL restarts halfway: what tests/crash/test_soak_short.py runs.
Server mode starts a pgserver (PostgreSQL 16 + pgvector) of its own, so it can restart it.
Results: benchmarks/results/<name>.md, one section per mode (a run replaces its mode's)."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import RESULTS, machine
from benchmarks.soak_check import (
    ACKNOWLEDGED,
    count_acks,
    fact_rows,
    folder_mib,
    per_writer,
    proposals_deciding,
    read_logs,
    report_section,
    rss_mib,
    trends,
    verify,
    write_report,
)
from benchmarks.soak_procs import (
    WAIT_S,
    Proc,
    console,
    database,
    kill_group,
    restart_postgres,
    seed,
    start_serve,
)

WRITER = Path(__file__).resolve().parent / "soak_writers.py"
KILLED_IN_TURN = ("cli", "mcp", "serve", "person")
HEADER = (
    "# soak\n\nMixed load on one store (benchmarks/soak.py): the console script, an MCP client "
    "over stdio, httpx to `gno-tui serve`, a reader and a person's decisions through the "
    "façade; writer processes SIGKILLed in turn, PostgreSQL restarted once (server mode). "
    "Lost = an acknowledged write missing from the store; fork = a chain or key with other "
    "than one head. Slopes are least squares over the samples after the warm-up.\n"
)


@dataclass
class Config:
    mode: str = "embedded"
    minutes: float = 30.0
    writes: int | None = None  # count mode: stop after this many acknowledged writes
    kills: int = 2  # count mode
    kill_every: float = 180.0  # time mode, seconds
    sample_every: float = 10.0
    warmup: float = 180.0
    rate: float = 3.0  # operations a second per writer (0: no limit)
    model: str = "bundled"
    pg_restart: bool = True


class Soak:
    def __init__(self, config: Config, work: Path, db_url: str | None, pgdata: Any) -> None:
        self.config, self.work, self.db_url, self.pgdata = config, work, db_url, pgdata
        self.home = work / "home"
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("GNO_TUI_")}
        if db_url:
            self.env["GNO_TUI_DB"] = db_url
        if config.model == "none":
            self.env["GNO_TUI_MODEL"] = "/nonexistent/gno-tui-soak-model"
        self.procs: dict[str, Proc] = {}
        self.serve: subprocess.Popen[str] | None = None
        self.events: list[dict[str, Any]] = []
        self.samples: list[dict[str, Any]] = []
        self.started = time.monotonic()
        self._stop_sampling = threading.Event()

    # -- the store and its processes ------------------------------------------------------

    def seed(self) -> None:
        self.tokens = seed(self.home, self.db_url, self.env)

    def start(self, role: str) -> None:
        if role == "serve":
            self.start_serve()
            return
        kind = "cli" if role == "cli" else role
        argv = [
            sys.executable,
            str(WRITER),
            kind,
            role,
            str(self.work),
            str(self.home),
            str(self.config.rate if role != "person" else max(self.config.rate, 2.0)),
        ]
        proc = self.procs.get(role) or Proc(role, argv, self.env, self.work / f"{role}.stderr")
        self.procs[role] = proc
        (self.work / f"{role}.server.pid").unlink(missing_ok=True)
        proc.start()

    def start_serve(self) -> None:
        self.serve = start_serve(self.home, self.env, self.work, self.tokens)

    def kill(self, role: str) -> None:
        at = time.monotonic() - self.started
        acks = count_acks(read_logs(self.work))
        if role == "serve":
            assert self.serve is not None
            kill_group(self.serve)
        else:
            proc = self.procs[role]
            pidfile = self.work / f"{role}.server.pid"
            if pidfile.exists():
                proc.extra_pids = [int(pidfile.read_text().strip() or 0)]
            proc.kill()
        self.events.append(
            {"t": round(at, 1), "wall": time.time(), "event": f"SIGKILL {role}", "acks": acks}
        )
        self.start(role)

    def restart_postgres(self) -> None:
        at = time.monotonic() - self.started
        began = time.monotonic()
        restart_postgres(self.pgdata, self.work / "pg_ctl.log")
        took = time.monotonic() - began
        self.events.append(
            {
                "t": round(at, 1),
                "wall": time.time(),
                "event": f"PostgreSQL restart ({took:.1f} s)",
                "acks": count_acks(read_logs(self.work)),
            }
        )

    # -- samples ------------------------------------------------------------------------

    def sample(self) -> dict[str, Any]:
        """Memory of the long-lived processes, the store's size on disk, its WAL, its facts."""
        rss: dict[str, tuple[int, float]] = {}
        pids = {
            role: proc.process.pid
            for role, proc in self.procs.items()
            if proc.process and role in ("reader", "person")
        }
        pidfile = self.work / "mcp.server.pid"
        if pidfile.exists() and pidfile.read_text().strip():
            pids["mcp server"] = int(pidfile.read_text().strip())
        if self.serve is not None:
            pids["http server"] = self.serve.pid
        for role, pid in pids.items():
            value = rss_mib(pid)
            if value is not None:
                rss[role] = (pid, value)
        sample: dict[str, Any] = {"t": time.monotonic() - self.started, "rss": rss}
        sample["rows"] = self.fact_count()
        if self.db_url:
            sample["disk_mib"] = self.database_mib()
            sample["wal_mib"] = folder_mib(Path(self.pgdata.pgdata) / "pg_wal")
        else:
            sample["disk_mib"] = folder_mib(self.home)
            wal = self.home / "index.sqlite-wal"
            sample["wal_mib"] = wal.stat().st_size / 1024 / 1024 if wal.exists() else 0.0
        return sample

    def _scalar(self, query: str) -> float:
        from sqlalchemy import create_engine, text

        url = self.db_url or f"sqlite:///{self.home / 'index.sqlite'}"
        engine = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
        try:
            with engine.connect() as connection:
                return float(connection.scalar(text(query)) or 0)
        except Exception:  # noqa: BLE001 - the database restarting: no sample this time
            return float("nan")
        finally:
            engine.dispose()

    def fact_count(self) -> float:
        return self._scalar("SELECT count(*) FROM facts")

    def database_mib(self) -> float:
        return self._scalar("SELECT pg_database_size(current_database())") / 1024 / 1024

    def sampling(self) -> None:
        while not self._stop_sampling.wait(self.config.sample_every):
            self.samples.append(self.sample())

    # -- the run ------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        config = self.config
        self.seed()
        self.start_serve()
        for role in ("reader", "person", "cli", "mcp", "http"):
            self.start(role)
        self.samples.append(self.sample())
        sampler = threading.Thread(target=self.sampling, daemon=True)
        sampler.start()
        try:
            if config.writes is not None:
                self.count_mode(config.writes)
            else:
                self.time_mode(config.minutes * 60)
            self.samples.append(self.sample())  # the run's last, its writers still running
        finally:
            self._stop_sampling.set()
            sampler.join(timeout=WAIT_S)
            self.stop_all()
        self.fresh_reader_mib = self.fresh_reader()
        self.samples.sort(key=lambda sample: float(sample["t"]))
        (self.work / "samples.json").write_text(json.dumps(self.samples), encoding="utf-8")
        return self.check()

    def time_mode(self, seconds: float) -> None:
        turn, next_kill = 0, self.config.kill_every
        restart_at = seconds / 2 if self.db_url and self.config.pg_restart else None
        while (now := time.monotonic() - self.started) < seconds:
            if restart_at is not None and now >= restart_at:
                self.restart_postgres()
                restart_at = None
            elif now >= next_kill:
                self.kill(KILLED_IN_TURN[turn % len(KILLED_IN_TURN)])
                turn, next_kill = turn + 1, next_kill + self.config.kill_every
            time.sleep(min(1.0, max(0.0, seconds - now)))  # the schedule's clock only

    def count_mode(self, writes: int) -> None:
        """Until `writes` writes were acknowledged and every writer hit by a kill (or by the
        PostgreSQL restart) has had a write acknowledged since: the run shows that each
        surface recovers. Kills at even shares of `writes`, the restart halfway."""
        kills = [writes * (i + 1) // (self.config.kills + 1) for i in range(self.config.kills)]
        restart = writes // 2 if self.db_url and self.config.pg_restart else None
        turn = 0
        recovering: dict[str, float] = {}  # writer -> when it was hit
        progress = (0, time.monotonic())
        while True:
            logs = read_logs(self.work)
            acks = count_acks(logs)
            recovering = {
                name: since
                for name, since in recovering.items()
                if not any(e["op"] in ACKNOWLEDGED and e["t"] > since for e in logs.get(name, []))
            }
            if acks >= writes and not kills and restart is None and not recovering:
                return
            if kills and acks >= kills[0]:
                kills.pop(0)
                role = KILLED_IN_TURN[turn % len(KILLED_IN_TURN)]
                self.kill(role)
                recovering["http" if role == "serve" else role] = self.events[-1]["wall"]
                turn += 1
            if restart is not None and acks >= restart:
                self.restart_postgres()
                restart = None
                wall = self.events[-1]["wall"]
                recovering.update({name: wall for name in ("cli", "mcp", "http", "person")})
            if acks > progress[0]:
                progress = (acks, time.monotonic())
            stalled = time.monotonic() - progress[1] > WAIT_S
            dead = [r for r, p in self.procs.items() if p.process and p.process.poll() is not None]
            if self.serve is not None and self.serve.poll() is not None:
                dead.append("serve")
            assert not dead and not stalled, (
                f"{dead or 'no writer'} ended early or stalled (waiting for {sorted(recovering)}"
                f"); see the .stderr and .jsonl files in {self.work}"
            )
            time.sleep(0.2)  # polls the writers' logs for progress

    def stop_all(self) -> None:
        (self.work / "stop").touch()
        for proc in self.procs.values():
            assert proc.process is not None
            try:
                proc.process.wait(timeout=WAIT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
        if self.serve is not None and self.serve.poll() is None:
            self.serve.send_signal(signal.SIGTERM)
            self.serve.wait(timeout=WAIT_S)

    def fresh_reader(self) -> float | None:
        """The memory of a reader opened on the store as it ends (after its recalls): what
        the long-lived reader, which followed every write, should hold about as much as."""
        argv = [sys.executable, str(WRITER), "fresh-reader", "fresh-reader", str(self.work),
                str(self.home), "0"]  # fmt: skip
        subprocess.run(argv, env=self.env, check=True, timeout=WAIT_S * 10)
        logged = (self.work / "fresh-reader.jsonl").read_text(encoding="utf-8").splitlines()
        found = [json.loads(line) for line in logged if '"rss"' in line]
        return float(found[-1]["mib"]) if found else None

    def check(self) -> dict[str, Any]:
        url = self.db_url or f"sqlite:///{self.home / 'index.sqlite'}"
        roots: dict[str, Path] = {}
        reindex = None
        if not self.db_url:
            reindex = console(self.home, self.env, "reindex")
            roots = {
                c["name"]: Path(c["root"])
                for c in console(self.home, self.env, "collection", "list")["collections"]
            }
        logs = read_logs(self.work)
        verdict = verify(logs, fact_rows(url), roots)
        verdict.stuck_proposals = proposals_deciding(url)
        verdict.writers = per_writer(logs, self.events)
        if reindex is not None:
            verdict.forks += [f"reindex: {fork}" for fork in reindex.get("forks", [])]
        result = {
            "mode": self.config.mode,
            "seconds": round(time.monotonic() - self.started, 1),
            "passed": verdict.passed,
            "verdict": verdict,
            "events": self.events,
            "trends": trends(self.samples, self.config.warmup),
            "samples": self.samples,
            "fresh_reader_mib": self.fresh_reader_mib,
            "reindex": None
            if reindex is None
            else {k: reindex[k] for k in ("added", "changed", "removed", "problems", "forks")},
        }
        kept = {**result, "verdict": vars(verdict)}  # the whole result, for a second look
        (self.work / "result.json").write_text(json.dumps(kept), encoding="utf-8")
        return result


@contextlib.contextmanager
def store(config: Config, work: Path) -> Iterator[Soak]:
    """The soak's store: a home, or a database on a pgserver of its own (restartable)."""
    if config.mode == "embedded":
        yield Soak(config, work, None, None)
        return
    with database() as (url, server):
        yield Soak(config, work, url, server)


def run(config: Config, work: Path | None = None) -> dict[str, Any]:
    """One soak in a work folder (a temporary one, removed afterwards, when None)."""
    keep = work is not None
    folder = work or Path(tempfile.mkdtemp(prefix="gno-soak-"))
    folder.mkdir(parents=True, exist_ok=True)
    if any(folder.iterdir()):
        raise SystemExit(f"{folder} is not empty: a soak starts from a new store")
    try:
        with store(config, folder) as soak:
            return soak.run()
    finally:
        if not keep:
            shutil.rmtree(folder, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=("embedded", "server"), default="embedded")
    parser.add_argument("--minutes", type=float, default=30.0)
    parser.add_argument("--writes", type=int, help="stop after N acknowledged writes instead")
    parser.add_argument("--kills", type=int, default=2, help="with --writes: how many kills")
    parser.add_argument("--kill-every", type=float, default=180.0, help="seconds (180)")
    parser.add_argument("--sample-every", type=float, default=10.0, help="seconds (10)")
    parser.add_argument("--warmup", type=float, default=180.0, help="seconds left out (180)")
    parser.add_argument("--rate", type=float, default=3.0, help="ops/s per writer (0: max)")
    parser.add_argument("--model", choices=("bundled", "none"), default="bundled")
    parser.add_argument("--no-pg-restart", action="store_true")
    parser.add_argument("--work", type=Path, help="keep the store and logs in this folder")
    parser.add_argument("--name", default="soak", help="report name (benchmarks/results/)")
    args = parser.parse_args()
    config = Config(
        mode=args.mode,
        minutes=args.minutes,
        writes=args.writes,
        kills=args.kills,
        kill_every=args.kill_every,
        sample_every=args.sample_every,
        warmup=args.warmup,
        rate=args.rate,
        model=args.model,
        pg_restart=not args.no_pg_restart,
    )
    result = run(config, args.work)
    if config.writes is not None:
        settings = f"--writes {config.writes} --kills {config.kills}"
    else:
        settings = f"--minutes {config.minutes:g} --kill-every {config.kill_every:g}"
    settings += f" --rate {config.rate:g} --model {config.model}"
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    write_report(
        RESULTS / f"{args.name}.md",
        report_section(
            result,
            f"`python benchmarks/soak.py --mode {config.mode} {settings}`, run {stamp}",
            machine(),
        ),
        config.mode,
        HEADER,
    )
    sys.exit(0 if result["passed"] else 1)


if __name__ == "__main__":
    main()
