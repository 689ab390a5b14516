"""The processes of benchmarks/soak.py: one surface each, on one store, logging every outcome
as a JSON line the moment it is known (a SIGKILLed process keeps what it logged).

    python benchmarks/soak_writers.py KIND NAME WORK HOME RATE

KIND is one of:

- `cli`: the installed console script, a process per call: adds (`remember --add`),
  supersedes of a shared chain's head (`recall`, then `remember --supersede`), moves of a
  shared key (`memory get`, then `memory remember` with if_revision);
- `mcp`: the official MCP client over stdio to `gno-tui mcp --enable-write`, two calls in
  flight: adds, chain supersedes (`gno_recall` then `gno_remember`), key moves;
- `http`: httpx to `gno-tui serve` (its address and tokens in WORK/http.json, rewritten by
  the coordinator at each restart): adds and chain supersedes with a token that writes, and
  writes held for review with a propose-only token (the person's work);
- `reader`: the façade in one long-lived process, recalls over every scope;
- `person`: the façade in one long-lived process: accepts or rejects the held proposals
  (`curation.decide`) and supersedes chain heads, as a person in the workbench would;
- `fresh-reader`: run once the others have stopped: a reader opened on the store as it ends,
  FRESH_RECALLS recalls, then its memory (VmRSS) logged: what the long-lived reader is
  compared with.

An acknowledged write is logged as {"op": "add" | "supersede" | "accept", "recordId",
"hash", "text"[, "predecessor"]} or {"op": "key", "key", "revision", "content"}; a lost
compare-and-swap as {"op": "lost_race"}; anything else as {"op": "error", "code"}. The
process runs until WORK/stop exists; RATE (operations a second, 0: as fast as it can)
paces it. The database comes from $GNO_TUI_DB (the server mode) or the home."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

CONSOLE = Path(sys.executable).parent / "gno-tui"
CHAINS = ("chain:c0", "chain:c1", "chain:c2", "chain:c3")
KEYS = ("soak/k0", "soak/k1", "soak/k2")
LOST_RACES = {"MEMORY_SUPERSEDE_CONFLICT", "MEMORY_REVISION_CONFLICT", "MEMORY_KEY_EXISTS"}
LETTERS = "abcdefghijklmnopqrstuvwxyz"


class Log:
    def __init__(self, path: Path) -> None:
        self.file = path.open("a", encoding="utf-8")

    def __call__(self, **entry: Any) -> None:
        entry["t"] = round(time.time(), 3)
        self.file.write(json.dumps(entry) + "\n")
        self.file.flush()

    def fact(self, op: str, record: dict[str, Any], predecessor: str | None = None) -> None:
        entry = {"recordId": record["recordId"], "hash": record["contentHash"]}
        if predecessor:
            entry["predecessor"] = predecessor
        self(op=op, text=record["text"], **entry)

    def failed(self, code: str, message: str, of: str) -> None:
        if code in LOST_RACES:
            self(op="lost_race", of=of, code=code)
        else:
            self(op="error", of=of, code=code, message=message[:300])


class Pace:
    """Until WORK/stop exists; at most `rate` operations a second (0: no limit)."""

    def __init__(self, work: Path, rate: float) -> None:
        self.stop = work / "stop"
        self.gap = 1.0 / rate if rate > 0 else 0.0
        self.next = time.monotonic()

    def going(self) -> bool:
        if self.gap:
            self.next += self.gap
            delay = self.next - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                self.next = time.monotonic()  # behind: no burst to catch up
        return not self.stop.exists()


def words(rng: random.Random, count: int) -> str:
    return " ".join(
        "".join(rng.choice(LETTERS) for _ in range(rng.randint(4, 9))) for _ in range(count)
    )


def record_id(uri: str) -> str:
    return uri.rsplit("/", 1)[-1].removesuffix(".md")


# -- the console script -----------------------------------------------------------------------


def _cli(home: Path, *args: str, stdin: str | None = None) -> dict[str, Any]:
    done = subprocess.run(
        [str(CONSOLE), "--home", str(home), *args, "--json"],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
    )
    try:
        document = json.loads(done.stdout)
    except ValueError:
        message = (done.stdout + done.stderr)[-300:]
        return {"error": {"code": f"exit {done.returncode}", "message": message}}
    return document if isinstance(document, dict) else {"error": {"code": "not an object"}}


def run_cli(name: str, home: Path, pace: Pace, log: Log, rng: random.Random) -> None:
    index = 0
    while pace.going():
        index += 1
        text = f"soak {name} note {index}: {words(rng, 5)}"
        added = _cli(
            home, "remember", text, "--scope", "soak", "--scope", f"writer:{name}", "--add"
        )
        _logged(log, added, "add")
        if index % 3 == 0:
            chain = rng.choice(CHAINS)
            found = _cli(home, "recall", "chain head", "--scope", chain, "--max-facts", "1")
            facts = found.get("facts") or []
            if "error" in found or not facts:
                log(op="error", of="recall", code=_code(found), message=str(found)[:300])
            else:
                head = facts[0]
                moved = _cli(
                    home,
                    "remember",
                    f"{chain} head by {name} {index}: {words(rng, 3)}",
                    "--supersede",
                    head["uri"],
                    "--predecessor-hash",
                    head["contentHash"],
                    "--scope",
                    chain,
                )
                _logged(log, moved, "supersede", record_id(head["uri"]))
        if index % 5 == 0:
            key = rng.choice(KEYS)
            got = _cli(home, "memory", "get", key)
            if "error" in got:
                log.failed(_code(got), str(got)[:300], "key")
                continue
            content = f"{key} set by {name} {index}"
            request = {
                "key": key,
                "if_revision": got["revision"],
                "memory": {"content": content, "tags": ["soak-key"]},
            }
            moved = _cli(home, "memory", "remember", stdin=json.dumps(request))
            if "error" in moved:
                log.failed(_code(moved), moved["error"].get("message", ""), "key")
            else:
                log(op="key", key=key, revision=moved["revision"], content=content)


def _code(document: dict[str, Any]) -> str:
    error = document.get("error")
    return str(error.get("code")) if isinstance(error, dict) else "no result"


def _logged(log: Log, document: dict[str, Any], op: str, predecessor: str | None = None) -> None:
    if "error" in document:
        log.failed(_code(document), document["error"].get("message", ""), op)
    elif document.get("outcome") in ("added", "superseded") and document.get("sync") == {
        "status": "completed"
    }:
        log.fact(op, document["record"], predecessor)
    else:
        log(op="error", of=op, code=f"outcome {document.get('outcome')}", message="")


# -- MCP over stdio ---------------------------------------------------------------------------


async def _mcp(name: str, home: Path, work: Path, pace: Pace, log: Log) -> None:
    import anyio
    import mcp_types as types
    from mcp import ClientSession, StdioServerParameters, stdio_client

    pidfile = work / f"{name}.server.pid"
    params = StdioServerParameters(
        command="/bin/sh",  # its pid, for the coordinator's kills and memory samples
        args=[
            "-c",
            'echo $$ > "$0"; exec "$@"',
            str(pidfile),
            str(CONSOLE),
            "--home",
            str(home),
            "mcp",
            "--enable-write",
        ],
        env=dict(os.environ),
    )
    info = types.Implementation(name=name, version="1.0")
    async with stdio_client(params, errlog=sys.stderr) as (read, write):
        async with ClientSession(read, write, client_info=info, read_timeout_seconds=120) as s:
            await s.initialize()

            async def worker(number: int) -> None:
                rng = random.Random(f"{name}:{number}:{os.getpid()}")
                index = 0
                while await anyio.to_thread.run_sync(pace.going):
                    index += 1
                    await _mcp_call(s, rng, f"{name}-{number}", index, log)

            async with anyio.create_task_group() as group:
                for number in range(2):
                    group.start_soon(worker, number)


async def _mcp_call(s: Any, rng: random.Random, name: str, index: int, log: Log) -> None:
    if index % 3:
        text = f"soak {name} note {index}: {words(rng, 5)}"
        result = await s.call_tool(
            "gno_remember", {"text": text, "decision": "add", "scopes": ["soak", "writer:mcp"]}
        )
        _tool_logged(log, result, "add")
    elif index % 2:
        chain = rng.choice(CHAINS)
        found = await s.call_tool(
            "gno_recall", {"query": "chain head", "scopes": [chain], "maxFacts": 1}
        )
        facts = (found.structured_content or {}).get("facts") if not found.is_error else None
        if not facts:
            log(op="error", of="recall", code="no head", message=str(found.structured_content))
            return
        arguments = {
            "text": f"{chain} head by {name} {index}: {words(rng, 3)}",
            "scopes": [chain],
            "decision": "supersede",
            "predecessor": facts[0]["uri"],
            "predecessorHash": facts[0]["contentHash"],
        }
        result = await s.call_tool("gno_remember", arguments)
        _tool_logged(log, result, "supersede", record_id(facts[0]["uri"]))
    else:
        key = rng.choice(KEYS)
        found = await s.call_tool("memory_recall", {"tag": "soak-key", "limit": 20})
        items = (found.structured_content or {}).get("items") or []
        heads = [item for item in items if item["key"] == key]
        if not heads:
            log(op="error", of="key", code="no head", message=str(found.structured_content))
            return
        content = f"{key} set by {name} {index}"
        request = {
            "key": key,
            "if_revision": heads[0]["revision"],
            "memory": {"content": content, "tags": ["soak-key"]},
        }
        result = await s.call_tool("memory_remember", request)
        document = result.structured_content or {}
        if result.is_error or "error" in document:
            error = document.get("error") or {}
            log.failed(str(error.get("code")), str(error.get("message")), "key")
        else:
            log(op="key", key=key, revision=document["revision"], content=content)


def _tool_logged(log: Log, result: Any, op: str, predecessor: str | None = None) -> None:
    document = result.structured_content or {}
    if result.is_error and "error" not in document:
        document = {"error": {"code": "tool error", "message": str(result.content)[:300]}}
    _logged(log, document, op, predecessor)


# -- HTTP -------------------------------------------------------------------------------------


def run_http(name: str, work: Path, pace: Pace, log: Log, rng: random.Random) -> None:
    import httpx

    index = 0
    while pace.going():
        index += 1
        try:
            where = json.loads((work / "http.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            log(op="error", of="connect", code="no server yet", message="")
            continue
        headers = {"Authorization": f"Bearer {where['writer']}"}
        try:
            with httpx.Client(base_url=where["url"], headers=headers, timeout=60) as client:
                _http_ops(client, where, name, index, log, rng)
        except httpx.TransportError as exc:  # the server was killed: not acknowledged
            log(op="error", of="http", code="unreachable", message=str(exc)[:200])


def _http_ops(
    client: Any, where: dict[str, Any], name: str, index: int, log: Log, rng: random.Random
) -> None:
    text = f"soak {name} note {index}: {words(rng, 5)}"
    reply = client.post(
        "/api/memory/remember",
        json={"text": text, "decision": "add", "scopes": ["soak", "writer:http"]},
    )
    _logged(log, reply.json(), "add")
    if index % 2 == 0:  # a write a person decides: held by the propose-only token
        held = client.post(
            "/api/memory/remember",
            json={
                "text": f"soak proposal {name} {index}: {words(rng, 4)}",
                "decision": "add",
                "scopes": ["soak"],
            },
            headers={"Authorization": f"Bearer {where['proposer']}"},
        ).json()
        if held.get("outcome") == "candidates":
            log(op="held")
        else:
            log.failed(_code(held), str(held)[:300], "held")
    if index % 3 == 0:
        chain = rng.choice(CHAINS)
        found = client.post(
            "/api/memory/recall", json={"query": "chain head", "scopes": [chain], "maxFacts": 1}
        ).json()
        facts = found.get("facts") or []
        if not facts:
            log(op="error", of="recall", code=_code(found), message=str(found)[:300])
            return
        body = {
            "text": f"{chain} head by {name} {index}: {words(rng, 3)}",
            "scopes": [chain],
            "decision": "supersede",
            "predecessorUri": facts[0]["uri"],
            "predecessorHash": facts[0]["contentHash"],
        }
        reply = client.post("/api/memory/remember", json=body)
        _logged(log, reply.json(), "supersede", record_id(facts[0]["uri"]))


# -- the façade: a reader and a person --------------------------------------------------------


def run_reader(home: Path, pace: Pace, log: Log, rng: random.Random) -> None:
    from engine.facade import MemoryFailure, RecallRequest, open_service

    service = open_service(home=home)
    scopes = [["soak"], *([chain] for chain in CHAINS), ["writer:cli", "writer:mcp"]]
    done = 0
    while pace.going():
        try:
            result = service.recall(
                RecallRequest(
                    query=words(rng, 2),
                    scopes=rng.choice(scopes),
                    caller="soak:reader",
                    session="reader",
                )
            )
        except MemoryFailure as failure:
            log(op="error", of="recall", code=failure.code, message=failure.message[:300])
            continue
        done += 1
        if done % 50 == 0:
            log(op="recalls", count=50, facts=len(result["facts"]))
    service.close()


FRESH_RECALLS = 300


def run_fresh_reader(home: Path, log: Log, rng: random.Random) -> None:
    from engine.facade import RecallRequest, open_service

    service = open_service(home=home)
    scopes = [["soak"], *([chain] for chain in CHAINS), ["writer:cli", "writer:mcp"]]
    for _ in range(FRESH_RECALLS):
        service.recall(
            RecallRequest(query=words(rng, 2), scopes=rng.choice(scopes), caller="soak:fresh",
                          session="fresh")
        )  # fmt: skip
    status = Path("/proc/self/status").read_text(encoding="ascii").splitlines()
    rss = next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:"))
    log(op="rss", mib=round(rss, 1), recalls=FRESH_RECALLS)
    service.close()


def run_person(home: Path, pace: Pace, log: Log, rng: random.Random) -> None:
    from engine.facade import Decision, MemoryFailure, RecallRequest, RememberRequest, open_service

    service = open_service(home=home)
    index = 0
    while pace.going():
        index += 1
        try:
            pending = service.curation.proposals()[:3]
            for proposal in pending:
                if rng.random() < 0.6:
                    result = service.curation.decide(
                        Decision(proposal["id"], "add", actor="person:soak")
                    )
                    _logged(log, result, "accept")
                else:
                    service.curation.decide(
                        Decision(proposal["id"], "reject", actor="person:soak", reason="no")
                    )
                    log(op="reject")
            if index % 4 == 0:
                chain = rng.choice(CHAINS)
                found = service.recall(
                    RecallRequest(
                        query="chain head",
                        scopes=[chain],
                        max_facts=1,
                        caller="person:soak",
                        session="p",
                    )
                )
                head = found["facts"][0]
                result = service.remember(
                    RememberRequest(
                        text=f"{chain} head by the person {index}",
                        scopes=None,
                        decision="supersede",
                        predecessor=head["uri"],
                        predecessor_hash=head["contentHash"],
                        caller="person:soak",
                        session="p",
                    )
                )
                _logged(log, result, "supersede", head["recordId"])
        except MemoryFailure as failure:
            log.failed(failure.code, failure.message, "person")
    service.close()


def main() -> None:
    kind, name, work_arg, home_arg, rate = sys.argv[1:6]
    work, home = Path(work_arg), Path(home_arg)
    log, pace = Log(work / f"{name}.jsonl"), Pace(work, float(rate))
    log(op="started", pid=os.getpid())
    rng = random.Random(f"{name}:{os.getpid()}")
    if kind == "cli":
        run_cli(name, home, pace, log, rng)
    elif kind == "mcp":
        import anyio

        anyio.run(_mcp, name, home, work, pace, log)
    elif kind == "http":
        run_http(name, work, pace, log, rng)
    elif kind == "reader":
        run_reader(home, pace, log, rng)
    elif kind == "fresh-reader":
        run_fresh_reader(home, log, rng)
    else:
        run_person(home, pace, log, rng)
    log(op="finished")


if __name__ == "__main__":
    main()
