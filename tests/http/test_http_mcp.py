"""MCP over Streamable HTTP at /mcp, with the official SDK's client: the stdio server's tools,
the seed results, and the token's reach (its caller, its scopes, propose-only or not)."""

from __future__ import annotations

from typing import Any

import httpx
import mcp_types as types
import pytest
from http_harness import CONSOLE_SCRIPT, SharedServer, assert_valid, child_env, cli, error_code
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_over_http import call, mcp_session, structured_error, structured_ok


def tool_listing(tools: list[types.Tool]) -> dict[str, Any]:
    return {tool.name: tool.model_dump(mode="json") for tool in tools}


@pytest.mark.parametrize(
    ("token_name", "stdio_flags"),
    [("writer", ["--enable-write"]), ("proposer", [])],
    ids=["write grant = --enable-write", "propose-only = the default"],
)
async def test_the_tools_are_the_stdio_servers_tools(
    shared: SharedServer, token_name: str, stdio_flags: list[str]
) -> None:
    token = getattr(shared, token_name)
    async with mcp_session(shared.server, token) as session:
        over_http = tool_listing((await session.list_tools()).tools)
    params = StdioServerParameters(
        command=str(CONSOLE_SCRIPT),
        args=["--home", str(shared.home), "mcp", *stdio_flags],
        env=child_env(shared.home),
    )
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, read_timeout_seconds=60) as session:
            await session.initialize()
            over_stdio = tool_listing((await session.list_tools()).tools)
    assert over_http == over_stdio
    assert {"gno_remember", "gno_recall"} <= set(over_http)


async def test_remember_and_recall_answer_the_seed_results_as_the_tokens_caller(
    shared: SharedServer,
) -> None:
    # The client's own name is not who it is: the token is.
    async with mcp_session(shared.server, shared.writer, client_name="someone-else") as session:
        added = structured_ok(
            await call(
                session,
                "gno_remember",
                {"text": "The MCP canary sings at noon", "scopes": ["team:a"], "decision": "add"},
            ),
            "remember",
        )
        assert added["outcome"] == "added"
        assert added["record"]["caller"] == "http:writer"
        recalled = structured_ok(
            await call(session, "gno_recall", {"query": "canary noon", "scopes": ["team:a"]}),
            "recall",
        )
        assert [fact["uri"] for fact in recalled["facts"]] == [added["record"]["uri"]]
        assert recalled["facts"][0]["caller"] == "http:writer"
        again = structured_ok(
            await call(
                session,
                "gno_remember",
                {"text": "The MCP canary sings at noon", "scopes": ["team:a"], "decision": "add"},
            ),
            "remember",
        )
        assert again["outcome"] == "existing"
    with shared.server.client(shared.curator) as http:  # the same fact over REST
        response = http.post("/api/memory/recall", json={"query": "canary", "scopes": ["team:a"]})
    facts = assert_valid("recall", response.json())["facts"]
    assert [(f["text"], f["caller"]) for f in facts] == [
        ("The MCP canary sings at noon", "http:writer")
    ]


async def test_a_propose_only_tokens_add_is_held_for_a_person(shared: SharedServer) -> None:
    text = "The MCP proposal about the tapir enclosure"
    async with mcp_session(shared.server, shared.proposer) as session:
        held = structured_ok(
            await call(
                session, "gno_remember", {"text": text, "scopes": ["team:a"], "decision": "add"}
            ),
            "remember",
        )
        assert held["outcome"] == "candidates"
        recalled = structured_ok(
            await call(session, "gno_recall", {"query": "tapir enclosure", "scopes": ["team:a"]}),
            "recall",
        )
        assert recalled["facts"] == []
    pending = [p for p in cli(shared.home, "review", "--list")["proposals"] if p["text"] == text]
    assert len(pending) == 1, pending
    assert pending[0]["caller"] == "http:proposer"
    assert pending[0]["origin"] == "http"
    assert pending[0]["state"] == "pending"


async def test_a_call_naming_another_scope_is_a_scope_error(shared: SharedServer) -> None:
    async with mcp_session(shared.server, shared.outsider) as session:
        recall = await call(session, "gno_recall", {"query": "anything", "scopes": ["team:a"]})
        assert structured_error(recall) == "MEMORY_SCOPE_FORBIDDEN"
        write = await call(
            session,
            "gno_remember",
            {"text": "Written into a scope not granted", "scopes": ["team:b", "team:a"],
             "decision": "add"},
        )  # fmt: skip
        assert structured_error(write) == "MEMORY_SCOPE_FORBIDDEN"
        mine = structured_ok(
            await call(session, "gno_recall", {"query": "granted", "scopes": ["team:b"]}),
            "recall",
        )
        assert mine["facts"] == []  # nothing was written


async def test_a_resource_of_another_scope_is_refused_as_unknown(shared: SharedServer) -> None:
    text = "The vault combination is kept by the quartermaster"
    with shared.server.client(shared.writer) as http:
        added = http.post(
            "/api/memory/remember", json={"text": text, "scopes": ["team:a"], "decision": "add"}
        )
    uri = added.json()["record"]["uri"]
    async with mcp_session(shared.server, shared.writer) as session:
        read = await session.read_resource(uri)
        assert isinstance(read, types.ReadResourceResult)
        assert any(text in getattr(content, "text", "") for content in read.contents)
    made_up = uri.rsplit("mem-", 1)[0] + "mem-0123456789abcdef.md"
    async with mcp_session(shared.server, shared.outsider) as session:
        refusals = []
        for target in (uri, made_up):
            with pytest.raises(MCPError) as refused:
                await session.read_resource(target)
            error = refused.value.error
            assert isinstance(error.data, dict)
            assert error.data["error"]["code"] == "MEMORY_NOT_FOUND"
            refusals.append((error.code, error.message.replace(target, "URI")))
            assert text not in str(error)
    # A fact of another scope is refused exactly as one that does not exist.
    assert refusals[0] == refusals[1]


def test_no_token_is_401_at_the_http_level(shared: SharedServer) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "no-token", "version": "1"},
        },
    }
    headers = {"Accept": "application/json, text/event-stream"}
    with shared.server.client() as http:
        response = http.post("/mcp", json=initialize, headers=headers)
        assert error_code(response, 401) == "MEMORY_AUTH_REQUIRED"
        assert response.headers["www-authenticate"] == "Bearer"
    with httpx.Client(base_url=shared.server.url, timeout=60) as http:
        unknown = http.post(
            "/mcp", json=initialize, headers={**headers, "Authorization": "Bearer gno_nope"}
        )
        assert error_code(unknown, 401) == "MEMORY_AUTH_REQUIRED"
