"""An MCP writer for test_crash_kill.py: the official MCP client driving a
`gno-tui --home HOME mcp --enable-write` server over stdio, with several calls in flight, until
the test SIGKILLs the server and this process.

Run as: python crash_mcp_writer.py GNO_TUI HOME SEED NAME COUNT PIDFILE

The server is started through `sh -c 'echo $$ > PIDFILE; exec gno-tui ...'`, so that its pid
(the SDK starts it in a session of its own, out of this process's group) can be reported to the
test, which kills it by that pid. Each call is one of: gno_remember add; gno_recall of a
chain's head, then gno_remember supersede of it; memory_recall of a key's head, then
memory_remember with if_revision (the keyed API's update). The chains and keys are shared with
the other writers of the test.

Events, one JSON line each, flushed: {"event": "ready", "server_pid": N}; {"event": "ack",
"kind": "gno"|"keyed", "result": ...} for each tool result received that is an added or
superseded fact, or a keyed hit; {"event": "refused", "code": CODE} for a conflict;
{"event": "unexpected", ...} for anything else; {"event": "done"}."""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client

CHAINS = ("chain:c0", "chain:c1", "chain:c2", "chain:c3")
KEYS = ("k0", "k1", "k2", "k3")
IN_FLIGHT = 3
CONFLICTS = ("MEMORY_SUPERSEDE_CONFLICT", "MEMORY_REVISION_CONFLICT", "MEMORY_WRITE_LEASE_BUSY")
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def words(rng: random.Random, count: int) -> str:
    return " ".join(
        "".join(rng.choice(LETTERS) for _ in range(rng.randint(4, 9))) for _ in range(count)
    )


def outcome(tool: str, result: types.CallToolResult) -> None:
    document = result.structured_content
    if not result.is_error and isinstance(document, dict):
        if tool == "memory_remember":
            emit({"event": "ack", "kind": "keyed", "result": document})
            return
        if document.get("outcome") in ("added", "superseded") and document.get("sync") == {
            "status": "completed"
        }:
            emit({"event": "ack", "kind": "gno", "result": document})
            return
    code = (document or {}).get("error", {}).get("code") if isinstance(document, dict) else None
    if result.is_error and code in CONFLICTS:
        emit({"event": "refused", "code": code})
        return
    emit({"event": "unexpected", "tool": tool, "is_error": result.is_error, "doc": document})


async def one_call(session: ClientSession, rng: random.Random, name: str, index: int) -> None:
    choice = rng.random()
    if choice < 0.5:
        arguments = {
            "text": f"{name} note {index}: {words(rng, 6)}",
            "scopes": ["crash", f"writer:{name}"],
            "decision": "add",
        }
        outcome("gno_remember", await session.call_tool("gno_remember", arguments))
    elif choice < 0.75:
        chain = rng.choice(CHAINS)
        found = await session.call_tool(
            "gno_recall", {"query": "ledger", "scopes": [chain], "maxFacts": 8}
        )
        facts = (found.structured_content or {}).get("facts") if not found.is_error else None
        if not facts:
            emit({"event": "unexpected", "tool": "gno_recall", "doc": found.structured_content})
            return
        arguments = {
            "text": f"{chain} ledger {name} {index}: {words(rng, 6)}",
            "scopes": ["crash", chain],
            "decision": "supersede",
            "predecessor": facts[0]["uri"],
            "predecessorHash": facts[0]["contentHash"],
        }
        outcome("gno_remember", await session.call_tool("gno_remember", arguments))
    else:
        key = rng.choice(KEYS)
        found = await session.call_tool("memory_recall", {"tag": f"crashkey-{key}", "limit": 5})
        items = (found.structured_content or {}).get("items") if not found.is_error else None
        if not items:
            emit({"event": "unexpected", "tool": "memory_recall", "doc": found.structured_content})
            return
        request = {
            "key": f"crash/{key}",
            "if_revision": items[0]["revision"],
            "memory": {
                "content": f"{key} ledger {name} {index}: {words(rng, 6)}",
                "tags": [f"crashkey-{key}"],
            },
        }
        outcome("memory_remember", await session.call_tool("memory_remember", request))


async def drive(script: str, home: str, seed: str, name: str, count: int, pidfile: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GNO_TUI_")}
    env["GNO_TUI_MODEL"] = "/nonexistent/gno-tui-test-model"
    params = StdioServerParameters(
        command="/bin/sh",
        args=[
            *("-c", 'echo $$ > "$0"; exec "$@"', pidfile),
            *(script, "--home", home, "mcp", "--enable-write"),
        ],
        env=env,
    )
    info = types.Implementation(name=name, version="1.0")
    async with stdio_client(params, errlog=sys.stderr) as (read, write):
        async with ClientSession(read, write, client_info=info, read_timeout_seconds=60) as session:
            await session.initialize()
            emit({"event": "ready", "server_pid": int(Path(pidfile).read_text().strip())})
            indexes = iter(range(count))

            async def worker(number: int) -> None:
                rng = random.Random(f"{seed}:{name}:{number}")
                for index in indexes:
                    await one_call(session, rng, name, index)

            async with anyio.create_task_group() as group:
                for number in range(IN_FLIGHT):
                    group.start_soon(worker, number)
    emit({"event": "done"})


def main() -> int:
    script, home, seed, name, count, pidfile = sys.argv[1:7]
    anyio.run(drive, script, home, seed, name, int(count), pidfile)
    return 0


if __name__ == "__main__":
    sys.exit(main())
