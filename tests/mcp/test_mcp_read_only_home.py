"""`gno-tui mcp` on a read-only home (issue 39, item 1), through the official MCP client over
stdio: the server starts and recalls; every write, applied or held for a person, is a tool
error MEMORY_HOME_READ_ONLY that names the home, and nothing is written. The home is really
read-only (tests/read_only_homes.py: a read-only bind mount, or no write permission for a
process that cannot ignore it), as root ignores permission bits."""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp_harness import (
    CLIENT_NAME,
    CONSOLE_SCRIPT,
    run_cli,
    server_env,
    structured_error,
    structured_ok,
)
from read_only_homes import read_only_prefix, read_only_unavailable, tree

pytestmark = pytest.mark.embedded_mode  # the home's own files and folder

SCOPE = "user:alice"


@asynccontextmanager
async def read_only_session(
    home: Path, way: str, *, enable_write: bool
) -> AsyncIterator[ClientSession]:
    """A ready session on `gno-tui --home HOME mcp`, the server run with the home read-only."""
    prefix = read_only_prefix(way, home)
    argv = [*prefix, str(CONSOLE_SCRIPT), "--home", str(home), "mcp"]
    argv += ["--enable-write"] if enable_write else []
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=server_env(home))
    info = types.Implementation(name=CLIENT_NAME, version="1.0")
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=info, read_timeout_seconds=60) as session:
            await session.initialize()
            yield session


@pytest.mark.parametrize("way", ["mount", "permissions"])
async def test_mcp_writes_on_a_read_only_home_are_refused_and_recall_works(
    mcp_home: Path, way: str
) -> None:
    reason = read_only_unavailable(way)
    if reason is not None:
        pytest.skip(reason)
    added = run_cli(
        mcp_home, "remember", "Alice drinks green tea", "--scope", SCOPE, "--add", "--json"
    )
    record = added["record"]
    before = tree(mcp_home)
    if way == "permissions":
        subprocess.run(["chmod", "-R", "a-w", str(mcp_home)], check=True)
    try:
        for enable_write in (True, False):
            async with read_only_session(mcp_home, way, enable_write=enable_write) as session:
                recalled = structured_ok(
                    await session.call_tool("gno_recall", {"query": "tea", "scopes": [SCOPE]}),
                    "recall",
                )
                assert [fact["text"] for fact in recalled["facts"]] == ["Alice drinks green tea"]
                writes = [
                    (
                        "gno_remember",
                        {"text": "Bob drinks coffee", "scopes": [SCOPE], "decision": "add"},
                    ),
                    (
                        "gno_remember",
                        {
                            "text": "Alice drinks black tea",
                            "scopes": [SCOPE],
                            "decision": "supersede",
                            "predecessor": record["uri"],
                            "predecessorHash": record["contentHash"],
                        },
                    ),
                    ("memory_remember", {"key": "k1", "memory": {"content": "Bob is in Lyon"}}),
                ]
                for tool, arguments in writes:
                    message = structured_error(
                        await session.call_tool(tool, arguments), "MEMORY_HOME_READ_ONLY"
                    )
                    assert str(mcp_home) in message and "--home" in message
                # A plain propose is a question, not a write: answered.
                asked = structured_ok(
                    await session.call_tool(
                        "gno_remember", {"text": "Alice drinks tea", "scopes": [SCOPE]}
                    ),
                    "remember",
                )
                assert asked["outcome"] == "candidates"
    finally:
        if way == "permissions":
            subprocess.run(["chmod", "-R", "u+w", str(mcp_home)], check=True)
    assert tree(mcp_home) == before
