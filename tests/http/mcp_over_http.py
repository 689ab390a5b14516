"""The official MCP SDK's client on a running `gno-tui serve`'s /mcp (Streamable HTTP), as an
agent's host connects with a token; and checks of its tool results.

(A module of its own rather than conftest.py: `from conftest import` would be ambiguous next
to tests/conftest.py.)"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types as types
from http_harness import RunningServer, assert_valid
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client


@asynccontextmanager
async def mcp_session(
    server: RunningServer, token: str, *, client_name: str = "pytest-agent"
) -> AsyncIterator[ClientSession]:
    """An initialized ClientSession on the server's /mcp, authenticated by `token`."""
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with streamable_http_client(f"{server.url}/mcp", http_client=http) as streams:
            read, write = streams[0], streams[1]
            info = types.Implementation(name=client_name, version="1.0")
            async with ClientSession(
                read, write, client_info=info, read_timeout_seconds=60
            ) as session:
                await session.initialize()
                yield session


async def call(session: ClientSession, tool: str, arguments: dict[str, Any]) -> Any:
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, types.CallToolResult), result
    return result


def structured_ok(result: types.CallToolResult, kind: str) -> dict[str, Any]:
    """A successful tool result: structured content valid against the seed schema `kind`,
    repeated as the text block."""
    assert not result.is_error, result.structured_content
    document = result.structured_content
    assert isinstance(document, dict)
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    assert json.loads(block.text) == document
    return assert_valid(kind, document)


def structured_error(result: types.CallToolResult) -> str:
    """The code of a tool error whose structured content is exactly {"error": {"code",
    "message"}}."""
    assert result.is_error, result.structured_content
    document = result.structured_content
    assert isinstance(document, dict)
    assert set(document) == {"error"} and set(document["error"]) == {"code", "message"}
    assert document["error"]["message"]
    return str(document["error"]["code"])
