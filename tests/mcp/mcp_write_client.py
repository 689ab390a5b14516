"""An MCP client process for test_stress_mcp_clients.py: starts its own `gno-tui --home HOME mcp
--enable-write` over stdio with the official client, prints `ready` once the server answered,
waits for a line on stdin (so that every client starts at once), then sends COUNT gno_remember
adds of distinct texts, IN_FLIGHT at a time, and writes one JSON line per call to OUT.jsonl:
{"text", "isError", "result"} (the structured result, or the tool error).

Run as: python mcp_write_client.py HOME NAME COUNT IN_FLIGHT OUT.jsonl"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
from mcp_harness import mcp_session


async def main(home: str, name: str, count: int, in_flight: int, out: str) -> None:
    lines: list[dict[str, Any]] = []
    with Path(f"{out}.server-stderr").open("w", encoding="utf-8") as errlog:
        # The test's server database, when it runs on PostgreSQL (tests/pg_homes.py).
        database = os.environ.get("GNO_TUI_DB")
        async with mcp_session(
            Path(home), enable_write=True, client_name=name, errlog=errlog, db_url=database
        ) as s:
            await s.list_tools()  # the client validates results against the output schema
            print("ready", flush=True)
            await anyio.to_thread.run_sync(sys.stdin.readline)
            indexes = iter(range(count))

            async def worker() -> None:
                for index in indexes:
                    text = f"Write {index} of client {name}: the {name} ledger line {index}"
                    result = await s.call_tool(
                        "gno_remember",
                        {"text": text, "scopes": ["stress", f"client:{name}"], "decision": "add"},
                    )
                    document = result.structured_content
                    lines.append({"text": text, "isError": result.is_error, "result": document})

            async with anyio.create_task_group() as group:
                for _ in range(in_flight):
                    group.start_soon(worker)
    Path(out).write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")


if __name__ == "__main__":
    home, name, count, in_flight, out = sys.argv[1:6]
    anyio.run(main, home, name, int(count), int(in_flight), out)
