"""The writers of tests/pg/test_server_faults.py: one write through each surface a team uses
(the installed console script, the official MCP client on `gno-tui mcp`, and `gno-tui serve`
on a loopback port with a token), writers that keep writing until told to stop, and the
workbench's change feed waited on in a thread, as the workbench does.

(A module of its own, beside pg_fault_server.py, so that the test module stays readable.)"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from pg_fault_server import (
    CALL_TIMEOUT,
    CONSOLE_SCRIPT,
    CONTROL_TIMEOUT,
    child_env,
    run_cli,
)

from benchmarks.common import serving
from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.retrieval.embeddings import EmbedderStatus

SCOPE = "team:a"
REMEMBER = "/api/memory/remember"
# A writer's pause between two writes: a steady stream, not one that takes both cores (a
# pace, not a wait for anything to happen).
PACE = 0.05


@dataclass
class Outcome:
    """One write's answer: acknowledged (a record id) or refused (a code)."""

    text: str
    record_id: str | None = None
    code: str | None = None
    message: str = ""
    status: int | None = None  # the HTTP status or the CLI's exit code
    retry_after: str | None = None  # the HTTP answer's Retry-After
    after_restart: bool = False


@dataclass
class WriterLog:
    name: str
    outcomes: list[Outcome] = field(default_factory=list)

    def acknowledged(self, *, after_restart: bool | None = None) -> list[Outcome]:
        return [
            o
            for o in self.outcomes
            if o.record_id is not None and after_restart in (None, o.after_restart)
        ]

    def refused(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.record_id is None]


# -- the three surfaces, one write each --------------------------------------------------------


async def cli_remember(home: Path, url: str, text: str) -> Outcome:
    """The installed console script, one process per write."""
    return await asyncio.to_thread(_cli_remember, home, url, text)


def _cli_remember(home: Path, url: str, text: str) -> Outcome:
    answer = run_cli(home, url, "remember", text, "--scope", SCOPE, "--add")
    if answer.code is None:
        assert answer.returncode == 0, (answer.doc, answer.stderr)
        return Outcome(text, record_id=answer.doc["record"]["recordId"], status=0)
    return Outcome(text, code=answer.code, message=answer.message, status=answer.returncode)


@asynccontextmanager
async def mcp_client(home: Path, url: str, errlog: Any) -> AsyncIterator[ClientSession]:
    """The official MCP client on `gno-tui mcp --enable-write`, a process of its own."""
    params = StdioServerParameters(
        command=str(CONSOLE_SCRIPT),
        args=["--home", str(home), "--db", url, "mcp", "--enable-write"],
        env=child_env(),
    )
    info = types.Implementation(name="fault-test", version="1.0")
    async with stdio_client(params, errlog=errlog) as (read, write):
        async with ClientSession(
            read, write, client_info=info, read_timeout_seconds=CALL_TIMEOUT
        ) as session:
            await session.initialize()
            yield session


async def mcp_remember(session: ClientSession, text: str) -> Outcome:
    arguments = {"text": text, "scopes": [SCOPE], "decision": "add"}
    result = await session.call_tool("gno_remember", arguments)
    document = result.structured_content
    assert isinstance(document, dict), result
    if result.is_error:
        error = document["error"]
        return Outcome(text, code=error["code"], message=error["message"])
    return Outcome(text, record_id=document["record"]["recordId"])


async def http_remember(client: httpx.AsyncClient, text: str) -> Outcome:
    request = {"text": text, "scopes": [SCOPE], "decision": "add"}
    response = await client.post(REMEMBER, json=request)
    body = response.json()
    if response.status_code in (200, 201):
        return Outcome(text, record_id=body["record"]["recordId"], status=response.status_code)
    error = body["error"]
    return Outcome(
        text,
        code=error["code"],
        message=error["message"],
        status=response.status_code,
        retry_after=response.headers.get("retry-after"),
    )


def make_token(home: Path, url: str) -> str:
    made = run_cli(home, url, "token", "create", "writer", "--scope", SCOPE, "--write")
    assert made.returncode == 0, (made.doc, made.stderr)
    return str(made.doc["token"])


