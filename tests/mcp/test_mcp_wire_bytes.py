"""Text that is not Unicode on the MCP wire is refused, never stored changed.

A JSON-RPC message must be UTF-8 (the MCP specification, "Transports"); the CLI refuses the
same bytes with MEMORY_TEXT_INVALID. On stdio each line is read with its bytes that are not
UTF-8 kept as lone surrogates (gno_tui/mcp_pipes.py), so a request that can still be read is
answered under its own id, with the coded error where a tool's argument holds them, as a lone
surrogate escape (\\ud800) is; a line that cannot be read as JSON at all is the protocol's
parse error (-32700, id null). Over HTTP the body is the whole message: the SDK answers a body
that is not UTF-8, or holds a lone surrogate escape, with the parse error (HTTP 400). Nothing
is stored either way, and no stored text holds U+FFFD."""

from __future__ import annotations

import json
import select
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp_harness import CONSOLE_SCRIPT, fact_files, run_cli, server_env

from benchmarks.common import serving

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-agent", "version": "1"},
    },
}
INITIALIZED = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}'
REFERENCE = "Alice keeps her notes in plain text"

# A bad character as it can reach the wire inside a JSON string: raw bytes that are not UTF-8,
# the UTF-8 encoding of a surrogate (which UTF-8 forbids), and a lone surrogate escape.
BAD = {
    "raw bytes": b"\xff\xfe",
    "an encoded surrogate": b"\xed\xa0\x80",
    "a lone surrogate escape": b"\\ud800",
}


def call_line(id_: int, tool: str, arguments: bytes) -> bytes:
    return (
        b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", "params": {"name": "%s", '
        b'"arguments": %s}}' % (id_, tool.encode(), arguments)
    )


def calls_with(bad: bytes) -> list[tuple[str, bytes]]:
    """A bad character in each kind of argument a tool stores or searches with."""
    return [
        ("gno_remember", b'{"text": "tea %s here", "scopes": ["s"], "decision": "add"}' % bad),
        ("gno_remember", b'{"text": "tea here", "scopes": ["s%s"], "decision": "add"}' % bad),
        ("gno_remember", b'{"text": "tea", "scopes": ["s"], "source": "web%s"}' % bad),
        ("memory_remember", b'{"memory": {"content": "tea %s here"}}' % bad),
        ("memory_remember", b'{"memory": {"content": "tea", "metadata": {"k%s": 1}}}' % bad),
        ("gno_recall", b'{"query": "tea %s", "scopes": ["s"]}' % bad),
    ]


class RawWire:
    """A `gno-tui mcp --enable-write` process spoken to in raw bytes, a line at a time."""

    def __init__(self, home: Path) -> None:
        self.log = home.parent / "wire-stderr.log"
        self._err = self.log.open("wb")
        self.process = subprocess.Popen(
            [str(CONSOLE_SCRIPT), "--home", str(home), "mcp", "--enable-write"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._err,
            env=server_env(home),
        )

    def request(self, line: bytes, id_: int | None) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()
        while True:
            ready, _, _ = select.select([self.process.stdout], [], [], 60)
            assert ready, f"no answer to {line!r}:\n{self.log.read_text(errors='replace')}"
            message = json.loads(self.process.stdout.readline())
            if message.get("id") == id_:
                return dict(message)

    def initialize(self, name: bytes = b"raw-agent") -> None:
        line = json.dumps(INIT).encode().replace(b'"raw-agent"', b'"%s"' % name)
        assert "result" in self.request(line, 0)
        self.process.stdin.write(INITIALIZED + b"\n")  # type: ignore[union-attr]

    def close(self) -> str:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=60)
        self._err.close()
        return self.log.read_text(encoding="utf-8", errors="replace")


@pytest.fixture
def wire(mcp_home: Path) -> Iterator[RawWire]:
    server = RawWire(mcp_home)
    yield server
    if server.process.poll() is None:
        server.close()


def tool_error(answer: dict[str, Any]) -> dict[str, str]:
    result = answer["result"]
    assert result["isError"] is True, result
    return dict(result["structuredContent"]["error"])


def stored_texts(home: Path) -> list[str]:
    return [path.read_text(encoding="utf-8") for path in fact_files(home)]


