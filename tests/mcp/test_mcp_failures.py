"""Failure paths of the MCP server, in-process (the SDK's in-memory transport) so that faults can
be injected into the engine: an unexpected exception must reach the agent as MEMORY_INTERNAL in
the contract's shape, never as a traceback or a database error's full text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from mcp_harness import structured_error, structured_ok
from sqlalchemy import delete
from sqlalchemy.orm import Session

from engine.facade.service import MemoryService, open_service
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.schema import tables
from gno_tui.mcp_server import GnoMcp

SECRET = "Alice's bank PIN is 1234"


@pytest.fixture
def store(mcp_home: Path) -> Iterator[MemoryService]:
    service = open_service(home=mcp_home, embedder_status=EmbedderStatus(None, "test"))
    yield service
    service.close()


def _client(app: GnoMcp, name: str = "in-process") -> Client:
    return Client(app.server, client_info=types.Implementation(name=name, version="1"))


def _explode(*_: Any, **__: Any) -> Any:
    raise RuntimeError(
        "(sqlite3.OperationalError) disk I/O error\n"
        f"[SQL: INSERT INTO facts ...]\n[parameters: ('{SECRET}',)]"
    )


async def test_unexpected_exceptions_become_memory_internal(
    store: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = GnoMcp(store, enable_write=True)
    monkeypatch.setattr(store, "recall", _explode)
    monkeypatch.setattr(store, "remember", _explode)
    async with _client(app) as client:
        for tool, arguments in (
            ("gno_recall", {"query": "pin", "scopes": ["user:alice"]}),
            ("gno_remember", {"text": "x y z", "scopes": ["user:alice"], "decision": "add"}),
        ):
            result = await client.call_tool(tool, arguments)
            message = structured_error(result, "MEMORY_INTERNAL")
            assert "RuntimeError" in message and "disk I/O error" in message
            assert SECRET not in message and "[SQL" not in message
            assert SECRET not in result.content[0].text  # type: ignore[union-attr]


async def test_identity_comes_from_the_connection(store: MemoryService) -> None:
    app = GnoMcp(store, enable_write=True, session_id="mcp-0123456789ab")
    async with _client(app, name="claude-code") as client:
        added = structured_ok(
            await client.call_tool(
                "gno_remember", {"text": "Bob drinks coffee", "scopes": ["u"], "decision": "add"}
            ),
            "remember",
        )
    assert added["record"]["caller"] == "mcp:claude-code"
    assert added["record"]["session"] == "mcp-0123456789ab"


@pytest.mark.embedded_mode  # a fact file whose row is missing
async def test_a_fact_missing_from_the_index_is_served_from_its_file(
    store: MemoryService,
) -> None:
    app = GnoMcp(store, enable_write=True)
    async with _client(app) as client:
        added = structured_ok(
            await client.call_tool(
                "gno_remember",
                {"text": "Carol lives in Berlin", "scopes": ["u"], "decision": "add"},
            ),
            "remember",
        )
        record = added["record"]
        # The index loses the row (as when the index write failed); the file is canonical.
        with Session(store.engine.db) as session:
            session.execute(
                delete(tables.FactScopeRow).where(
                    tables.FactScopeRow.record_id == record["recordId"]
                )
            )
            session.execute(
                delete(tables.FactRow).where(tables.FactRow.record_id == record["recordId"])
            )
            session.commit()
        as_json = await client.read_resource(record["uri"].removesuffix(".md") + ".json")
        assert json.loads(as_json.contents[0].text) == record  # type: ignore[union-attr]
        markdown = await client.read_resource(record["uri"])
        assert "Carol lives in Berlin" in markdown.contents[0].text  # type: ignore[union-attr]


async def test_resource_failures_are_protocol_errors_without_details(
    store: MemoryService, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = GnoMcp(store)
    monkeypatch.setattr(app, "read_uri", _explode)
    async with _client(app) as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource("gno://review/proposals")
    assert raised.value.code == types.INTERNAL_ERROR
    assert SECRET not in raised.value.message and "RuntimeError" in raised.value.message
