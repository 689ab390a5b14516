"""The keyed memory tools over MCP: seed-003 requests in, instantKV-shaped responses out."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from mcp.types import CallToolResult
from mcp_harness import mcp_session, structured_error, structured_ok

from engine.contract.validation import load_schema


async def test_keyed_tools_take_the_seed_requests(mcp_home: Path) -> None:
    requests = load_schema("keyed_requests")
    # Write-enabled: on a propose-only server a keyed save is held for a person
    # (tests/mcp/test_mcp_trust.py).
    async with mcp_session(mcp_home, enable_write=True) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert tools["memory_remember"].input_schema == requests["remember"]
        assert tools["memory_recall"].input_schema == requests["recall"]
        assert tools["memory_search"].input_schema == requests["search"]
        assert tools["memory_search"].output_schema == load_schema("keyed_search")

        async def remember(memory: dict[str, Any], **fields: Any) -> CallToolResult:
            request = {"key": "alice/drink", **fields, "memory": memory}
            return await session.call_tool("memory_remember", request)

        tea = {"content": "Alice drinks green tea", "tags": ["Diet"], "topic": "prefs"}
        saved = structured_ok(await remember(tea), "keyed_hit")
        assert (saved["key"], saved["revision"], saved["memory"]["tags"]) == (
            "alice/drink",
            1,
            ["diet"],
        )
        # A retry of the same create returns the stored revision.
        again = structured_ok(await remember(tea), "keyed_hit")
        assert again["revision"] == 1
        coffee = {"content": "Alice drinks coffee now"}
        updated = structured_ok(await remember(coffee, if_revision=1), "keyed_hit")
        assert updated["revision"] == 2
        water = {"content": "Alice drinks water"}
        stale = structured_error(await remember(water, if_revision=1), "MEMORY_REVISION_CONFLICT")
        assert "revision 2" in stale

        listed = structured_ok(
            await session.call_tool("memory_recall", {"query": "coffee"}), "keyed_recall"
        )
        assert [i["memory"]["content"] for i in listed["items"]] == ["Alice drinks coffee now"]
        found = structured_ok(
            await session.call_tool("memory_search", {"query": "coffee"}), "keyed_search"
        )
        assert found["items"][0]["key"] == "alice/drink"
        structured_error(
            await session.call_tool("memory_recall", {"limit": "ten"}), "MEMORY_REQUEST_INVALID"
        )
