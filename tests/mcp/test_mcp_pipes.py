"""The stdio wire (gno_tui/mcp_pipes.py): over pipes, as every MCP client starts the server,
the event loop reads and writes them itself; anything else (here a file as stdin) is served by
the SDK's own transport. Over pipes, a line of any length is read whole and answers leave
whole however many calls are in flight."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import anyio
import mcp_types as types
import numpy as np
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp_harness import CONSOLE_SCRIPT, mcp_session, server_env, structured_error, structured_ok
from sqlalchemy import select
from sqlalchemy.orm import Session

from engine.facade.factory import open_engine
from engine.retrieval.embeddings import (
    EmbedderStatus,
    embed_facts,
    load_embedder,
    vector_from_bytes,
)
from engine.storage.schema import tables

_HANDSHAKE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "from-a-file", "version": "1"},
    },
}


def _lines(*messages: dict[str, object]) -> str:
    return "".join(json.dumps(message) + "\n" for message in messages)


def test_a_server_reading_a_file_is_served_by_the_sdk_transport(tmp_path: Path) -> None:
    """A file as stdin cannot be watched by the event loop: the SDK's own transport reads it.
    (At the end of the file the session ends, and the SDK cancels a request still running
    then, so only the handshake's answer is certain here.)"""
    requests = tmp_path / "requests.jsonl"
    requests.write_text(_lines(_HANDSHAKE), encoding="utf-8")
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [str(CONSOLE_SCRIPT), "--home", str(tmp_path / "home"), "mcp"],
            stdin=stdin,
            capture_output=True,
            env=server_env(tmp_path / "home"),
            timeout=120,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    (answer,) = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert answer["id"] == 1 and answer["result"]["serverInfo"]["name"]


async def test_a_request_longer_than_a_pipe_buffer_is_read_whole(mcp_home: Path) -> None:
    async with mcp_session(mcp_home, enable_write=True) as session:
        # 300 KiB on one line: over asyncio's default line limit and a pipe's buffer.
        long = await session.call_tool(
            "gno_remember", {"text": "word " * 60_000, "scopes": ["user:alice"]}
        )
        structured_error(long, "MEMORY_TEXT_TOO_LARGE")
        added = await session.call_tool(
            "gno_remember",
            {"text": "Alice prefers green tea", "scopes": ["user:alice"], "decision": "add"},
        )
        assert structured_ok(added, "remember")["outcome"] == "added"


async def test_answers_leave_whole_when_many_are_in_flight(mcp_home: Path) -> None:
    texts = [f"Ledger line {n}: " + "detail " * 400 for n in range(24)]  # ~3 KiB answers
    results: dict[int, dict[str, object]] = {}
    async with mcp_session(mcp_home, enable_write=True) as session:

        async def one(n: int) -> None:
            result = await session.call_tool(
                "gno_remember", {"text": texts[n], "scopes": ["user:bob"], "decision": "add"}
            )
            results[n] = structured_ok(result, "remember")

        async with anyio.create_task_group() as group:
            for n in range(len(texts)):
                group.start_soon(one, n)
    assert sorted(results) == list(range(len(texts)))
    assert {results[n]["record"]["text"] for n in results} == {t.strip() for t in texts}  # type: ignore[index]


async def test_writes_through_the_server_store_the_vectors_a_fresh_embedding_gives(
    mcp_home: Path,
) -> None:
    """The server embeds a write's text before its lock (gno_tui/mcp_writes.py): what it
    stores must be exactly what embedding the stored text gives."""
    texts = ["  Alice prefers green tea. She drinks it at nine.  ", "Bob's deploy is at 06:00"]
    env = {**server_env(mcp_home)}
    env.pop("GNO_TUI_MODEL")  # the bundled model
    params = StdioServerParameters(
        command=str(CONSOLE_SCRIPT),
        args=["--home", str(mcp_home), "mcp", "--enable-write"],
        env=env,
    )
    ids: dict[str, str] = {}
    async with stdio_client(params) as (read, write):
        info = types.Implementation(name="vectors", version="1")
        async with ClientSession(read, write, client_info=info, read_timeout_seconds=60) as s:
            await s.initialize()
            for text in texts:
                result = await s.call_tool(
                    "gno_remember", {"text": text, "scopes": ["user:alice"], "decision": "add"}
                )
                record = structured_ok(result, "remember")["record"]
                ids[record["recordId"]] = record["text"]
    embedder = load_embedder().embedder
    assert embedder is not None
    # The home's database, whichever it is (its SQLite index, or a server's in that mode).
    database = open_engine(home=mcp_home, embedder_status=EmbedderStatus(None, "reader")).db
    try:
        with Session(database) as session:
            rows = {row.record_id: row for row in session.scalars(select(tables.EmbeddingRow))}
    finally:
        database.dispose()
    assert set(rows) == set(ids)
    for record_id, stored_text in ids.items():
        (fresh,) = embed_facts(embedder, [stored_text])
        assert np.array_equal(vector_from_bytes(rows[record_id].vector, embedder.dims), fresh)
