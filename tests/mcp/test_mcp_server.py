"""`gno-tui mcp` driven by the official MCP client over stdio (docs/contract.md sections 7, 10,
11b).

Every structured result is validated against the seed schemas; every error must be a tool
error whose structured content is exactly {"error": {"code", "message"}}."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pg_homes
import pytest
from mcp.shared.exceptions import MCPError
from mcp_harness import (
    CLIENT_NAME,
    assert_valid,
    fact_files,
    mcp_session,
    run_cli,
    structured_error,
    structured_ok,
)

from engine.contract.validation import load_schema
from engine.curation.review import Decision, decide
from engine.facade.factory import open_engine
from engine.retrieval.embeddings import EmbedderStatus

SCOPE = "user:alice"


def _remember(text: str, **extra: Any) -> dict[str, Any]:
    return {"text": text, "scopes": [SCOPE], **extra}


async def test_tools_declare_their_schemas(mcp_home: Path) -> None:
    async with mcp_session(mcp_home) as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(tools) == {
        "gno_remember",
        "gno_recall",
        "memory_remember",
        "memory_recall",
        "memory_search",
    }
    remember, recall = tools["gno_remember"], tools["gno_recall"]
    # Output schemas are the seed result schemas, exactly.
    assert remember.output_schema == load_schema("remember")
    assert recall.output_schema == load_schema("recall")
    assert remember.output_schema["type"] == recall.output_schema["type"] == "object"
    # Input schemas: closed, documented, with the DESIGN 11b names.
    assert set(remember.input_schema["properties"]) == {
        "text",
        "scopes",
        "decision",
        "predecessor",
        "predecessorHash",
        "source",
        "receipt",
        "derivedFrom",
        "collection",
        "requestId",  # a safe retry (docs/server.md, Retries)
    }
    assert set(recall.input_schema["properties"]) == {
        "query",
        "scopes",
        "maxFacts",
        "maxTokens",
        "collection",
        "egress",
    }
    assert remember.input_schema["required"] == ["text", "scopes"]
    assert recall.input_schema["required"] == ["query", "scopes"]
    for tool in (remember, recall):
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        for name, prop in tool.input_schema["properties"].items():
            assert prop.get("description"), f"{tool.name}.{name} has no description"
    assert remember.input_schema["properties"]["decision"]["enum"] == [
        "propose",
        "add",
        "supersede",
    ]
    # What an agent needs to know is in the descriptions.
    assert remember.description and recall.description
    assert "PROPOSE-ONLY" in remember.description
    assert "receipt" in remember.description and "receipt" in recall.description
    assert "scopes" in remember.description and "required" in remember.description
    assert recall.annotations is not None and recall.annotations.read_only_hint


async def test_propose_only_queues_writes_for_a_person(mcp_home: Path) -> None:
    text = "Alice prefers green tea in the morning"
    async with mcp_session(mcp_home) as session:
        # A plain propose is a question: candidates, nothing queued.
        asked = structured_ok(await session.call_tool("gno_remember", _remember(text)), "remember")
        assert asked["outcome"] == "candidates"
        # An add on a propose-only server is held: candidates, no file, one proposal.
        held = structured_ok(
            await session.call_tool(
                "gno_remember", _remember(text, decision="add", source="chat 2026-11-30")
            ),
            "remember",
        )
        assert held["outcome"] == "candidates"
        assert fact_files(mcp_home) == []

        listed = run_cli(mcp_home, "review", "--list", "--json")["proposals"]
        assert len(listed) == 1
        proposal = listed[0]
        assert proposal["text"] == text and proposal["decision"] == "add"
        assert proposal["caller"] == f"mcp:{CLIENT_NAME}"
        assert proposal["session"].startswith("mcp-") and len(proposal["session"]) == 16
        assert proposal["origin"] == "mcp" and proposal["state"] == "pending"

        # The proposals resource shows the same queue.
        read = await session.read_resource("gno://review/proposals")
        content = read.contents[0]
        assert content.mime_type == "application/json"
        assert json.loads(content.text)["proposals"] == listed  # type: ignore[union-attr]

        # A person accepts it (through the engine, as the workbench does) ...
        store = open_engine(home=mcp_home, embedder_status=EmbedderStatus(None, "test"))
        try:
            decided = decide(
                store, Decision(proposal_id=proposal["id"], action="add", actor="test:person")
            )
        finally:
            store.db.dispose()
        assert_valid("remember", decided)
        assert decided["outcome"] == "added"
        assert len(fact_files(mcp_home)) == 1

        # ... and the agent's next recall finds it, under its own identity.
        recalled = structured_ok(
            await session.call_tool(
                "gno_recall", {"query": "what does alice drink", "scopes": [SCOPE], "maxFacts": 3}
            ),
            "recall",
        )
        assert [fact["text"] for fact in recalled["facts"]] == [text]
        fact = recalled["facts"][0]
        assert fact["caller"] == f"mcp:{CLIENT_NAME}"
        assert recalled["receipt"]["caller"] == f"mcp:{CLIENT_NAME}"
        assert recalled["receipt"]["session"] == proposal["session"]

        # Replaying the recalled span with its receipt is fenced.
        replay = await session.call_tool(
            "gno_remember", _remember(fact["text"], decision="add", receipt=recalled["receipt"])
        )
        structured_error(replay, "MEMORY_FENCED_REPLAY")
        # Something new with the same receipt is fine (and held again).
        fresh = await session.call_tool(
            "gno_remember",
            _remember("Alice moved to Lyon", decision="add", receipt=recalled["receipt"]),
        )
        assert structured_ok(fresh, "remember")["outcome"] == "candidates"

        # The fact is readable as a resource by its uri: the file, and the fact object.
        markdown = (await session.read_resource(fact["uri"])).contents[0]
        assert markdown.mime_type == "text/markdown"
        assert markdown.text.startswith("---\n") and text in markdown.text  # type: ignore[union-attr]
        assert fact["contentHash"] in markdown.text  # type: ignore[union-attr]
        as_json = await session.read_resource(fact["uri"].removesuffix(".md") + ".json")
        record = json.loads(as_json.contents[0].text)  # type: ignore[union-attr]
        assert record == decided["record"]
        assert_valid(
            "remember", {"outcome": "existing", "record": record, "matching": decided["matching"]}
        )

        pending = json.loads(
            (await session.read_resource("gno://review/proposals")).contents[0].text  # type: ignore[union-attr]
        )["proposals"]
        assert [p["text"] for p in pending] == ["Alice moved to Lyon"]


async def test_enable_write_applies_writes(mcp_home: Path) -> None:
    async with mcp_session(mcp_home, enable_write=True, client_name="claude-code") as session:
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        assert "WRITE-ENABLED" in (tools["gno_remember"].description or "")
        added = structured_ok(
            await session.call_tool(
                "gno_remember", _remember("Alice lives in Paris", decision="add")
            ),
            "remember",
        )
        assert added["outcome"] == "added" and added["sync"] == {"status": "completed"}
        record = added["record"]
        assert record["caller"] == "mcp:claude-code" and record["session"].startswith("mcp-")
        if pg_homes.server_mode():  # no file is written: its path is its uri
            assert added["absPath"] == record["uri"]
        else:
            assert Path(added["absPath"]).is_file()

        again = structured_ok(
            await session.call_tool(
                "gno_remember", _remember("Alice lives in Paris", decision="add")
            ),
            "remember",
        )
        assert again["outcome"] == "existing"

        moved = structured_ok(
            await session.call_tool(
                "gno_remember",
                {
                    "text": "Alice lives in Lyon",
                    "scopes": [SCOPE],
                    "decision": "supersede",
                    "predecessor": record["uri"],
                    "predecessorHash": record["contentHash"],
                },
            ),
            "remember",
        )
        assert moved["outcome"] == "superseded"
        assert moved["record"]["supersedes"] == [record["uri"]]
        stale = await session.call_tool(
            "gno_remember",
            {
                "text": "Alice lives in Berlin",
                "scopes": [SCOPE],
                "decision": "supersede",
                "predecessor": record["uri"],
                "predecessorHash": record["contentHash"],
            },
        )
        structured_error(stale, "MEMORY_SUPERSEDE_CONFLICT")

        recalled = structured_ok(
            await session.call_tool(
                "gno_recall", {"query": "where does alice live", "scopes": [SCOPE]}
            ),
            "recall",
        )
        assert [fact["text"] for fact in recalled["facts"]] == ["Alice lives in Lyon"]

        # Calls run off the event loop: concurrent calls on one connection all complete.
        results: list[dict[str, Any]] = []

        async def add(index: int) -> None:
            result = await session.call_tool(
                "gno_remember", _remember(f"Concurrent note number {index}", decision="add")
            )
            results.append(structured_ok(result, "remember"))

        with anyio.fail_after(60):
            async with anyio.create_task_group() as group:
                for index in range(12):
                    group.start_soon(add, index)
                await session.send_ping()
        assert sorted(r["outcome"] for r in results) == ["added"] * 12

        # Resources: the current fact's file by its uri; the superseded one is not served
        # (like recall); an unknown uri is a clear protocol error.
        markdown = (await session.read_resource(moved["record"]["uri"])).contents[0]
        assert "Alice lives in Lyon" in markdown.text  # type: ignore[union-attr]
        with pytest.raises(MCPError, match="not current"):
            await session.read_resource(record["uri"])
        missing = record["uri"].replace(record["recordId"], "mem-0000000000000000")
        with pytest.raises(MCPError, match="No fact"):
            await session.read_resource(missing)
        with pytest.raises(MCPError, match="not a resource"):
            await session.read_resource("gno://memory/elsewhere")
    assert len(fact_files(mcp_home)) == 14
    assert run_cli(mcp_home, "review", "--list", "--json") == {"proposals": []}


BAD_CALLS: list[tuple[str, dict[str, Any], str]] = [
    ("gno_remember", {"text": "Alice likes tea"}, "MEMORY_SCOPES_REQUIRED"),
    ("gno_remember", {"text": "Alice likes tea", "scopes": []}, "MEMORY_SCOPES_REQUIRED"),
    ("gno_remember", {"text": "Alice likes tea", "scopes": "user:alice"}, "MEMORY_SCOPES_INVALID"),
    (
        "gno_remember",
        {"text": "Alice likes tea", "scopes": ["!bad scope"]},
        "MEMORY_SCOPES_INVALID",
    ),
    ("gno_remember", {"scopes": [SCOPE]}, "MEMORY_TEXT_REQUIRED"),
    ("gno_remember", {"text": "   ", "scopes": [SCOPE]}, "MEMORY_TEXT_REQUIRED"),
    ("gno_remember", {"text": 42, "scopes": [SCOPE]}, "MEMORY_USAGE_INVALID"),
    ("gno_remember", {"text": "x" * 5000, "scopes": [SCOPE]}, "MEMORY_TEXT_TOO_LARGE"),
    ("gno_remember", _remember("Alice likes tea", decision="delete"), "MEMORY_DECISION_INVALID"),
    (
        "gno_remember",
        _remember("Alice likes tea", decision="supersede"),
        "MEMORY_PREDECESSOR_REQUIRED",
    ),
    ("gno_remember", _remember("Alice likes tea", caller="someone-else"), "MEMORY_USAGE_INVALID"),
    (
        "gno_remember",
        _remember("Alice likes tea", collection="nope"),
        "MEMORY_COLLECTION_NOT_FOUND",
    ),
    (
        "gno_remember",
        _remember("Alice likes tea", derivedFrom="gno://memory/facts/x.md"),
        "MEMORY_FENCED_DERIVED",
    ),
    (
        "gno_remember",
        _remember("Alice likes tea", receipt={"digest": "abc"}),
        "MEMORY_RECEIPT_INVALID",
    ),
    ("gno_recall", {"query": "tea"}, "MEMORY_SCOPES_REQUIRED"),
    ("gno_recall", {"scopes": [SCOPE]}, "MEMORY_QUERY_REQUIRED"),
    ("gno_recall", {"query": ["tea"], "scopes": [SCOPE]}, "MEMORY_USAGE_INVALID"),
    (
        "gno_recall",
        {"query": "tea", "scopes": [SCOPE], "maxFacts": "many"},
        "MEMORY_BUDGET_INVALID",
    ),
    ("gno_recall", {"query": "tea", "scopes": [SCOPE], "maxTokens": 0}, "MEMORY_BUDGET_INVALID"),
    (
        "gno_recall",
        {"query": "tea", "scopes": [SCOPE], "egress": "internet"},
        "MEMORY_POLICY_INVALID",
    ),
    ("gno_recall", {"query": "tea", "scopes": [SCOPE], "session": "mine"}, "MEMORY_USAGE_INVALID"),
]


async def test_bad_arguments_are_clear_tool_errors(mcp_home: Path) -> None:
    async with mcp_session(mcp_home, enable_write=True) as session:
        for tool, arguments, code in BAD_CALLS:
            message = structured_error(await session.call_tool(tool, arguments), code)
            assert "x" * 100 not in message  # long values are not echoed back
        # A tampered receipt (right shape, wrong digest) is refused too.
        recalled = structured_ok(
            await session.call_tool("gno_recall", {"query": "tea", "scopes": [SCOPE]}), "recall"
        )
        receipt = {**recalled["receipt"], "caller": "mcp:someone-else"}
        structured_error(
            await session.call_tool("gno_remember", _remember("Tea is hot", receipt=receipt)),
            "MEMORY_RECEIPT_INVALID",
        )
        with pytest.raises(MCPError, match="Unknown tool"):
            await session.call_tool("gno_forget", {"text": "x"})
    assert fact_files(mcp_home) == []


async def test_a_nameless_client_is_mcp_unknown(mcp_home: Path) -> None:
    async with mcp_session(mcp_home, client_name="") as session:
        recalled = structured_ok(
            await session.call_tool("gno_recall", {"query": "tea", "scopes": [SCOPE]}), "recall"
        )
    assert recalled["receipt"]["caller"] == "mcp:unknown"
    assert recalled["facts"] == [] and "hint" in recalled


async def test_identity_over_the_2026_protocol(mcp_home: Path) -> None:
    """Without a handshake the client's name rides in each request's envelope."""
    async with mcp_session(mcp_home, client_name="modern-agent", modern=True) as session:
        recalled = structured_ok(
            await session.call_tool("gno_recall", {"query": "tea", "scopes": [SCOPE]}), "recall"
        )
        held = structured_ok(
            await session.call_tool("gno_remember", _remember("Bob drinks coffee", decision="add")),
            "remember",
        )
    assert recalled["receipt"]["caller"] == "mcp:modern-agent"
    assert held["outcome"] == "candidates"
    (proposal,) = run_cli(mcp_home, "review", "--list", "--json")["proposals"]
    assert proposal["caller"] == "mcp:modern-agent"
