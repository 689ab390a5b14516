"""The keyed memory tools over MCP: seed-003 requests in, instantKV-shaped responses out."""

from __future__ import annotations

from pathlib import Path

from mcp_harness import mcp_session, structured_error, structured_ok

from engine.contract.validation import load_schema


async def test_keyed_tools_take_the_seed_requests(mcp_home: Path) -> None:
    requests = load_schema("keyed_requests")
    async with mcp_session(mcp_home) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert tools["memory_remember"].input_schema == requests["remember"]
        assert tools["memory_recall"].input_schema == requests["recall"]
        assert tools["memory_search"].input_schema == requests["search"]
        assert tools["memory_search"].output_schema == load_schema("keyed_search")

        saved = structured_ok(
            await session.call_tool(
                "memory_remember",
                {
                    "key": "alice/drink",
                    "memory": {
                        "content": "Alice drinks green tea",
                        "tags": ["Diet"],
                        "topic": "prefs",
                    },
                },
            ),
            "keyed_hit",
        )
        assert (saved["key"], saved["revision"], saved["memory"]["tags"]) == (
            "alice/drink",
            1,
            ["diet"],
        )
        # A retry of the same create returns the stored revision.
        again = structured_ok(
            await session.call_tool(
                "memory_remember",
                {
                    "key": "alice/drink",
                    "memory": {
                        "content": "Alice drinks green tea",
                        "tags": ["Diet"],
                        "topic": "prefs",
                    },
                },
            ),
            "keyed_hit",
        )
        assert again["revision"] == 1
        updated = structured_ok(
            await session.call_tool(
                "memory_remember",
                {
                    "key": "alice/drink",
                    "if_revision": 1,
                    "memory": {"content": "Alice drinks coffee now"},
                },
            ),
            "keyed_hit",
        )
        assert updated["revision"] == 2
        stale = structured_error(
            await session.call_tool(
                "memory_remember",
                {
                    "key": "alice/drink",
                    "if_revision": 1,
                    "memory": {"content": "Alice drinks water"},
                },
            ),
            "MEMORY_REVISION_CONFLICT",
        )
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
