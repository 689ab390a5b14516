"""A writer stopped while it holds the home's write lock (kill -STOP, a debugger, a starved
machine) must not stop anyone from reading: recall (CLI, MCP, HTTP, the workbench's façade),
the keyed recall and status answer from the last committed state, at once; a recall's receipt
still counts as stored (it fences); writers get MEMORY_WRITE_LEASE_BUSY.

The writer is a real `gno-tui mcp --enable-write` process, started by this test (so that
waitpid sees it stop) and stopped by the write path's own test hook
(engine/storage/crash_hook.py `stop_here`) at an exact point of a group commit: after the
group's rows are in its open index transaction and its journal entries written, with its fact
file under its temp name (`group-staged`) or in place (`group-placed`), just before the
commit. No test here waits on time; a guard only bounds how long a broken run can hang."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import mcp_types as types
import pg_homes
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from stopped_processes import wait_until_stopped

from benchmarks.common import serving
from engine.facade import RecallRequest, open_service
from engine.storage.crash_hook import STOP_HOOK_ENV

TEA = "Alice drinks green tea every morning"
COFFEE = "Bob drinks black coffee at noon"  # the stopped writer's fact
GUARD_S = 120.0  # only a broken run waits this long


def _line(document: dict[str, Any]) -> bytes:
    return json.dumps(document).encode("utf-8") + b"\n"


class StoppedWriter:
    """A write-enabled MCP server, driven by raw JSON-RPC lines, that stops itself at `point`
    in the middle of its first gno_remember add."""

    def __init__(self, cli: Any, point: str, log: Path) -> None:
        self._log = log.open("wb")
        self.process = subprocess.Popen(
            [cli.script, "--home", str(cli.home), "mcp", "--enable-write"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=cli.env(home=cli.home, **{STOP_HOOK_ENV: point}),
        )
        self.log = log

    def send(self, document: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(_line(document))
        self.process.stdin.flush()

    def answer(self, id_: int) -> dict[str, Any]:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            message = json.loads(raw)
            if message.get("id") == id_:
                return dict(message)
        raise AssertionError(f"no answer to {id_}:\n{self.log.read_text(errors='replace')}")

    def start_write(self, text: str) -> None:
        init = {"protocolVersion": "2025-11-25", "capabilities": {}}
        init["clientInfo"] = {"name": "stopped-writer", "version": "1"}
        self.send({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init})
        assert "result" in self.answer(0)
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        arguments = {"text": text, "scopes": ["s"], "decision": "add"}
        params = {"name": "gno_remember", "arguments": arguments}
        self.send({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params})

    def wait_until_stopped(self) -> None:
        """Until the process has stopped itself at the hook (waitpid WUNTRACED)."""
        wait_until_stopped(
            self.process, GUARD_S, "the writer", lambda: self.log.read_text(errors="replace")
        )

    def resume(self) -> dict[str, Any]:
        """SIGCONT; the stopped write's answer."""
        self.process.send_signal(signal.SIGCONT)
        return self.answer(1)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)  # a stopped process ignores a closed pipe
            assert self.process.stdin is not None
            self.process.stdin.close()
            try:
                self.process.wait(timeout=GUARD_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()


@contextmanager
def stopped_writer(cli: Any, point: str, text: str) -> Iterator[StoppedWriter]:
    writer = StoppedWriter(cli, point, cli.home.parent / f"writer-{point}.log")
    try:
        writer.start_write(text)
        writer.wait_until_stopped()
        yield writer
    finally:
        writer.close()


def mcp_recall(cli: Any, query: str) -> dict[str, Any]:
    """gno_recall through the official MCP client on a fresh propose-only server."""

    async def run() -> dict[str, Any]:
        params = StdioServerParameters(
            command=cli.script, args=["--home", str(cli.home), "mcp"], env=cli.env(home=cli.home)
        )
        info = types.Implementation(name="reader-agent", version="1")
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, client_info=info) as session:
                await session.initialize()
                found = await session.call_tool("gno_recall", {"query": query, "scopes": ["s"]})
        assert not found.is_error, found.structured_content
        assert isinstance(found.structured_content, dict)
        return dict(found.structured_content)

    return anyio.run(run)


