"""Resource subscriptions (gno_tui/mcp_subscriptions.py): a real client subscribes over
stdio and hears `notifications/resources/updated` when another process (the console script)
writes into the same home, or into the same server database; a server bound to some scopes
never reports a fact outside them; the 2026-07-28 protocol's listen stream carries the same.

Every wait ends at the event it waits for, bounded by WAIT seconds; nothing sleeps."""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession
from mcp.client.session import IncomingMessage
from mcp.client.subscriptions import listen
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_harness import CONSOLE_SCRIPT, mcp_session, run_cli, server_env, structured_ok

WAIT = 30.0


class Updates:
    """The uris of the resources/updated notifications a client received, in order."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self._arrived = anyio.Event()

    async def __call__(self, message: IncomingMessage) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.uris.append(message.params.uri)
            self._arrived.set()

    async def until(self, uri: str) -> list[str]:
        """Wait for an update of `uri`; every uri reported up to and including it."""
        with anyio.fail_after(WAIT):
            while uri not in self.uris:
                await self._arrived.wait()
                self._arrived = anyio.Event()
        return self.uris[: self.uris.index(uri) + 1]


@asynccontextmanager
async def subscribed_client(home: Path, **options: Any) -> AsyncIterator[tuple[Any, Updates]]:
    updates = Updates()
    async with mcp_session(home, message_handler=updates, **options) as session:
        yield session, updates


def add(home: Path, text: str, scope: str) -> dict[str, Any]:
    added = run_cli(home, "remember", text, "--scope", scope, "--add", "--json")
    assert added["outcome"] == "added"
    return dict(added["record"])


def supersede(home: Path, record: dict[str, Any], text: str, *db: str) -> None:
    """Another process replaces the fact: its uri stops being current."""
    scopes = [arg for scope in record["scopes"] for arg in ("--scope", scope)]
    replace = ["--supersede", record["uri"], "--predecessor-hash", record["contentHash"]]
    done = subprocess.run(
        [
            str(CONSOLE_SCRIPT),
            "--home",
            str(home),
            *db,
            "remember",
            text,
            *scopes,
            *replace,
            "--json",
        ],
        capture_output=True,
        text=True,
        env=server_env(None if db else home),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr + done.stdout


async def subscribe(session: ClientSession, uri: str) -> None:
    # The SDK marks it: the 2026-07-28 protocol replaced it by listen streams (tested below).
    with pytest.warns(MCPDeprecationWarning):
        await session.subscribe_resource(uri)


async def test_a_write_by_another_process_is_reported_only_inside_the_bound_scopes(
    mcp_home: Path,
) -> None:
    mcp_home.mkdir()
    outside = add(mcp_home, "Bob's locker code is 4711", "user:bob")
    inside = add(mcp_home, "Alice drinks green tea", "user:alice")
    async with subscribed_client(mcp_home, allow_scopes=["user:alice"]) as (session, updates):
        capabilities = session.initialize_result.capabilities
        assert capabilities.resources is not None and capabilities.resources.subscribe is True
        # Subscribed first: if the bound scopes did not hold, its update would come first.
        await subscribe(session, outside["uri"])
        await subscribe(session, inside["uri"])
        supersede(mcp_home, outside, "Bob's locker code is 1234")
        supersede(mcp_home, inside, "Alice drinks black tea")
        assert await updates.until(inside["uri"]) == [inside["uri"]]
        with pytest.raises(MCPError):  # what the update told: it is no longer current
            await session.read_resource(inside["uri"])


async def test_the_proposals_list_is_reported_when_a_proposal_is_queued(
    mcp_home: Path,
) -> None:
    async with subscribed_client(mcp_home) as (session, updates):
        await subscribe(session, "gno://review/proposals")
        queued = await session.call_tool(
            "gno_remember",
            {"text": "Carol moved to Berlin", "scopes": ["user:carol"], "decision": "add"},
        )
        assert structured_ok(queued, "remember")["outcome"] == "candidates"  # propose-only
        assert await updates.until("gno://review/proposals") == ["gno://review/proposals"]


async def test_after_unsubscribe_nothing_is_reported(mcp_home: Path) -> None:
    mcp_home.mkdir()
    first = add(mcp_home, "The VPN needs MFA", "team:infra")
    second = add(mcp_home, "Backups run nightly", "team:infra")
    async with subscribed_client(mcp_home) as (session, updates):
        await subscribe(session, first["uri"])
        await subscribe(session, second["uri"])
        with pytest.warns(MCPDeprecationWarning):
            await session.unsubscribe_resource(first["uri"])
        supersede(mcp_home, first, "The VPN needs MFA and a key")
        supersede(mcp_home, second, "Backups run hourly")
        # The first changed first, and had it still been watched it would come first.
        assert await updates.until(second["uri"]) == [second["uri"]]


async def test_only_this_servers_resources_can_be_subscribed_to(mcp_home: Path) -> None:
    async with subscribed_client(mcp_home) as (session, _updates):
        for uri in ("file:///etc/passwd", "gno://review/proposals\n"):
            with pytest.raises(MCPError) as refused:
                await subscribe(session, uri)
            assert refused.value.error.code == types.INVALID_PARAMS
            assert "gno://review/proposals" in refused.value.error.message


async def test_a_listen_stream_of_the_2026_protocol_carries_the_update(
    mcp_home: Path,
) -> None:
    mcp_home.mkdir()
    fact = add(mcp_home, "Deploys run on Fridays", "team:infra")
    async with mcp_session(mcp_home, modern=True) as session:
        async with listen(session, resource_subscriptions=[fact["uri"]]) as stream:
            assert stream.honored.resource_subscriptions == [fact["uri"]]
            supersede(mcp_home, fact, "Deploys run on Thursdays")
            with anyio.fail_after(WAIT):
                event = await anext(aiter(stream))
            assert getattr(event, "uri", None) == fact["uri"]


async def test_in_the_server_mode_a_write_from_another_machine_is_reported(
    pg_url: str, tmp_path: Path
) -> None:
    other = tmp_path / "other-machine"
    other.mkdir()
    write = ["remember", "Erin joined", "--scope", "team:infra", "--add", "--json"]
    done = subprocess.run(
        [str(CONSOLE_SCRIPT), "--home", str(other), "--db", pg_url, *write],
        capture_output=True,
        text=True,
        env=server_env(),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    fact = json.loads(done.stdout)["record"]
    async with subscribed_client(tmp_path / "this-machine", db_url=pg_url) as (session, updates):
        await subscribe(session, fact["uri"])
        supersede(other, fact, "Erin joined the infra team", "--db", pg_url)
        assert await updates.until(fact["uri"]) == [fact["uri"]]