@asynccontextmanager
async def http_server(
    home: Path, url: str, token: str | None = None
) -> AsyncIterator[tuple[httpx.AsyncClient, Any, list[str]]]:
    """`gno-tui serve` on a loopback port it picks, with a writer's token (made by the CLI
    unless given); yields the client, the server's process and its log lines."""
    token = token or make_token(home, url)
    command = [str(CONSOLE_SCRIPT), "--home", str(home), "--db", url, "serve", "--port", "0"]
    with serving(command, child_env(), timeout=CONTROL_TIMEOUT) as (base, process, log):
        assert base is not None, "gno-tui serve did not start:\n" + "".join(log)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=CALL_TIMEOUT) as c:
            yield c, process, log


# -- the workbench's change feed ---------------------------------------------------------------


class Listener:
    """The engine's change feed waited on in a thread of its own, as the workbench's store
    watcher does (gno_tui/app.py follow_store), keeping every generation it reports."""

    def __init__(self, home: Path, url: str) -> None:
        engine = open_engine(home=home, db_url=url, embedder_status=EmbedderStatus(None, "-"))
        self.service = MemoryService(engine)
        self.feed = self.service.changes()
        self.reported: list[int] = []
        self._seen = threading.Condition()
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()

    def _follow(self) -> None:
        while not self.feed.closed:
            generation = self.feed.wait(5.0)
            if generation is not None:
                with self._seen:
                    self.reported.append(generation)
                    self._seen.notify_all()

    def saw(self, at_least: int) -> bool:
        """Whether the feed reports `at_least` (or later) within the bound."""
        with self._seen:
            return self._seen.wait_for(
                lambda: any(g >= at_least for g in self.reported), CONTROL_TIMEOUT
            )

    def close(self) -> None:
        self.feed.close()
        self._thread.join(CONTROL_TIMEOUT)
        self.service.engine.db.dispose()


# -- writers that keep writing -----------------------------------------------------------------


class Writers:
    """Writers running until `stop`: each outcome is logged, and whoever waits on `progress`
    is woken."""

    def __init__(self) -> None:
        self.logs: dict[str, WriterLog] = {}
        self.progress = asyncio.Condition()
        self.restarted = False
        self._stop = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []

    def start(self, name: str, write: Callable[[str], Awaitable[Outcome]]) -> None:
        self.logs[name] = WriterLog(name)
        self._tasks.append(asyncio.create_task(self._loop(self.logs[name], write)))

    async def _loop(self, log: WriterLog, write: Callable[[str], Awaitable[Outcome]]) -> None:
        index = 0
        while not self._stop.is_set():
            text = f"Note {index} from the {log.name} writer"
            after_restart = self.restarted
            try:
                outcome = await asyncio.wait_for(write(text), CALL_TIMEOUT)
            except TimeoutError:
                outcome = Outcome(text, code="HANG", message=f"no answer in {CALL_TIMEOUT} s")
            except Exception as exc:  # noqa: BLE001 - the client failed: shown, not swallowed
                outcome = Outcome(text, code=f"CLIENT {type(exc).__name__}", message=str(exc))
            outcome.after_restart = after_restart
            log.outcomes.append(outcome)
            index += 1
            async with self.progress:
                self.progress.notify_all()
            await asyncio.sleep(PACE)

    async def until(self, what: str, condition: Callable[[WriterLog], bool]) -> None:
        """Wait (bounded) until `condition` holds for every writer."""

        def every() -> bool:
            return all(condition(log) for log in self.logs.values())

        async with self.progress:
            try:
                await asyncio.wait_for(self.progress.wait_for(every), CONTROL_TIMEOUT)
            except TimeoutError:
                pytest.fail(f"writers never reached: {what}; {self.summary()}")

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)

    def summary(self) -> str:
        return "; ".join(
            f"{log.name}: {len(log.acknowledged())} acknowledged, {len(log.refused())} refused "
            f"({sorted({str(o.code) for o in log.refused()})})"
            for log in self.logs.values()
        )
