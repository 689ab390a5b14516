"""`gno-tui --db postgresql://... mcp` (the server mode): two MCP servers on two homes share one
database; writes need no fact file, a fact's resource is rendered from its row, and a racing
supersede through the two servers has one winner."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_harness import mcp_session, structured_error, structured_ok

SCOPE = "team"


@pytest.fixture(scope="module")
def pg_url() -> Iterator[str]:
    """A throwaway PostgreSQL 16 (pgserver, a test extra) for this module's servers."""
    import pgserver

    folder = Path(tempfile.mkdtemp(prefix="gno-tui-mcp-pgserver-"))
    server = pgserver.get_server(folder, cleanup_mode="delete")
    try:
        yield server.get_uri()
    finally:
        server.cleanup()


def _remember(text: str, **extra: Any) -> dict[str, Any]:
    return {"text": text, "scopes": [SCOPE], **extra}


async def test_two_mcp_servers_on_two_homes_share_the_server_database(
    pg_url: str, tmp_path: Path
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    async with (
        mcp_session(one, enable_write=True, db_url=pg_url) as first,
        mcp_session(two, enable_write=True, db_url=pg_url) as second,
    ):
        added = structured_ok(
            await first.call_tool(
                "gno_remember", _remember("Alice drinks green tea", decision="add")
            ),
            "remember",
        )
        record = added["record"]
        assert added["absPath"] == record["uri"]  # no file in the server mode
        recalled = structured_ok(
            await second.call_tool("gno_recall", {"query": "tea", "scopes": [SCOPE]}), "recall"
        )
        assert [fact["text"] for fact in recalled["facts"]] == ["Alice drinks green tea"]
        resource = await second.read_resource(record["uri"])
        body = resource.contents[0].text  # type: ignore[union-attr]
        assert f"recordId: {record['recordId']}" in body and body.endswith(
            "Alice drinks green tea\n"
        )

        supersede = {
            "decision": "supersede",
            "predecessor": record["uri"],
            "predecessorHash": record["contentHash"],
        }
        results: dict[str, Any] = {}

        async def race(name: str, session: Any, text: str) -> None:
            results[name] = await session.call_tool("gno_remember", _remember(text, **supersede))

        async with anyio.create_task_group() as group:
            group.start_soon(race, "first", first, "Alice drinks black tea")
            group.start_soon(race, "second", second, "Alice drinks water")
        winners = [name for name, result in results.items() if not result.is_error]
        assert len(winners) == 1
        (loser,) = set(results) - set(winners)
        structured_error(results[loser], "MEMORY_SUPERSEDE_CONFLICT")
    for home in (one, two):
        assert not list(home.rglob("*.md")) and not (home / ".inflight").exists()
