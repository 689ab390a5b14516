"""Every request read before stdin closed is answered before `gno-tui mcp` exits.

The SDK's dispatcher cancels the handlers still running when its read stream ends: a client
that writes its requests and closes its end (`gno-tui mcp < requests.jsonl`, a shell pipe, an
agent that sends its last call and stops writing) would lose the answers to the calls in
flight, a write among them, acknowledged to no one though it may have been stored. So the
read side stays open until every request passed to the server has had its answer written
(or the client cancelled it, which the protocol leaves unanswered), and only then ends.
"""

from __future__ import annotations

from collections import Counter
from types import TracebackType
from typing import Any, Self

import anyio
import mcp_types as types
from mcp.shared.dispatcher import coerce_request_id
from mcp.shared.message import SessionMessage

RequestId = str | int


class AnswersOwed:
    """The ids of requests passed to the server and not answered yet, as the SDK matches
    them (`"7"` and `7` are one id), counted: an id sent twice is owed twice."""

    def __init__(self) -> None:
        self._owed: Counter[RequestId] = Counter()
        self._all_answered = anyio.Event()
        self._all_answered.set()

    def read(self, message: SessionMessage) -> None:
        """Note a message on its way from the client to the server."""
        inner = message.message
        if isinstance(inner, types.JSONRPCRequest):
            self._owed[coerce_request_id(inner.id)] += 1
            if self._all_answered.is_set():
                self._all_answered = anyio.Event()
        elif isinstance(inner, types.JSONRPCNotification) and inner.method == (
            "notifications/cancelled"
        ):
            params = inner.params or {}
            self._settle(params.get("requestId"))

    def written(self, message: SessionMessage) -> None:
        """Note a message the server wrote to the client."""
        inner = message.message
        if isinstance(inner, types.JSONRPCResponse | types.JSONRPCError):
            self._settle(inner.id)

    def _settle(self, request_id: Any) -> None:
        if isinstance(request_id, str | int):
            key = coerce_request_id(request_id)
            if self._owed[key] > 1:
                self._owed[key] -= 1
            else:
                self._owed.pop(key, None)
        if not self._owed:
            self._all_answered.set()

    async def all_answered(self) -> None:
        """Return once nothing is owed (called after the last request was read)."""
        await self._all_answered.wait()


class NotedWrites:
    """The server's write stream, telling `owed` of each answer as it leaves (written or
    not: a client gone cannot be answered, and must not keep the server waiting)."""

    def __init__(self, stream: Any, owed: AnswersOwed) -> None:
        self._stream = stream
        self._owed = owed

    async def send(self, item: SessionMessage, /) -> None:
        try:
            await self._stream.send(item)
        finally:
            self._owed.written(item)

    async def aclose(self) -> None:
        await self._stream.aclose()

    async def __aenter__(self) -> Self:
        await self._stream.__aenter__()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        return bool(await self._stream.__aexit__(exc_type, exc_val, exc_tb))
