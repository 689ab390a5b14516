"""A refused write changes nothing, the store's generation included: every reader (the
ranking index of each process, the workbench's store watcher, MCP subscriptions) refreshes
when the generation moves, so a bump for a write that did not happen costs them all a
refresh for nothing.

The MCP server's write lane runs every gno_remember add and supersede inside a group commit
(engine/storage/group_commit.py), which moves the generation when it opens; a group whose
writes were all refused must take that back. Checked through the façade's group commit, as
the lane runs it, and on a real write-enabled `gno-tui mcp` process, reading the generation
through the engine before and after."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pg_homes
from mcp import ClientSession, StdioServerParameters, stdio_client

from engine.contract.errors import MemoryFailure
from engine.facade import MemoryService, RecallRequest, RememberRequest, open_service

CONSOLE_SCRIPT = Path(sys.executable).parent / "gno-tui"
TEA = "Alice drinks green tea"


def remember(**fields: Any) -> RememberRequest:
    fields.setdefault("scopes", ["s"])
    fields.setdefault("decision", "add")
    return RememberRequest(caller="test:agent", session="test-session", **fields)


def run_as_the_lane_does(memory: MemoryService, requests: list[RememberRequest]) -> list[Any]:
    """Each write in one group commit, its refusal kept as its answer (mcp_writes.WriteLane)."""
    answers: list[Any] = []
    with memory.write_batch() as batch:
        batch.expect(len(requests))
        for request in requests:
            try:
                answers.append(memory.remember(request))
            except MemoryFailure as failure:
                answers.append(failure.code)
    return answers


def test_a_group_of_refused_writes_leaves_the_generation_alone(client: Any) -> None:
    memory: MemoryService = client.memory
    first = client.add(TEA)
    recall = client.recall("tea")
    before = memory.generation()
    refused = [
        remember(text=""),  # nothing to remember
        remember(text="Bob likes coffee", scopes=["not a scope!"]),
        remember(text=TEA, receipt=recall["receipt"]),  # a replay of a recalled span
        remember(
            text="Alice drinks black tea",
            decision="supersede",
            predecessor=first["record"]["uri"],
            predecessor_hash="0" * 64,
        ),
        remember(text=TEA),  # already stored: `existing`, nothing written
    ]
    answers = run_as_the_lane_does(memory, refused)
    assert answers[:4] == [
        "MEMORY_TEXT_REQUIRED",
        "MEMORY_SCOPES_INVALID",
        "MEMORY_FENCED_REPLAY",
        "MEMORY_PREDECESSOR_HASH_MISMATCH",
    ]
    assert answers[4]["outcome"] == "existing"
    assert memory.generation() == before

    # One refused write alone in its group (the lane's usual case), then a group where one
    # write of two is refused: that group is one write, one move of the generation.
    assert run_as_the_lane_does(memory, [remember(text="")]) == ["MEMORY_TEXT_REQUIRED"]
    assert memory.generation() == before
    mixed = run_as_the_lane_does(memory, [remember(text=""), remember(text="Bob likes coffee")])
    assert mixed[0] == "MEMORY_TEXT_REQUIRED" and mixed[1]["outcome"] == "added"
    assert memory.generation() == before + 1
    assert [f["text"] for f in client.recall("coffee")["facts"]] == ["Bob likes coffee"]


def test_refused_writes_on_a_write_enabled_mcp_server_leave_the_generation_alone(
    home: Path,
) -> None:
    memory = open_service(home=home, model="/nonexistent/gno-tui-test-model")
    try:
        memory.remember(remember(text=TEA))
        receipt = memory.recall(
            RecallRequest(query="tea", scopes=["s"], caller="test:agent", session="s1")
        )["receipt"]
        before = memory.generation()
        codes = anyio.run(refused_over_mcp, home, receipt)
        assert codes == [
            "MEMORY_TEXT_REQUIRED",
            "MEMORY_SCOPES_INVALID",
            "MEMORY_SCOPE_FORBIDDEN",
            "MEMORY_FENCED_REPLAY",
            "MEMORY_TEXT_TOO_LARGE",
        ]
        assert memory.generation() == before
    finally:
        memory.close()


async def refused_over_mcp(home: Path, receipt: Mapping[str, Any]) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GNO_TUI_")}
    env.update(GNO_TUI_MODEL="/nonexistent/gno-tui-test-model", **pg_homes.database_env(home))
    params = StdioServerParameters(
        command=str(CONSOLE_SCRIPT),
        args=["--home", str(home), "mcp", "--enable-write", "--allow-scope", "s"],
        env=env,
    )
    calls: list[dict[str, Any]] = [
        {"text": "", "scopes": ["s"]},
        {"text": "Bob likes coffee", "scopes": ["not a scope!"]},
        {"text": "Bob likes coffee", "scopes": ["t"]},  # outside the server's binding
        {"text": TEA, "scopes": ["s"], "receipt": receipt},
        {"text": "x" * 5000, "scopes": ["s"]},
    ]
    codes: list[str] = []
    info = types.Implementation(name="refused-agent", version="1")
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=info) as session:
            await session.initialize()
            for arguments in calls:
                found = await session.call_tool("gno_remember", {**arguments, "decision": "add"})
                assert found.is_error, found.structured_content
                assert isinstance(found.structured_content, dict)
                codes.append(found.structured_content["error"]["code"])
    return codes
