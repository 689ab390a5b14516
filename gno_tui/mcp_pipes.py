"""The stdio wire of `gno-tui mcp` read and written by the event loop itself when stdin and
stdout are pipes or sockets (how every MCP client starts a server).

The SDK's stdio transport reads each line and writes and flushes each answer through a worker
thread: three thread hand-offs per call, each waking the event loop through its self-pipe.
Measured on this machine, that was about a fifth of the server's CPU per write (docs/mcp.md,
"Throughput"); on two cores shared by four agents' clients and servers, CPU is what bounds
the writes per second. Here the loop watches the two descriptors directly (asyncio's pipe
transports): a line is parsed as soon as it arrives, an answer leaves without a thread.

The SDK still frames and parses the messages: these adapters are handed to its
`stdio_server` as the explicit streams it accepts. As the SDK does, fd 0 and fd 1 point at
the null device and at stderr while the server runs, so stray output from a library never
corrupts the protocol, and both are restored on exit.

A terminal, a regular file or anything else that asyncio cannot watch is served by the SDK's
own transport, with stdin read as below.

Either way a line's bytes that are not UTF-8 are decoded as lone surrogates (Python's
`surrogateescape`), never replaced by U+FFFD as the SDK's transport does: a tool's argument
holding them is then refused with MEMORY_TEXT_INVALID (gno_tui/mcp_wire.py), as the CLI
refuses the same bytes, instead of being stored with its text silently changed.
"""

from __future__ import annotations

import asyncio
import fcntl
import io
import logging
import os
import stat
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
from mcp.server.stdio import stdio_server

# A JSON-RPC line may carry a long text (an import, a fact of several pages): asyncio's
# default of 64 KiB per line would refuse it, the SDK's transport has no such bound.
_LINE_LIMIT = 64 * 1024 * 1024

log = logging.getLogger("gno_tui.mcp")


def _watchable(fd: int) -> bool:
    """A pipe or a socket: what asyncio's pipe transports serve. A terminal is left to the
    SDK, because watching it would leave the terminal non-blocking for the shell after us."""
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _backed_by(stream: Any, fd: int) -> bool:
    try:
        return bool(stream.buffer.fileno() == fd)
    except (AttributeError, OSError, ValueError):
        return False


# How the wire's bytes become text: the SDK's transport uses "replace", which would turn bytes
# that are not UTF-8 into U+FFFD and let a tool store that text as if it had been sent.
WIRE_ERRORS = "surrogateescape"


class PipeLines:
    """Lines of the wire, decoded as UTF-8 with bytes that are not kept as lone surrogates."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> PipeLines:
        return self

    async def __anext__(self) -> str:
        try:
            line = await self._reader.readline()
        except ValueError:
            # A line over the limit: the rest of the stream cannot be framed again.
            log.error(
                "a request line over %d MiB: the session ends (nothing of it was run)",
                _LINE_LIMIT // (1024 * 1024),
            )
            raise StopAsyncIteration from None
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors=WIRE_ERRORS)


class PipeWriter:
    """Answers onto the wire; `flush` waits only while the client is not reading."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        if self._writer.is_closing():
            raise anyio.ClosedResourceError
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        try:
            await self._writer.drain()
        except ConnectionError:  # the client closed its end: the session is over
            raise anyio.ClosedResourceError from None


class _UnownedText(io.TextIOWrapper):
    """A text layer over stdin that never closes the binary stream beneath it (it is not
    ours to close: it may be sys.stdin's own buffer)."""

    def close(self) -> None:
        with suppress(ValueError):
            self.detach()


@asynccontextmanager
async def _stdin_lines() -> AsyncIterator[Any]:
    """stdin for the SDK's own transport, read as the SDK reads it (fd 0 pointed at the null
    device while the server runs, the wire on a private descriptor) but decoded with
    WIRE_ERRORS."""
    wire: int | None = None
    binary: Any = sys.stdin.buffer
    if sys.platform != "win32" and _backed_by(sys.stdin, 0):
        wire = _divert(0, os.O_RDONLY)
        binary = os.fdopen(wire, "rb", closefd=False)
    try:
        yield anyio.wrap_file(_UnownedText(binary, encoding="utf-8", errors=WIRE_ERRORS))
    finally:
        if wire is not None:  # never closed: a worker thread may still block on a read of it
            with suppress(OSError):
                os.dup2(wire, 0)


def _divert(fd: int, mode: int) -> int:
    """Keep the wire on a private descriptor and point `fd` elsewhere; the private one."""
    wire = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        target = os.open(os.devnull, mode) if fd == 0 else os.dup(2)
    except OSError:
        target = os.open(os.devnull, mode)
    try:
        os.dup2(target, fd)
    finally:
        os.close(target)
    return wire


@asynccontextmanager
async def served_stdio() -> AsyncIterator[tuple[Any, Any]]:
    """The (read, write) streams of the SDK's stdio transport, over loop-watched pipes where
    stdin and stdout allow it."""
    usable = (
        sys.platform != "win32"
        and _watchable(0)
        and _watchable(1)
        and _backed_by(sys.stdin, 0)
        and _backed_by(sys.stdout, 1)
    )
    if not usable:
        async with _stdin_lines() as lines, stdio_server(stdin=lines) as streams:
            yield streams
        return
    sys.stdout.flush()
    wire_in = _divert(0, os.O_RDONLY)
    wire_out = _divert(1, os.O_WRONLY)
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=_LINE_LIMIT)
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(wire_in, "rb", buffering=0)
    )
    write_transport, write_protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(wire_out, "wb", buffering=0)
    )
    writer = asyncio.StreamWriter(write_transport, write_protocol, None, loop)
    try:
        async with stdio_server(PipeLines(reader), PipeWriter(writer)) as streams:  # type: ignore[arg-type]
            yield streams
    finally:
        with suppress(OSError):
            os.dup2(wire_in, 0)
        with suppress(OSError):
            os.dup2(wire_out, 1)
        read_transport.close()
        write_transport.close()
