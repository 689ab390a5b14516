"""Helpers for the MCP server tests: official-SDK clients that start the installed console
script (`gno-tui --home DIR mcp`) over stdio, as an agent's host would, and result checks.

(A module of its own rather than conftest.py: `from conftest import` would be ambiguous next
to tests/conftest.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import mcp_types as types
import pg_homes
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.session import MessageHandlerFnT

from engine.contract.errors import ERROR_CODES
from engine.contract.validation import schema_errors

CLIENT_NAME = "pytest-agent"
CONSOLE_SCRIPT = Path(sys.executable).parent / "gno-tui"


def server_env(home: Path | None = None) -> dict[str, str]:
    """The normal environment, with a model path that does not exist: the server runs in
    lexical mode and never loads a model. With `home`: that home's server database when the
    test runs on PostgreSQL (tests/pg_homes.py)."""
    env = {**os.environ, "GNO_TUI_MODEL": "/nonexistent/gno-tui-test-model"}
    for name in ("GNO_TUI_HOME", "GNO_TUI_DB", "GNO_TUI_CALLER", "GNO_TUI_SESSION"):
        env.pop(name, None)
    env.update(pg_homes.database_env(home))
    return env


@asynccontextmanager
async def mcp_session(
    home: Path,
    *,
    enable_write: bool = False,
    client_name: str = CLIENT_NAME,
    modern: bool = False,
    errlog: TextIO = sys.stderr,
    db_url: str | None = None,
    allow_scopes: Sequence[str] = (),
    message_handler: MessageHandlerFnT | None = None,
    prefix: Sequence[str] = (),
) -> AsyncIterator[ClientSession]:
    """A ready ClientSession on a fresh `gno-tui mcp` process: the initialize handshake, or
    with `modern` the 2026-07-28 era (server/discover, identity in every request's envelope).
    `db_url`: a server database (`--db`) instead of the home's SQLite; `allow_scopes`: the
    server's --allow-scope; `message_handler`: gets the server's notifications; `prefix`: the
    argv that runs the console script (tests/read_only_homes.py read_only_prefix)."""
    args = [
        "--home",
        str(home),
        *(["--db", db_url] if db_url else []),
        "mcp",
        *(["--enable-write"] if enable_write else []),
        *(arg for scope in allow_scopes for arg in ("--allow-scope", scope)),
    ]
    env = server_env(None if db_url else home)
    argv = [*prefix, str(CONSOLE_SCRIPT), *args]
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=env)
    info = types.Implementation(name=client_name, version="1.0")
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(
            read,
            write,
            client_info=info,
            read_timeout_seconds=60,
            message_handler=message_handler,
        ) as session:
            if modern:
                await session.discover()
            else:
                await session.initialize()
            yield session


def assert_valid(kind: str, document: Any) -> dict[str, Any]:
    errors = schema_errors(kind, document)
    assert not errors, f"{kind} result breaks the seed schema: {errors}\n{document!r}"
    return document


def structured_ok(result: types.CallToolResult, kind: str) -> dict[str, Any]:
    """A successful tool result: structured content that validates, mirrored as text."""
    assert not result.is_error, result.structured_content
    document = result.structured_content
    assert isinstance(document, dict)
    assert json.loads(result.content[0].text) == document  # type: ignore[union-attr]
    return assert_valid(kind, document)


def structured_error(result: types.CallToolResult, code: str) -> str:
    """A tool error whose structured content is exactly {"error": {"code", "message"}}."""
    assert result.is_error, result.structured_content
    document = result.structured_content
    assert isinstance(document, dict)
    assert set(document) == {"error"}
    assert set(document["error"]) == {"code", "message"}
    assert document["error"]["code"] in ERROR_CODES
    assert document["error"]["code"] == code, document
    message = document["error"]["message"]
    assert isinstance(message, str) and len(message) > 20
    assert "Traceback" not in message and "Traceback" not in result.content[0].text  # type: ignore[union-attr]
    return message


def run_cli(home: Path, *args: str) -> dict[str, Any]:
    completed = subprocess.run(
        [str(CONSOLE_SCRIPT), "--home", str(home), *args],
        capture_output=True,
        text=True,
        env=server_env(None if "--db" in args else home),
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr + completed.stdout
    return json.loads(completed.stdout)


def fact_files(home: Path) -> list[Path]:
    """The home's fact files (on a server: the `export --format gno` mirror)."""
    return pg_homes.fact_files(home)
