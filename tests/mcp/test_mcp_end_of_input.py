"""A client that sends its requests and closes stdin gets every answer, and every write it was
answered for is stored: `gno-tui mcp < requests.jsonl`, or a pipe closed after the last line.

The SDK cancels the handlers still running when its input ends; the server waits for them
(gno_tui/mcp_drain.py) before it exits."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from mcp_harness import CONSOLE_SCRIPT, fact_files, server_env

SCOPE = "user:alice"
WRITES = 12

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "batch-agent", "version": "1"},
    },
}


def request_lines() -> bytes:
    """The handshake, WRITES distinct facts and a recall, one JSON-RPC message a line."""
    lines: list[dict[str, Any]] = [INIT, {"jsonrpc": "2.0", "method": "notifications/initialized"}]
    for number in range(1, WRITES + 1):
        arguments = {
            "text": f"Batch fact {number}: crate {number * 7} holds {number} kilos of rye",
            "scopes": [SCOPE],
            "decision": "add",
        }
        lines.append(_call(number, "gno_remember", arguments))
    lines.append(_call(WRITES + 1, "gno_recall", {"query": "crate of rye", "scopes": [SCOPE]}))
    return b"".join(json.dumps(line).encode() + b"\n" for line in lines)


def _call(id_: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    params = {"name": tool, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": id_, "method": "tools/call", "params": params}


def assert_all_answered_and_stored(stdout: bytes, stderr: bytes, home: Path) -> None:
    answers = {m.get("id"): m for m in map(json.loads, stdout.splitlines())}
    missing = [i for i in range(WRITES + 2) if i not in answers]
    assert not missing, f"no answer to the requests {missing}:\n{stderr.decode(errors='replace')}"
    for number in range(1, WRITES + 1):
        result = answers[number]["result"]
        assert result["isError"] is False, result
        assert result["structuredContent"]["outcome"] == "added"
    assert len(fact_files(home)) == WRITES


def serve_until_end_of_input(home: Path, **stdin: Any) -> None:
    """`gno-tui mcp --enable-write` fed `stdin` (a file, or `input=` bytes on a pipe it
    closes), run until it exits; every request answered and every write stored."""
    done = subprocess.run(
        [str(CONSOLE_SCRIPT), "--home", str(home), "mcp", "--enable-write"],
        capture_output=True,
        env=server_env(home),
        timeout=120,
        check=False,
        **stdin,
    )
    assert done.returncode == 0, done.stderr
    assert_all_answered_and_stored(done.stdout, done.stderr, home)


def test_requests_read_from_a_file_are_all_answered(mcp_home: Path, tmp_path: Path) -> None:
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(request_lines())
    with requests.open("rb") as stdin:
        serve_until_end_of_input(mcp_home, stdin=stdin)


def test_requests_on_a_pipe_closed_after_the_last_are_all_answered(mcp_home: Path) -> None:
    serve_until_end_of_input(mcp_home, input=request_lines())


def test_a_request_cancelled_by_its_id_as_a_string_does_not_keep_the_server(
    mcp_home: Path,
) -> None:
    """The SDK takes `"12"` for the request 12 and cancels it unanswered; the server counts it
    settled the same way and exits at the end of input (it used to wait for that answer for
    ever). The other requests are answered."""
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": str(WRITES), "reason": "the agent moved on"}}  # fmt: skip
    lines = request_lines().splitlines()
    stdin = b"\n".join([*lines[:-1], json.dumps(cancel).encode(), lines[-1]]) + b"\n"
    done = subprocess.run(
        [str(CONSOLE_SCRIPT), "--home", str(mcp_home), "mcp", "--enable-write"],
        input=stdin,
        capture_output=True,
        env=server_env(mcp_home),
        timeout=120,  # bounds the hang this test is about; the server exits at once
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answers = {m.get("id"): m for m in map(json.loads, done.stdout.splitlines())}
    assert set(range(WRITES)) | {WRITES + 1} <= set(answers), sorted(answers)
