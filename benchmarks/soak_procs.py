"""benchmarks/soak.py's processes: starting a writer or `gno-tui serve` in a session of its
own (so that a SIGKILL takes its children too), the store's seed and tokens, and the
throwaway PostgreSQL server (pgserver) that the server mode restarts."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.soak_writers import CHAINS, CONSOLE, KEYS

_LISTENING = re.compile(r"listening on (http://\S+?):(\d+) ")
WAIT_S = 120.0  # for a process's start line or its end: a hang guard


@dataclass
class Proc:
    """One process of the soak, in a session of its own (a kill takes its children too)."""

    role: str
    argv: list[str]
    env: dict[str, str]
    log: Path
    process: subprocess.Popen[str] | None = None
    extra_pids: list[int] = field(default_factory=list)

    def start(self) -> None:
        with self.log.open("a", encoding="utf-8") as err:
            self.process = subprocess.Popen(
                self.argv,
                env=self.env,
                stdout=subprocess.DEVNULL,
                stderr=err,
                text=True,
                start_new_session=True,
            )

    def kill(self) -> None:
        assert self.process is not None
        for pid in [self.process.pid, *self.extra_pids]:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
        self.process.wait(timeout=WAIT_S)


def console(home: Path, env: dict[str, str], *args: str) -> dict[str, Any]:
    """`gno-tui --home HOME ARGS --json` as a person runs it: its JSON output (exit 0)."""
    done = subprocess.run(
        [str(CONSOLE), "--home", str(home), *args, "--json"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def seed(home: Path, db_url: str | None, env: dict[str, str]) -> dict[str, str]:
    """The shared chains' and keys' first facts, and the HTTP writer's two tokens (one that
    writes, one whose writes wait for the person)."""
    from engine.facade import RememberRequest, open_service

    service = open_service(home=home, db_url=db_url, model=env.get("GNO_TUI_MODEL"))
    try:
        for chain in CHAINS:
            service.remember(
                RememberRequest(
                    text=f"{chain} head, first",
                    scopes=[chain],
                    caller="soak:seed",
                    session="seed",
                    decision="add",
                )
            )
        for key in KEYS:
            service.keyed.remember(
                {"key": key, "memory": {"content": f"{key} first", "tags": ["soak-key"]}},
                caller="soak:seed",
            )
    finally:
        service.close()
    scopes = [a for s in ("soak", "writer:http", *CHAINS) for a in ("--scope", s)]
    return {
        "writer": console(home, env, "token", "create", "soak-writer", *scopes, "--write")["token"],
        "proposer": console(home, env, "token", "create", "soak-proposer", "--scope", "soak")[
            "token"
        ],
    }


def start_serve(
    home: Path, env: dict[str, str], work: Path, tokens: dict[str, str]
) -> subprocess.Popen[str]:
    """`gno-tui serve --port 0`; its address, read from its start line, and the tokens go to
    WORK/http.json for the HTTP writer (replaced whole: the writer never reads half)."""
    serve = subprocess.Popen(
        [str(CONSOLE), "--home", str(home), "serve", "--port", "0"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    found = threading.Event()
    address: list[str] = []

    def read() -> None:
        assert serve.stderr is not None
        with (work / "serve.stderr").open("a", encoding="utf-8") as log:
            for line in serve.stderr:
                log.write(line)
                log.flush()
                match = _LISTENING.search(line)
                if match and not address:
                    address.append(f"{match.group(1)}:{match.group(2)}")
                    found.set()
        found.set()

    threading.Thread(target=read, daemon=True).start()
    found.wait(WAIT_S)
    assert address, f"gno-tui serve did not start; see {work / 'serve.stderr'}"
    where = work / "http.json"
    temporary = where.with_suffix(".tmp")
    temporary.write_text(json.dumps({"url": address[0], **tokens}), encoding="utf-8")
    temporary.replace(where)
    return serve


def kill_group(process: subprocess.Popen[str]) -> None:
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=WAIT_S)


@contextlib.contextmanager
def database() -> Iterator[tuple[str, Any]]:
    """A database on a pgserver (PostgreSQL 16 + pgvector) of the soak's own, so that it may
    restart it: (its postgresql:// URL, the server). Removed whole at the end."""
    import pgserver
    from sqlalchemy import create_engine, make_url, text

    folder = Path(tempfile.mkdtemp(prefix="gno-soak-pg-"))
    server = pgserver.get_server(folder, cleanup_mode="delete")
    try:
        url = make_url(server.get_uri()).set(drivername="postgresql+psycopg")
        admin = create_engine(url, isolation_level="AUTOCOMMIT")
        with admin.connect() as connection:
            connection.execute(text('CREATE DATABASE "gno_soak"'))
        admin.dispose()
        rendered = url.set(database="gno_soak").render_as_string(hide_password=False)
        yield rendered.replace("+psycopg", "", 1), server
    finally:
        server.cleanup()


def restart_postgres(server: Any, log: Path) -> None:
    """`pg_ctl restart -m fast` with pgserver's own pg_ctl, as the user it runs the server as
    (the server keeps its options, its socket folder among them, from postmaster.opts)."""
    from pgserver._commands import POSTGRES_BIN_PATH

    # Output to a file, not a pipe: the restarted server inherits it and keeps it open.
    with log.open("a", encoding="utf-8") as out:
        subprocess.run(
            [
                str(POSTGRES_BIN_PATH / "pg_ctl"),
                "-D",
                str(server.pgdata),
                "-w",
                "-m",
                "fast",
                "restart",
            ],
            user=server.system_user,
            stdout=out,
            stderr=out,
            check=True,
            timeout=WAIT_S,
        )