def texts(recall: Mapping[str, Any]) -> list[str]:
    return [fact["text"] for fact in recall["facts"]]


def pending_receipts(home: Path) -> list[str]:
    folder = home / ".receipts-pending"
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


@pytest.fixture
def seeded(cli: Any, home: Path) -> Path:
    added = cli("remember", TEA, "--scope", "s", "--add", "--json")
    assert added.returncode == 0, added.stderr
    request = json.dumps({"key": "drinks/alice", "memory": {"content": TEA, "tags": ["tea"]}})
    keyed = cli("memory", "remember", "--request", "-", "--json", stdin=request)
    assert keyed.returncode == 0, keyed.stdout + keyed.stderr
    return home


@pytest.mark.parametrize("point", ["group-staged", "group-placed"])
def test_readers_answer_from_the_committed_state_while_a_writer_is_stopped(
    cli: Any, seeded: Path, point: str
) -> None:
    home = seeded
    token = cli("token", "create", "reader", "--scope", "s", "--json").doc["token"]
    with stopped_writer(cli, point, COFFEE) as writer:
        recall = cli("recall", "drinks", "--scope", "s", "--json")
        assert recall.returncode == 0, recall.stdout + recall.stderr
        assert texts(recall.doc) == [TEA]  # the stopped write is not committed: not shown

        keyed = cli("memory", "recall", "--request", "-", "--json", stdin='{"query": "tea"}')
        assert keyed.returncode == 0, keyed.stdout + keyed.stderr
        assert [item["memory"]["content"] for item in keyed.doc["items"]] == [TEA]

        status = cli("status", "--json")
        assert status.returncode == 0, status.stdout + status.stderr
        assert status.doc["home"] == str(home)

        # The receipt issued while the writer holds the lock is stored all the same: it
        # fences its span (before any lock is asked for).
        saved = home.parent / "recall.json"
        saved.write_text(recall.stdout, encoding="utf-8")
        fenced = cli("remember", TEA, "--scope", "s", "--add", "--receipt", str(saved), "--json")
        assert fenced.error is not None and fenced.error["code"] == "MEMORY_FENCED_REPLAY"

        assert texts(mcp_recall(cli, "drinks")) == [TEA]

        command = [cli.script, "--home", str(home), "serve", "--port", "0"]
        with serving(command, cli.env(home=home), timeout=GUARD_S) as (url, _process, log):
            assert url is not None, "".join(log)
            answer = httpx.post(
                f"{url}/api/memory/recall",
                json={"query": "drinks", "scopes": ["s"]},
                headers={"Authorization": f"Bearer {token}"},
                timeout=GUARD_S,
            )
        assert answer.status_code == 200, answer.text
        assert texts(answer.json()) == [TEA]

        # The workbench reads through the façade, in its own process: as here.
        service = open_service(home=home, model="/nonexistent/gno-tui-test-model")
        try:
            request = RecallRequest(query="drinks", scopes=["s"], caller="me", session="tui")
            assert texts(service.recall_explained(request).result) == [TEA]
            assert service.facts.status_counts()["current"] == 2  # the fact and the key
            issued = {receipt["digest"] for receipt in service.receipts.recent()}
            assert recall.doc["receipt"]["digest"] in issued
        finally:
            service.close()

        if point == "group-placed":  # once is enough: it waits the whole 10 s for the lock
            writing = cli("remember", "Carol drinks water", "--scope", "s", "--add", "--json")
            assert writing.error is not None, writing.stdout + writing.stderr
            assert writing.error["code"] == "MEMORY_WRITE_LEASE_BUSY"

        answered = writer.resume()
    stored = answered["result"]["structuredContent"]
    assert stored["outcome"] == "added" and stored["sync"] == {"status": "completed"}, stored
    after = cli("recall", "drinks", "--scope", "s", "--json")
    assert sorted(texts(after.doc)) == sorted([TEA, COFFEE])
    assert pending_receipts(home) == []  # every receipt that waited is in the index now