@pytest.mark.parametrize("bad", BAD.values(), ids=BAD.keys())
def test_text_that_is_not_unicode_is_refused_under_its_own_id(
    wire: RawWire, mcp_home: Path, bad: bytes
) -> None:
    wire.initialize()
    added = wire.request(
        call_line(
            1, "gno_remember", json.dumps({"text": REFERENCE, "scopes": ["s"]}).encode()
        ).replace(b'"scopes"', b'"decision": "add", "scopes"'),
        1,
    )
    assert added["result"]["structuredContent"]["outcome"] == "added"
    for id_, (tool, arguments) in enumerate(calls_with(bad), start=2):
        error = tool_error(wire.request(call_line(id_, tool, arguments), id_))
        assert error["code"] == "MEMORY_TEXT_INVALID", (tool, arguments, error)
        assert "not valid Unicode" in error["message"]
    log = wire.close()
    assert log.count("answered MEMORY_TEXT_INVALID") == len(calls_with(bad))
    texts = stored_texts(mcp_home)
    assert len(texts) == 1 and REFERENCE in texts[0]
    assert not any("\ufffd" in text for text in texts)


def test_a_line_whose_bad_bytes_break_its_json_is_a_parse_error(
    wire: RawWire, mcp_home: Path
) -> None:
    wire.initialize()
    broken = call_line(1, "gno_recall", b'{"query": "tea", "maxFacts": 3\xff, "scopes": ["s"]}')
    answer = wire.request(broken, None)
    assert answer["error"]["code"] == -32700, answer
    fine = wire.request(call_line(2, "gno_recall", b'{"query": "tea", "scopes": ["s"]}'), 2)
    assert fine["result"]["isError"] is False
    wire.close()


def test_a_client_name_with_bad_bytes_is_cleaned_not_replaced(
    wire: RawWire, mcp_home: Path
) -> None:
    wire.initialize(name=b"raw\xff-agent")
    arguments = b'{"text": "Bob keeps a diary", "scopes": ["s"], "decision": "add"}'
    answer = wire.request(call_line(1, "gno_remember", arguments), 1)
    record = answer["result"]["structuredContent"]["record"]
    assert record["caller"] == "mcp:raw-agent"
    wire.close()
    assert not any("\ufffd" in text for text in stored_texts(mcp_home))


def test_a_server_reading_a_file_refuses_the_bytes_too(mcp_home: Path, tmp_path: Path) -> None:
    """stdin a regular file (`gno-tui mcp < requests`): the SDK's own transport reads it."""
    requests = tmp_path / "requests.jsonl"
    lines = [json.dumps(INIT).encode(), INITIALIZED]
    lines.append(call_line(1, "gno_remember", calls_with(BAD["raw bytes"])[0][1]))
    requests.write_bytes(b"\n".join(lines) + b"\n")
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [str(CONSOLE_SCRIPT), "--home", str(mcp_home), "mcp", "--enable-write"],
            stdin=stdin,
            capture_output=True,
            env=server_env(mcp_home),
            timeout=120,
            check=False,
        )
    answers = {m.get("id"): m for m in map(json.loads, done.stdout.splitlines())}
    assert tool_error(answers[1])["code"] == "MEMORY_TEXT_INVALID", done.stderr
    assert stored_texts(mcp_home) == []


def test_over_http_a_body_that_is_not_unicode_is_a_parse_error(mcp_home: Path) -> None:
    token = run_cli(mcp_home, "token", "create", "agent", "--scope", "s", "--write", "--json")
    headers = {
        "Authorization": f"Bearer {token['token']}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
    }
    command = [str(CONSOLE_SCRIPT), "--home", str(mcp_home), "serve", "--port", "0"]
    with serving(command, server_env(mcp_home), timeout=120) as (url, _process, log):
        assert url is not None, "".join(log)
        for name, bad in BAD.items():
            arguments = b'{"text": "tea %s here", "scopes": ["s"], "decision": "add"}' % bad
            body = call_line(1, "gno_remember", arguments)
            answer = httpx.post(f"{url}/mcp", content=body, headers=headers, timeout=60)
            assert answer.status_code == 400, (name, answer.text)
            assert answer.json()["error"]["code"] == -32700, (name, answer.text)
    assert stored_texts(mcp_home) == []
