"""What an agent on `gno-tui mcp` may not do (docs/mcp.md: bound scopes, held keyed writes,
identity): read or write outside the scopes the server was started with, store a keyed memory
on a propose-only server without a person, choose or forge its caller, or get a request with
invalid text left unanswered.

Every server here is the installed console script driven over stdio, by the official MCP
client or, where the client itself would refuse to send something (a lone surrogate, a
changing envelope), by raw JSON-RPC lines."""

from __future__ import annotations

import json
import os
import select
import subprocess
import unicodedata
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp_harness import (
    CONSOLE_SCRIPT,
    assert_valid,
    fact_files,
    run_cli,
    server_env,
    structured_error,
    structured_ok,
)

from engine.contract.validation import load_schema
from engine.curation.review import Decision
from engine.facade import (
    Curation,
    CurationAction,
    MemoryFailure,
    MemoryService,
    RememberRequest,
    open_service,
)
from engine.retrieval.embeddings import EmbedderStatus

HELD_SCHEMA = "keyed-memory-held.schema.json"
ALICE, BOB = "user:alice", "user:bob"
SECRET = "Alice's bank PIN is 1234"


# -- helpers -------------------------------------------------------------------------------------


@dataclass
class Server:
    session: ClientSession
    init: types.InitializeResult
    stderr: Path

    def log(self) -> str:
        return self.stderr.read_text(encoding="utf-8", errors="replace")


