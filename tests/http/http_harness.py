"""Helpers for the HTTP server tests: a real `gno-tui serve` (the installed console script)
on 127.0.0.1 at a port it picks itself, read from its start line; tokens made by the CLI, as a
person would; httpx as the agent's client; result checks against the schemas.

On a server-mode run ($GNO_TUI_TEST_PG) the home's database goes to every process started
here by $GNO_TUI_DB (tests/pg_homes.py), so each test runs on PostgreSQL too.

(A module of its own rather than conftest.py: `from conftest import` would be ambiguous next
to tests/conftest.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pg_homes

from benchmarks.common import serving
from engine.contract.validation import schema_errors

CONSOLE_SCRIPT = Path(sys.executable).parent / "gno-tui"
START_TIMEOUT = 120.0  # seconds for the start line: a loaded CI machine, a first migration


def child_env(home: Path) -> dict[str, str]:
    """The environment of a process on `home`: no model (lexical mode, never loaded), and the
    home's server database on a server-mode run."""
    env = {**os.environ, "GNO_TUI_MODEL": "/nonexistent/gno-tui-test-model"}
    for name in ("GNO_TUI_HOME", "GNO_TUI_DB", "GNO_TUI_CALLER", "GNO_TUI_SESSION"):
        env.pop(name, None)
    env.update(pg_homes.database_env(home))
    return env


def cli(home: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """`gno-tui --home HOME ARGS --json` as a person runs it; its JSON output (exit 0)."""
    done = subprocess.run(
        [str(CONSOLE_SCRIPT), "--home", str(home), *args, "--json"],
        env=env or child_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    document: dict[str, Any] = json.loads(done.stdout)
    return document


def make_token(
    home: Path,
    name: str,
    *scopes: str,
    write: bool = False,
    curate: bool = False,
    namespaces: Sequence[str] = (),
    egress: str | None = None,
) -> str:
    """A new token made by `gno-tui token create`, as a person makes one for an agent."""
    args = ["token", "create", name]
    for scope in scopes:
        args += ["--scope", scope]
    for namespace in namespaces:
        args += ["--namespace", namespace]
    args += ["--write"] if write else []
    args += ["--curate"] if curate else []
    args += ["--egress", egress] if egress else []
    return str(cli(home, *args)["token"])


@dataclass
class RunningServer:
    url: str  # http://127.0.0.1:PORT
    process: subprocess.Popen[str]
    home: Path
    log: list[str] = field(default_factory=list)  # its stderr lines, as they come

    def client(self, token: str | None = None, **options: Any) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=60, **options)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])


@contextmanager
def serve(
    home: Path,
    *args: str,
    env: dict[str, str] | None = None,
) -> Iterator[RunningServer]:
    """A running `gno-tui --home HOME serve --port 0 ARGS`, stopped (SIGTERM, then waited for)
    when the block ends. Waits for its start line, never for a time."""
    command = [str(CONSOLE_SCRIPT), "--home", str(home), "serve", "--port", "0", *args]
    with serving(command, env or child_env(home), timeout=START_TIMEOUT) as (url, process, log):
        assert url is not None, "gno-tui serve did not start:\n" + "".join(log)
        yield RunningServer(url, process, home, log)


@dataclass(frozen=True)
class SharedServer:
    """A module's server (conftest.py's `shared` fixture) and the tokens made for it."""

    server: RunningServer
    home: Path
    writer: str  # scopes team:a and user:alice, writes apply, namespace notes
    proposer: str  # scope team:a, writes held for a person
    curator: str  # scope team:a, writes apply, may decide reviews
    outsider: str  # scope team:b only


def assert_valid(kind: str, document: Any) -> dict[str, Any]:
    """`document`, after checking it against the project's schema `kind` exactly."""
    errors = schema_errors(kind, document)
    assert errors == [], errors
    assert isinstance(document, dict)
    return document


def error_code(response: httpx.Response, status: int) -> str:
    """The contract error of a refused request: its status and body shape checked."""
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    assert body["error"]["message"], body
    return str(body["error"]["code"])
