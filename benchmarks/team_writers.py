"""The writer processes of benchmarks/server_team.py: one surface each (the console script,
the official MCP client, the keyed API in process), on the home of one "machine", logging
every outcome as a JSON line the moment it is known.

    python benchmarks/team_writers.py KIND NAME HOME DB WORK OPS PAUSE
    (OPS -1: until WORK/stop; PAUSE "pause": wait halfway for WORK/deleted, else "-")
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CONSOLE = Path(sys.executable).parent / "gno-tui"
CHAINS = 3  # shared chains every mcp writer supersedes
SHARED_KEYS = ("team/plan", "team/owner", "team/deadline")
# The compare-and-swap losing a race: the expected answer to a writer that read a head another
# writer moved first. Everything else a writer is answered with is an error.
LOST_RACES = {"MEMORY_SUPERSEDE_CONFLICT", "MEMORY_REVISION_CONFLICT", "MEMORY_KEY_EXISTS"}


def chain_text(chain: int, version: str) -> str:
    return f"Shared chain {chain} of the team holds version {version} of its note"


def env() -> dict[str, str]:
    """The environment without the variables that would choose another home or database."""
    found = dict(os.environ)
    for variable in ("GNO_TUI_HOME", "GNO_TUI_DB", "GNO_TUI_CALLER", "GNO_TUI_SESSION"):
        found.pop(variable, None)
    return found


# -- a writer process -------------------------------------------------------------------------


class Log:
    """A writer's record, one JSON line per outcome, flushed as it happens (the coordinator
    watches it, and a writer that dies keeps what it logged)."""

    def __init__(self, path: Path) -> None:
        self.file = path.open("a", encoding="utf-8")
        self.count = 0

    def __call__(self, **entry: Any) -> None:
        self.file.write(json.dumps(entry) + "\n")
        self.file.flush()
        self.count += 1


class Pace:
    """When a writer stops: after `ops` operations, else once WORK/stop exists. With `pause`
    (the writers of the home to be deleted, in the count mode), halfway through it says so
    (WORK/NAME.halfway) and waits until the coordinator has deleted its home (WORK/deleted):
    so some of its writes come after the deletion however fast it runs."""

    def __init__(self, name: str, work: Path, ops: int | None, pause: bool) -> None:
        self.name, self.work, self.ops, self.pause = name, work, ops, pause

    def keep_going(self, done: int) -> bool:
        if self.ops is None:
            return not (self.work / "stop").exists()
        if self.pause and done == self.ops // 2:
            (self.work / f"{self.name}.halfway").touch()
            waited = 0.0
            while not (self.work / "deleted").exists():  # the coordinator's message
                if waited > 600:
                    raise SystemExit(f"{self.name}: the home was never deleted")
                time.sleep(0.01)
                waited += 0.01
        return done < self.ops


def _outcome(log: Log, code: str, message: str, op: str) -> None:
    if code in LOST_RACES:
        log(op="lost_race", of=op, code=code)
    else:
        log(op="error", of=op, code=code, message=message[:300])


def _cli(args: list[str], home: Path, db: str, stdin: str | None = None) -> dict[str, Any]:
    done = subprocess.run(
        [str(CONSOLE), "--home", str(home), "--db", db, *args],
        input=stdin,
        capture_output=True,
        text=True,
        env=env(),
    )
    try:
        document = json.loads(done.stdout)
    except ValueError:
        code = f"exit {done.returncode}"
        return {"error": {"code": code, "message": (done.stdout + done.stderr)[-300:]}}
    return document if isinstance(document, dict) else {"error": {"code": "not an object"}}


def run_cli(name: str, home: Path, db: str, pace: Pace, log: Log) -> None:
    index = 0
    while pace.keep_going(index):
        text = f"Team note {index} written by {name} from the command line"
        added = _cli(["remember", text, "--scope", "team", "--add", "--json"], home, db)
        if "error" in added:
            _outcome(log, added["error"]["code"], added["error"].get("message", ""), "add")
        else:
            log(op="add", recordId=added["record"]["recordId"], text=text)
        key = SHARED_KEYS[index % len(SHARED_KEYS)]
        head = _cli(["memory", "get", key, "--json"], home, db)
        if "error" in head:
            _outcome(log, head["error"]["code"], head["error"].get("message", ""), "key")
        else:
            content = f"{key} as {name} set it, step {index}"
            request = {"key": key, "memory": {"content": content}, "if_revision": head["revision"]}
            moved = _cli(["memory", "remember", "--json"], home, db, stdin=json.dumps(request))
            if "error" in moved:
                _outcome(log, moved["error"]["code"], moved["error"].get("message", ""), "key")
            else:
                log(op="key", key=key, revision=moved["revision"], content=content)
        index += 1


async def _mcp(name: str, home: Path, db: str, pace: Pace, log: Log) -> None:
    import mcp_types as types
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=str(CONSOLE), args=["--home", str(home), "--db", db, "mcp", "--enable-write"],
        env=env(),
    )  # fmt: skip
    info = types.Implementation(name=name, version="1.0")
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, client_info=info, read_timeout_seconds=120) as s:
            await s.initialize()
            await s.list_tools()
            index = 0
            while pace.keep_going(index):
                text = f"Team note {index} written by {name} over MCP"
                added = await s.call_tool(
                    "gno_remember", {"text": text, "scopes": ["team"], "decision": "add"}
                )
                _logged(log, added, "add", text=text)
                chain = index % CHAINS
                found = await s.call_tool(
                    "gno_recall", {"query": f"Shared chain {chain} team note", "scopes": ["team"]}
                )
                facts = (found.structured_content or {}).get("facts", [])
                heads = [f for f in facts if f["text"].startswith(f"Shared chain {chain} ")]
                if not heads:
                    log(op="error", of="supersede", code="head not recalled", message=str(facts))
                else:
                    text = chain_text(chain, f"{name}-{index}")
                    moved = await s.call_tool(
                        "gno_remember",
                        {
                            "text": text,
                            "scopes": ["team"],
                            "decision": "supersede",
                            "predecessor": heads[0]["uri"],
                            "predecessorHash": heads[0]["contentHash"],
                        },
                    )
                    _logged(log, moved, "supersede", text=text)
                index += 1


def _logged(log: Log, result: Any, op: str, *, text: str) -> None:
    document = result.structured_content or {}
    if result.is_error or "error" in document:
        error = document.get("error") or {}
        _outcome(log, error.get("code", "tool error"), str(error.get("message", document)), op)
    else:
        log(op=op, recordId=document["record"]["recordId"], text=text)


def run_keyed(name: str, home: Path, db: str, pace: Pace, log: Log) -> None:
    from engine.contract.errors import MemoryFailure
    from engine.facade import open_service

    service = open_service(home=home, db_url=db)
    index = 0
    while pace.keep_going(index):
        own = f"{name}/item-{index}"
        attempts: list[tuple[str, dict[str, Any]]] = [
            (own, {"key": own, "memory": {"content": f"{own} by {name}"}})
        ]
        shared = SHARED_KEYS[index % len(SHARED_KEYS)]
        try:
            revision = service.keyed.get(shared)["revision"]
        except MemoryFailure as failure:
            _outcome(log, failure.code, failure.message, "key")
        else:
            content = f"{shared} as {name} set it, step {index}"
            request = {"key": shared, "memory": {"content": content}, "if_revision": revision}
            attempts.append((shared, request))
        for key, request in attempts:
            try:
                hit = service.keyed.remember(request, caller=f"bench:{name}", session=name)
            except MemoryFailure as failure:
                _outcome(log, failure.code, failure.message, "key")
            else:
                log(
                    op="key",
                    key=key,
                    revision=hit["revision"],
                    content=request["memory"]["content"],
                )
        index += 1
    service.close()


def writer_main(kind: str, name: str, home: Path, db: str, work: Path, pace: Pace) -> None:
    log = Log(work / f"{name}.jsonl")
    if kind == "cli":
        run_cli(name, home, db, pace, log)
    elif kind == "mcp":
        import anyio

        anyio.run(_mcp, name, home, db, pace, log)
    else:
        run_keyed(name, home, db, pace, log)
    log(op="finished")


if __name__ == "__main__":
    kind, name, home, db, work, ops, pause = sys.argv[1:8]
    pace = Pace(name, Path(work), None if ops == "-1" else int(ops), pause == "pause")
    writer_main(kind, name, Path(home), db, Path(work), pace)
