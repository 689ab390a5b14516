"""`gno-tui mcp` on a read-only home (issue 39, item 1), through the official MCP client over
stdio: the server starts and recalls; every write, applied or held for a person, is a tool
error MEMORY_HOME_READ_ONLY that names the home, and nothing is written. The home is really
read-only (tests/read_only_homes.py: a read-only bind mount, or no write permission for a
process that cannot ignore it), as root ignores permission bits."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from mcp_harness import mcp_session, run_cli, structured_error, structured_ok
from read_only_homes import read_only_prefix, read_only_unavailable, tree

pytestmark = pytest.mark.embedded_mode  # the home's own files and folder

SCOPE = "user:alice"


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
            async with mcp_session(
                mcp_home, enable_write=enable_write, prefix=read_only_prefix(way, mcp_home)
            ) as session:
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