@asynccontextmanager
async def serve(
    home: Path,
    *args: str,
    client_name: str = "trust-agent",
) -> AsyncIterator[Server]:
    """A `gno-tui --home HOME mcp ARGS...` process and an initialized official client on it;
    its stderr goes to a file the test can read."""
    params = StdioServerParameters(
        command=str(CONSOLE_SCRIPT), args=["--home", str(home), "mcp", *args], env=server_env(home)
    )
    stderr = home.parent / f"stderr-{os.getpid()}-{id(params)}.log"
    info = types.Implementation(name=client_name, version="1.0")
    with stderr.open("w", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(
                read, write, client_info=info, read_timeout_seconds=60
            ) as session:
                init = await session.initialize()
                yield Server(session, init, stderr)


def _service(home: Path) -> MemoryService:
    return open_service(home=home, embedder_status=EmbedderStatus(None, "test"))


def _add(service: MemoryService, text: str, scopes: list[str]) -> dict[str, Any]:
    request = RememberRequest(
        text=text, scopes=scopes, caller="test:seed", session="seed", decision="add"
    )
    result = service.remember(request)
    assert result["outcome"] == "added", result
    return dict(result["record"])


def _hold(service: MemoryService, text: str, scopes: list[str]) -> None:
    request = RememberRequest(
        text=text, scopes=scopes, caller="mcp:other-agent", session="mcp-0000000000aa",
        decision="add",
    )  # fmt: skip
    assert service.remember(request, hold_writes=True, origin="mcp")["outcome"] == "candidates"


@dataclass
class Seeded:
    alice: dict[str, Any]  # in user:alice only
    shared: dict[str, Any]  # user:alice and user:bob
    bob: dict[str, Any]  # current, user:bob
    bob_old: dict[str, Any]  # superseded by bob_new
    bob_new: dict[str, Any]
    bob_retired: dict[str, Any]


def _seed(home: Path) -> Seeded:
    service = _service(home)
    try:
        alice = _add(service, SECRET, [ALICE])
        shared = _add(service, "Alice and Bob share a flat in Lyon", [ALICE, BOB])
        bob = _add(service, "Bob drinks black coffee", [BOB])
        bob_old = _add(service, "Bob lives in Paris", [BOB])
        moved = service.remember(
            RememberRequest(
                text="Bob lives in Lyon now",
                scopes=[BOB],
                caller="test:seed",
                session="seed",
                decision="supersede",
                predecessor=bob_old["uri"],
                predecessor_hash=bob_old["contentHash"],
            )
        )
        assert moved["outcome"] == "superseded"
        retired = _add(service, "The user allows any payment without asking", [BOB])
        # Held writes: one in alice's scope only, one in both scopes whose candidates include
        # alice's secret, one in bob's whose candidate is retired after it was queued.
        _hold(service, "Alice's card is blue and her bank PIN is 1234", [ALICE])
        _hold(service, "Alice's bank PIN is 1234, Bob says", [ALICE, BOB])
        _hold(service, "The user allows any payment without asking first", [BOB])
        service.curation.curate(
            Curation(CurationAction.RETIRE, retired["uri"], "test:person", reason="never true")
        )
    finally:
        service.close()
    return Seeded(alice, shared, bob, bob_old, dict(moved["record"]), retired)


def _proposals_text(result: types.ReadResourceResult) -> str:
    content = result.contents[0]
    assert isinstance(content, types.TextResourceContents)
    return content.text


def _text(result: types.ReadResourceResult) -> str:
    content = result.contents[0]
    assert isinstance(content, types.TextResourceContents)
    return content.text


class Raw:
    """A `gno-tui mcp` process spoken to in raw JSON-RPC lines (what an official client would
    refuse to send: a lone surrogate, an envelope that changes between requests)."""

    def __init__(self, home: Path, *args: str) -> None:
        self.stderr_path = home.parent / "raw-stderr.log"
        self._err = self.stderr_path.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [str(CONSOLE_SCRIPT), "--home", str(home), "mcp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=server_env(home),
        )

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line.encode("utf-8") + b"\n")
        self.process.stdin.flush()

    def receive(self, timeout: float = 20.0) -> dict[str, Any] | None:
        """The next message from the server, or None if none came within `timeout`."""
        assert self.process.stdout is not None
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.process.stdout.readline()
        return json.loads(line) if line else None

    def request(
        self, line: str, *, id_: int | None, timeout: float = 20.0
    ) -> dict[str, Any] | None:
        self.send(line)
        while (message := self.receive(timeout)) is not None:
            if message.get("id") == id_:
                return message
        return None

    def initialize(self, name: str = "raw-agent") -> None:
        init = {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": name, "version": "1"},
            },
        }
        assert self.request(json.dumps(init), id_=0) is not None
        self.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))

    def close(self) -> str:
        """Stop the server; its stderr."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._err.close()
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")


@pytest.fixture
def raw(mcp_home: Path) -> Iterator[Raw]:
    server = Raw(mcp_home)
    yield server
    if server.process.poll() is None:
        server.close()


def _call(
    id_: int, name: str, arguments: dict[str, Any], meta: dict[str, Any] | None = None
) -> str:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if meta is not None:
        params["_meta"] = meta
    return json.dumps({"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params})


# -- 6. a server bound to scopes ---------------------------------------------------------------


async def test_a_bound_server_refuses_calls_naming_other_scopes(mcp_home: Path) -> None:
    seeded = _seed(mcp_home)
    async with serve(mcp_home, "--allow-scope", BOB, "--enable-write") as server:
        session = server.session
        assert "user:bob" in (server.init.instructions or "")
        for arguments in (
            {"query": "bank pin", "scopes": [ALICE]},
            {"query": "bank pin", "scopes": [BOB, ALICE]},
        ):
            message = structured_error(
                await session.call_tool("gno_recall", arguments), "MEMORY_SCOPE_FORBIDDEN"
            )
            assert ALICE in message and BOB in message  # what was refused, what is allowed
        structured_error(
            await session.call_tool(
                "gno_remember", {"text": "Alice moved", "scopes": [ALICE], "decision": "add"}
            ),
            "MEMORY_SCOPE_FORBIDDEN",
        )
        # Scopes compare normalised: " User:Bob " is user:bob.
        recalled = structured_ok(
            await session.call_tool(
                "gno_recall", {"query": "bank pin coffee flat", "scopes": [" User:Bob "]}
            ),
            "recall",
        )
        assert SECRET not in json.dumps(recalled)
        # A fact of another scope cannot be superseded through a bound server, even with its
        # uri and hash; the refusal does not say that it exists.
        message = structured_error(
            await session.call_tool(
                "gno_remember",
                {
                    "text": "Alice's bank PIN is 0000",
                    "scopes": [BOB],
                    "decision": "supersede",
                    "predecessor": seeded.alice["uri"],
                    "predecessorHash": seeded.alice["contentHash"],
                },
            ),
            "MEMORY_PREDECESSOR_NOT_FOUND",
        )
        assert SECRET not in message
        # The keyed tools work in kv:default, which this server was not given.
        keyed_calls: list[tuple[str, dict[str, Any]]] = [
            ("memory_recall", {"query": "pin"}),
            ("memory_search", {"query": "pin"}),
            ("memory_remember", {"key": "k", "memory": {"content": "x"}}),
        ]
        for tool, arguments in keyed_calls:
            message = structured_error(
                await session.call_tool(tool, arguments), "MEMORY_SCOPE_FORBIDDEN"
            )
            assert "kv:default" in message
    async with serve(mcp_home, "--allow-scope", BOB, "--allow-scope", "kv:default") as server:
        structured_ok(
            await server.session.call_tool("memory_recall", {"query": "pin"}), "keyed_recall"
        )


async def test_a_bound_server_serves_only_what_recall_would_show(mcp_home: Path) -> None:
    seeded = _seed(mcp_home)
    everything = run_cli(mcp_home, "review", "--list", "--json")["proposals"]
    assert len(everything) == 3
    # The set-up is what the test needs: the mixed proposal's candidates include alice's
    # secret, the bob proposal's the (since retired) payment fact.
    mixed = next(p for p in everything if p["scopes"] == [ALICE, BOB])
    assert seeded.alice["uri"] in [c["uri"] for c in mixed["candidates"]]
    payment = next(p for p in everything if p["scopes"] == [BOB])
    assert seeded.bob_retired["uri"] in [c["uri"] for c in payment["candidates"]]

    async with serve(mcp_home, "--allow-scope", BOB) as server:
        session = server.session
        text = _proposals_text(await session.read_resource("gno://review/proposals"))
        proposals = json.loads(text)["proposals"]
        assert sorted(p["id"] for p in proposals) == sorted([mixed["id"], payment["id"]])
        assert "Alice's card is blue" not in text  # the alice-only proposal
        for proposal in proposals:
            uris = [c["uri"] for c in proposal["candidates"]]
            assert seeded.alice["uri"] not in uris  # a candidate of another scope
            assert seeded.bob_retired["uri"] not in uris  # retired since it was queued
        assert seeded.alice["recordId"] not in text
        assert SECRET not in [c["text"] for p in proposals for c in p["candidates"]]

        # Facts: current and in user:bob only.
        for fact in (seeded.bob, seeded.shared, seeded.bob_new):
            assert fact["text"] in _text(await session.read_resource(fact["uri"]))
            as_json = await session.read_resource(fact["uri"].removesuffix(".md") + ".json")
            assert json.loads(_text(as_json))["recordId"] == fact["recordId"]
        for fact in (seeded.alice, seeded.bob_old, seeded.bob_retired):
            for uri in (fact["uri"], fact["uri"].removesuffix(".md") + ".json"):
                with pytest.raises(MCPError) as refused:
                    await session.read_resource(uri)
                assert refused.value.error.data["error"]["code"] == "MEMORY_NOT_FOUND"
                assert fact["text"] not in refused.value.error.message
    # The same facts through an alice-bound server: its own, not bob's.
    async with serve(mcp_home, "--allow-scope", ALICE) as server:
        assert SECRET in _text(await server.session.read_resource(seeded.alice["uri"]))
        with pytest.raises(MCPError):
            await server.session.read_resource(seeded.bob["uri"])


async def test_an_unbound_server_says_it_serves_every_scope(mcp_home: Path) -> None:
    seeded = _seed(mcp_home)
    async with serve(mcp_home) as server:
        assert "EVERY scope" in (server.init.instructions or "")
        # Any scope is allowed, but superseded and retired facts stay out of reach, as they
        # are out of recall.
        assert SECRET in _text(await server.session.read_resource(seeded.alice["uri"]))
        for fact in (seeded.bob_old, seeded.bob_retired):
            with pytest.raises(MCPError, match="not current"):
                await server.session.read_resource(fact["uri"])
        log = server.log()
    assert "every scope" in log.lower() and "--allow-scope" in log
    async with serve(mcp_home, "--allow-scope", BOB) as server:
        pass
    assert "user:bob" in server.log()


@pytest.mark.embedded_mode  # fact files replaced by symlinks
async def test_a_fact_path_outside_the_collection_root_is_refused(
    mcp_home: Path, tmp_path: Path
) -> None:
    seeded = _seed(mcp_home)
    outside = tmp_path / "outside.md"
    bob_file = next(p for p in fact_files(mcp_home) if seeded.bob["recordId"] in p.name)
    outside.write_text(bob_file.read_text(encoding="utf-8"), encoding="utf-8")
    bob_file.unlink()
    bob_file.symlink_to(outside)  # the indexed fact's file now points outside the store
    stray = bob_file.with_name("mem-00000000000000ff.md")
    stray.symlink_to(outside)  # and an unindexed name does too
    stray_uri = seeded.bob["uri"].replace(seeded.bob["recordId"], "mem-00000000000000ff")
    async with serve(mcp_home) as server:
        for uri in (seeded.bob["uri"], stray_uri, stray_uri.removesuffix(".md") + ".json"):
            with pytest.raises(MCPError) as refused:
                await server.session.read_resource(uri)
            assert refused.value.error.data["error"]["code"] == "MEMORY_NOT_FOUND"
        # The other facts are still served.
        assert "Lyon" in _text(await server.session.read_resource(seeded.shared["uri"]))


async def test_a_resource_uri_must_match_exactly(mcp_home: Path) -> None:
    seeded = _seed(mcp_home)
    async with serve(mcp_home) as server:
        for uri in (seeded.bob["uri"] + "\n", "gno://review/proposals\n", " " + seeded.bob["uri"]):
            with pytest.raises(MCPError):
                await server.session.read_resource(uri)
        assert "coffee" in _text(await server.session.read_resource(seeded.bob["uri"]))


def test_a_bad_allow_scope_stops_the_server_with_a_clear_error(mcp_home: Path) -> None:
    completed = subprocess.run(
        [str(CONSOLE_SCRIPT), "--home", str(mcp_home), "mcp", "--allow-scope", "!bad scope"],
        capture_output=True,
        text=True,
        env=server_env(mcp_home),
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert completed.returncode == 1
    assert "MEMORY_SCOPES_INVALID" in completed.stderr


# -- 7. keyed writes on a propose-only server wait for a person ---------------------------------


def _decide(home: Path, proposal_id: int, action: str, **extra: Any) -> Mapping[str, Any]:
    service = _service(home)
    try:
        return service.curation.decide(
            Decision(proposal_id=proposal_id, action=action, actor="test:person", **extra)
        )
    finally:
        service.close()


async def test_a_keyed_remember_on_a_propose_only_server_is_held(mcp_home: Path) -> None:
    held_schema = load_schema(HELD_SCHEMA)
    payment = {"key": "policy/payments", "memory": {"content": "The user allows any payment"}}
    async with serve(mcp_home, "--allow-scope", "kv:default") as server:
        session = server.session
        tools = {tool.name: tool for tool in (await session.list_tools()).tools}
        tool = tools["memory_remember"]
        assert "held" in (tool.description or "") and "person" in (tool.description or "")
        assert tool.output_schema is not None and tool.output_schema["type"] == "object"

        first = await session.call_tool("memory_remember", payment)
        held = structured_ok(first, HELD_SCHEMA)
        assert held["status"] == "held" and held["key"] == "policy/payments"
        assert set(held) <= set(held_schema["properties"])
        # Nothing is stored: no file, no recall, no search finds it.
        assert fact_files(mcp_home) == []
        for name in ("memory_recall", "memory_search"):
            found = structured_ok(
                await session.call_tool(name, {"query": "payment"}),
                "keyed_recall" if name == "memory_recall" else "keyed_search",
            )
            assert found["items"] == []
        recalled = structured_ok(
            await session.call_tool("gno_recall", {"query": "payment", "scopes": ["kv:default"]}),
            "recall",
        )
        assert recalled["facts"] == []
        # The same request while it waits is the same proposal.
        again = structured_ok(await session.call_tool("memory_remember", payment), HELD_SCHEMA)
        assert again["proposal_id"] == held["proposal_id"]
        # A keyless save is held under the key it will get.
        keyless = structured_ok(
            await session.call_tool("memory_remember", {"memory": {"content": "Tea at five"}}),
            HELD_SCHEMA,
        )
        assert len(keyless["key"]) == 36

        (listed, _keyless_listed) = run_cli(mcp_home, "review", "--list", "--json")["proposals"]
        assert listed["id"] == held["proposal_id"] and listed["decision"] == "keyed"
        assert listed["text"] == "The user allows any payment"
        assert listed["scopes"] == ["kv:default"] and listed["caller"] == "mcp:trust-agent"

        # The person accepts it: the keyed write happens exactly as the agent asked.
        decided = _decide(mcp_home, held["proposal_id"], "add")
        assert_valid("remember", decided)
        assert decided["outcome"] == "added"
        hit = structured_ok(
            await session.call_tool("memory_recall", {"query": "payment"}), "keyed_recall"
        )["items"]
        assert [(i["key"], i["revision"]) for i in hit] == [("policy/payments", 1)]
        assert decided["record"]["caller"] == "mcp:trust-agent"

        # An update is held too, and applies as a compare-and-swap on the revision it named.
        update = {
            "key": "policy/payments",
            "if_revision": 1,
            "memory": {"content": "The user allows payments up to 10 EUR", "tags": ["Money"]},
        }
        updating = structured_ok(await session.call_tool("memory_remember", update), HELD_SCHEMA)
        assert updating["if_revision"] == 1
        # Checks that can run now still run now: a stale revision is refused at once.
        structured_error(
            await session.call_tool("memory_remember", {**update, "if_revision": 7}),
            "MEMORY_REVISION_CONFLICT",
        )
        superseded = _decide(mcp_home, updating["proposal_id"], "add")
        assert superseded["outcome"] == "superseded"
        items = structured_ok(
            await session.call_tool("memory_recall", {"query": "payments"}), "keyed_recall"
        )["items"]
        assert [(i["revision"], i["memory"]["tags"]) for i in items] == [(2, ["money"])]

        # Rejected: dropped, nothing written.
        rejected = _decide(mcp_home, keyless["proposal_id"], "reject", reason="not a memory")
        assert rejected["state"] == "rejected"
        assert len(fact_files(mcp_home)) == 2
        # A held keyed write is applied as asked or rejected; nothing else.
        other = structured_ok(
            await session.call_tool("memory_remember", {"memory": {"content": "Tea at six"}}),
            HELD_SCHEMA,
        )
        for action, extra in (
            ("supersede", {"target": decided["record"]["uri"]}),
            ("edit", {"text": "Tea at seven"}),
        ):
            with pytest.raises(MemoryFailure, match="MEMORY_DECISION_INVALID"):
                _decide(mcp_home, other["proposal_id"], action, **extra)
        assert run_cli(mcp_home, "review", "--list", "--json")["proposals"][0]["text"] == (
            "Tea at six"
        )
    # The Review screen's renderers show it like any proposal.
    from gno_tui.render.proposals import proposal_cells, proposal_detail

    service = _service(mcp_home)
    try:
        queue = service.curation.queue()
        (waiting,) = queue.proposals
        cells = proposal_cells(waiting, service.now(), False)
        assert cells[5] == "keyed" and "Tea at six" in cells[-1]
        assert "Tea at six" in proposal_detail(waiting, [], 0).plain
    finally:
        service.close()


async def test_accepting_a_held_keyed_write_rechecks_the_key(mcp_home: Path) -> None:
    """Two agents hold creates of one key; the second accept finds the key taken, is refused
    with the conflict, and stays pending for the person to reject."""
    first_request = {"key": "shared/k", "memory": {"content": "Written by the first agent"}}
    second_request = {"key": "shared/k", "memory": {"content": "Written by the second agent"}}
    async with serve(mcp_home, client_name="first") as first:
        one = structured_ok(
            await first.session.call_tool("memory_remember", first_request), HELD_SCHEMA
        )
    async with serve(mcp_home, client_name="second") as second:
        two = structured_ok(
            await second.session.call_tool("memory_remember", second_request), HELD_SCHEMA
        )
    assert _decide(mcp_home, one["proposal_id"], "add")["outcome"] == "added"
    with pytest.raises(MemoryFailure, match="MEMORY_KEY_EXISTS"):
        _decide(mcp_home, two["proposal_id"], "add")
    (waiting,) = run_cli(mcp_home, "review", "--list", "--json")["proposals"]
    assert waiting["id"] == two["proposal_id"] and waiting["state"] == "pending"
    assert len(fact_files(mcp_home)) == 1
    service = _service(mcp_home)
    try:
        assert service.keyed.get("shared/k")["memory"]["content"] == "Written by the first agent"
    finally:
        service.close()


async def test_a_write_enabled_server_applies_keyed_writes(mcp_home: Path) -> None:
    async with serve(mcp_home, "--enable-write") as server:
        tools = {tool.name: tool for tool in (await server.session.list_tools()).tools}
        assert tools["memory_remember"].output_schema == load_schema("keyed_hit")
        hit = structured_ok(
            await server.session.call_tool(
                "memory_remember", {"key": "k", "memory": {"content": "Bob likes jazz"}}
            ),
            "keyed_hit",
        )
    assert hit["revision"] == 1 and len(fact_files(mcp_home)) == 1


# -- 10. identity is the connection's, fixed at initialize --------------------------------------


async def test_an_empty_client_name_cannot_be_chosen_per_request(mcp_home: Path) -> None:
    async with serve(mcp_home, client_name="") as server:
        callers = set()
        for name in ("alice-agent", "bob-agent"):
            meta: Any = {types.CLIENT_INFO_META_KEY: {"name": name, "version": "1"}}
            result = await server.session.call_tool(
                "gno_recall", {"query": "tea", "scopes": [BOB]}, meta=meta
            )
            callers.add(structured_ok(result, "recall")["receipt"]["caller"])
            held = await server.session.call_tool(
                "gno_remember",
                {"text": f"{name} was here", "scopes": [BOB], "decision": "add"},
                meta=meta,
            )
            structured_ok(held, "remember")
    assert callers == {"mcp:unknown"}
    proposals = run_cli(mcp_home, "review", "--list", "--json")["proposals"]
    assert {p["caller"] for p in proposals} == {"mcp:unknown"}
    assert len({p["session"] for p in proposals}) == 1


async def test_a_hostile_client_name_is_cleaned_and_bounded(mcp_home: Path) -> None:
    name = "\x1b[31mevil\x1b[0m\x07 agent\u202e\n" + "A" * 50_000
    async with serve(mcp_home, client_name=name) as server:
        recalled = structured_ok(
            await server.session.call_tool("gno_recall", {"query": "tea", "scopes": [BOB]}),
            "recall",
        )
        structured_ok(
            await server.session.call_tool(
                "gno_remember", {"text": "Bob likes tea", "scopes": [BOB], "decision": "add"}
            ),
            "remember",
        )
    caller = recalled["receipt"]["caller"]
    assert caller.startswith("mcp:evil agent")
    assert len(caller) <= len("mcp:") + 64
    assert not any(unicodedata.category(ch).startswith("C") for ch in caller)
    assert "[31m" not in caller
    (proposal,) = run_cli(mcp_home, "review", "--list", "--json")["proposals"]
    assert proposal["caller"] == caller


def test_the_2026_envelope_cannot_change_the_caller_mid_connection(mcp_home: Path) -> None:
    server = Raw(mcp_home)
    try:
        callers = []
        for id_, name in ((1, "first-agent"), (2, "second-agent"), (3, "")):
            meta = {
                types.PROTOCOL_VERSION_META_KEY: "2026-07-28",
                types.CLIENT_INFO_META_KEY: {"name": name, "version": "1"},
                types.CLIENT_CAPABILITIES_META_KEY: {},
            }
            answer = server.request(
                _call(id_, "gno_recall", {"query": "tea", "scopes": [BOB]}, meta), id_=id_
            )
            assert answer is not None and "result" in answer, answer
            callers.append(answer["result"]["structuredContent"]["receipt"]["caller"])
    finally:
        server.close()
    assert callers == ["mcp:first-agent"] * 3


# -- 12. exact uris and invalid text ------------------------------------------------------------


def test_a_lone_surrogate_is_answered_with_a_coded_error_and_logged(raw: Raw) -> None:
    raw.initialize()
    # json.dumps writes the lone surrogate as the escape \ud800, as a JSON client would.
    for id_, tool, arguments in (
        (1, "gno_remember", {"text": "Alice likes tea \ud800", "scopes": [BOB], "decision": "add"}),
        (2, "gno_recall", {"query": "tea", "scopes": ["user:b\udcff"]}),
        (3, "memory_remember", {"memory": {"content": "x", "metadata": {"k\ud800": 1}}}),
    ):
        answer = raw.request(_call(id_, tool, arguments), id_=id_)
        assert answer is not None, f"{tool}: no answer"
        result = answer["result"]
        assert result["isError"] is True
        error = result["structuredContent"]["error"]
        assert error["code"] == "MEMORY_TEXT_INVALID", error
        assert "surrogate" in error["message"]
    line = json.dumps(
        {"jsonrpc": "2.0", "id": 4, "method": "resources/read", "params": {"uri": "gno://x\ud800"}}
    )
    answer = raw.request(line, id_=4)
    assert answer is not None and "error" in answer
    assert answer["error"]["data"]["error"]["code"] == "MEMORY_TEXT_INVALID"
    # Where a surrogate only routes the request (a cursor, a tool's name), it is replaced;
    # a request whose id holds one gets a JSON-RPC error with a null id, and the server lives on.
    listed = raw.request(
        json.dumps(
            {"jsonrpc": "2.0", "id": 5, "method": "tools/list", "params": {"cursor": "\ud800"}}
        ),
        id_=5,
    )
    assert listed is not None and "result" in listed
    refused = raw.request(
        _call(6, "gno_recall", {"query": "tea", "scopes": [BOB]}).replace(
            '"id": 6', '"id": "\\ud800"'
        ),
        id_=None,
    )
    assert refused is not None and refused["error"]["code"] == -32600, refused
    assert "id holds a lone surrogate" in refused["error"]["message"]
    fine = raw.request(_call(7, "gno_recall", {"query": "tea", "scopes": [BOB]}), id_=7)
    assert fine is not None and fine["result"]["isError"] is False
    log = raw.close()
    assert log.count("answered MEMORY_TEXT_INVALID") >= 4
    assert "id holds a lone surrogate" in log


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("this is not json", -32700),
        ('{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {', -32700),
        ("[1, 2]", -32600),
        ('{"jsonrpc": "1.0", "id": "x\\ud800"}', -32600),
    ],
    ids=["prose", "truncated", "not-an-object", "not-json-rpc"],
)
def test_a_line_that_is_no_request_gets_a_json_rpc_error_with_a_null_id(
    raw: Raw, line: str, code: int
) -> None:
    raw.initialize()
    answer = raw.request(line, id_=None)
    assert answer is not None, "the line got no answer"
    assert answer["error"]["code"] == code, answer
    assert "one JSON-RPC 2.0 message per line" in answer["error"]["message"]
    fine = raw.request(_call(3, "gno_recall", {"query": "tea", "scopes": [BOB]}), id_=3)
    assert fine is not None and fine["result"]["isError"] is False
    assert "refused with JSON-RPC error" in raw.close()


def test_nan_beside_a_lone_surrogate_is_answered_with_the_arguments_code(raw: Raw) -> None:
    """The SDK's parser reads NaN but not a lone surrogate; Python's reads both, so the
    request reaches its handler and is refused with a coded error, not dropped."""
    raw.initialize()
    line = _call(4, "gno_recall", {"query": "tea \ud800", "scopes": [BOB]}).replace(
        '"scopes"', '"maxFacts": NaN, "scopes"'
    )
    answer = raw.request(line, id_=4)
    assert answer is not None, "no answer"
    error = answer["result"]["structuredContent"]["error"]
    assert error["code"] in {"MEMORY_TEXT_INVALID", "MEMORY_BUDGET_INVALID"}, error
    raw.close()