def test_a_new_homes_first_writer_stopped_mid_write_leaves_it_readable(
    cli: Any, home: Path
) -> None:
    """The writer opens the new home (schema, collections) and stops in its first write, its
    fact file already in place: no row, no store id drawn, an unfinished write journalled."""
    with stopped_writer(cli, "group-placed", COFFEE) as writer:
        status = cli("status", "--json")
        assert status.returncode == 0, status.stdout + status.stderr
        assert status.doc["mode"] == ("server" if pg_homes.server_mode() else "embedded")

        recall = cli("recall", "drinks", "--scope", "s", "--json")
        assert recall.returncode == 0, recall.stdout + recall.stderr
        assert recall.doc["facts"] == []

        keyed = cli("memory", "recall", "--request", "-", "--json", stdin='{"query": "bob"}')
        assert keyed.returncode == 0, keyed.stdout + keyed.stderr
        assert keyed.doc["items"] == []

        assert mcp_recall(cli, "drinks")["facts"] == []

        answered = writer.resume()
    assert answered["result"]["structuredContent"]["outcome"] == "added"
    assert texts(cli("recall", "drinks", "--scope", "s", "--json").doc) == [COFFEE]


@pytest.mark.embedded_mode
def test_a_new_home_is_readable_while_its_first_writer_is_stopped_making_its_index(
    cli: Any, home: Path
) -> None:
    """The first process on a new home (here a write-enabled MCP server, which opens the store
    as it starts) stops while it holds the write lock and the index has no tables yet. Before,
    status and recall waited 10 s for it and failed (MEMORY_WRITE_LEASE_BUSY, or
    MEMORY_QUERY_FAILED). Now they answer as the store is: empty, from an index built in
    memory; status says why. Continued, the writer makes the home and writes."""
    writer = StoppedWriter(cli, "schema-creating", home.parent / "writer-schema.log")
    try:
        writer.wait_until_stopped()
        status = cli("status", "--json")
        assert status.returncode == 0, status.stdout + status.stderr
        assert "creating this new home" in status.doc["readOnlyReason"]
        recall = cli("recall", "drinks", "--scope", "s", "--json")
        assert recall.returncode == 0, recall.stdout + recall.stderr
        assert recall.doc["facts"] == []
        writer.process.send_signal(signal.SIGCONT)
        writer.start_write(COFFEE)
        answered = writer.answer(1)
    finally:
        writer.close()
    assert answered["result"]["structuredContent"]["outcome"] == "added"
    assert texts(cli("recall", "drinks", "--scope", "s", "--json").doc) == [COFFEE]
    assert "readOnlyReason" not in cli("status", "--json").doc


def test_readers_answer_while_a_single_write_is_stopped_before_its_commit(
    cli: Any, seeded: Path
) -> None:
    """The CLI's own write path (one fact, one transaction, not a group commit), stopped with
    its fact file in place and its row in the open transaction: readers answer from the
    committed state, and the write completes when the writer is continued."""
    log = seeded.parent / "single-writer.log"
    with log.open("wb") as errors:
        command = ["remember", COFFEE, "--scope", "s", "--add", "--json"]
        writer = subprocess.Popen(
            [cli.script, "--home", str(seeded), *command],
            stdout=subprocess.PIPE,
            stderr=errors,
            env=cli.env(home=seeded, **{STOP_HOOK_ENV: "single-indexed"}),
        )
        try:
            _, stopped = os.waitpid(writer.pid, os.WUNTRACED)
            assert os.WIFSTOPPED(stopped), log.read_text(errors="replace")
            recall = cli("recall", "drinks", "--scope", "s", "--json")
            assert recall.returncode == 0, recall.stdout + recall.stderr
            assert texts(recall.doc) == [TEA]
            status = cli("status", "--json")
            assert status.returncode == 0, status.stdout + status.stderr
            assert texts(mcp_recall(cli, "drinks")) == [TEA]
            writer.send_signal(signal.SIGCONT)
            out, _ = writer.communicate(timeout=GUARD_S)
        finally:
            if writer.poll() is None:
                writer.send_signal(signal.SIGCONT)
                writer.kill()
                writer.wait()
    assert writer.returncode == 0, log.read_text(errors="replace")
    written = json.loads(out)
    assert written["outcome"] == "added" and written["sync"] == {"status": "completed"}
    after = cli("recall", "drinks", "--scope", "s", "--json")
    assert sorted(texts(after.doc)) == sorted([TEA, COFFEE])
    assert pending_receipts(seeded) == []
