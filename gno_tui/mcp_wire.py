"""The MCP server's stdio wire: every line read, and every request answered.

The SDK's stdio reader hands the server an exception for a line its JSON parser refuses, and
the server drops that without an answer or a log line. JSON-RPC answers every request, so
`relay` stands between the reader and the server:

- a line Python's parser reads (a lone surrogate escape such as \\ud800, or bytes that are not
  UTF-8, which the wire decodes as lone surrogates, gno_tui/mcp_pipes.py: the SDK's parser
  refuses both; nesting deeper than the SDK parses; NaN or Infinity beside either) is passed
  on as the message it is, and its handler answers with a coded error (MEMORY_TEXT_INVALID for
  a lone surrogate in a tool's arguments or a resource's uri, as the CLI refuses the same
  text: nothing is stored with U+FFFD in its place);
- anything else (not JSON, not a JSON-RPC message, an id no answer could carry) is answered
  here with a JSON-RPC error whose id is null (-32700 parse error, -32600 invalid request),
  and logged.
"""

from __future__ import annotations

import json
import logging
import math
import re
from typing import Any

import anyio.abc
import mcp_types as types
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from engine.facade import MemoryFailure
from gno_tui.mcp_drain import AnswersOwed

log = logging.getLogger("gno_tui.mcp")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600

# The parts of a request that reach a handler as data, which refuses a lone surrogate in them
# (MEMORY_TEXT_INVALID). Anywhere else (method, _meta, a tool's name, a cursor) one is
# replaced by U+FFFD: those parts only route the request, and some are echoed in the answer,
# which could not be written with a lone surrogate in it.
_DATA_PARAMS = ("arguments", "uri")
_SURROGATE = re.compile("[\ud800-\udfff]")


def first_invalid_text(value: Any, where: str = "arguments") -> str | None:
    """Where in `value` (a JSON document) a string is not Unicode text (a lone surrogate,
    which a JSON \\u escape can carry), or None. Keys count as strings too."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return path
        elif isinstance(item, dict):
            for key, child in item.items():
                stack.append((key, f"{path} (a key)"))
                stack.append((child, f"{path}/{printable(key)}"))
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{path}/{index}") for index, child in enumerate(item))
    return None


def printable(value: Any) -> str:
    """A short form of `value` that is safe to log or send back."""
    text = str(value)[:40]
    return text.encode("utf-8", "replace").decode("utf-8") if text else "?"


def text_invalid(where: str) -> MemoryFailure:
    return MemoryFailure(
        "MEMORY_TEXT_INVALID",
        f"`{where}` is not valid Unicode text: it holds bytes that are not UTF-8, or a lone "
        "surrogate (half of a UTF-16 pair, e.g. a JSON \\ud800 escape without its partner). "
        "Send UTF-8 text; in JSON, escape whole characters, never half a surrogate pair.",
    )


def summary(exc: BaseException) -> str:
    """The exception's type and first line, short: a database error's full text can carry SQL
    parameters (other facts' text), which an agent must not see."""
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {first[:160]}" if first else type(exc).__name__


async def relay(
    source: Any,
    sink: anyio.abc.ObjectSendStream[SessionMessage | Exception],
    replies: Any,
    owed: AnswersOwed,
) -> None:
    """Pass the transport's messages on to `sink`; a line the SDK could not parse is read
    again (`reread`), and one that still is no request is answered on `replies`. At the end
    of input, `sink` is closed once every request passed on has been answered."""
    async with sink:
        async for item in source:
            message = item if not isinstance(item, Exception) else reread(item)
            if isinstance(message.message, types.JSONRPCError):
                await replies.send(message)
                continue
            owed.read(message)
            await sink.send(message)
        await owed.all_answered()


def reread(error: Exception) -> SessionMessage:
    """What to do with a line the SDK's parser refused: the request it holds, when Python's
    parser reads one (for its handler to answer), else a JSON-RPC error to send back."""
    line = _unparsed_line(error)
    document: Any = None
    if line is not None:
        try:
            # NaN and Infinity as the SDK's own parser reads them; the argument checks refuse
            # them with the argument's code.
            document = json.loads(line, parse_int=_bounded_int)
        except (ValueError, RecursionError):
            return _refused(PARSE_ERROR, "the line is not JSON", error)
    if not isinstance(document, dict):
        return _refused(INVALID_REQUEST, "the message is not a JSON-RPC request", error)
    if first_invalid_text(document.get("id"), "id") is not None:
        return _refused(
            INVALID_REQUEST,
            "the request's id holds a lone surrogate, which no answer can carry",
            error,
        )
    try:
        message = types.jsonrpc_message_adapter.validate_python(_scrubbed(document), by_name=False)
    except (ValidationError, RecursionError):
        return _refused(INVALID_REQUEST, "the message is not a JSON-RPC request", error)
    params = document.get("params")
    data = {k: params[k] for k in _DATA_PARAMS if k in params} if isinstance(params, dict) else {}
    if first_invalid_text(document, "message") is None:
        log.warning(
            "a %s request (id %s) was read with Python's JSON parser (the SDK's refused it: "
            "nested too deep, or a number too long)",
            printable(document.get("method")),
            printable(document.get("id")),
        )
    else:
        log.warning(
            "a %s request (id %s) holds a lone surrogate or bytes that are not UTF-8: %s",
            printable(document.get("method")),
            printable(document.get("id")),
            "it is answered MEMORY_TEXT_INVALID"
            if first_invalid_text(data) is not None
            else "replaced by U+FFFD where it only routes the request",
        )
    return SessionMessage(message)


def _refused(code: int, reason: str, error: Exception) -> SessionMessage:
    log.warning(
        "a message was refused with JSON-RPC error %d: %s (%s)", code, reason, summary(error)
    )
    hint = (
        "Send one JSON-RPC 2.0 message per line, as UTF-8 JSON; escape whole characters, never "
        "half a surrogate pair."
    )
    return SessionMessage(
        types.JSONRPCError(
            jsonrpc="2.0",
            id=None,
            error=types.ErrorData(code=code, message=f"{reason[0].upper()}{reason[1:]}. {hint}"),
        )
    )


def _scrubbed(document: dict[str, Any]) -> dict[str, Any]:
    params = document.get("params")
    kept = {}
    if isinstance(params, dict):
        kept = {name: params[name] for name in _DATA_PARAMS if name in params}
        params = {**_replace_surrogates(
            {name: value for name, value in params.items() if name not in kept}
        ), **kept}  # fmt: skip
    scrubbed = _replace_surrogates({k: v for k, v in document.items() if k != "params"})
    if "params" in document:
        scrubbed["params"] = params
    return dict(scrubbed)


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):  # json.loads joins a proper pair: a surrogate left is lone
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, dict):
        return {_replace_surrogates(key): _replace_surrogates(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_replace_surrogates(item) for item in value]
    return value


# What the SDK's parser says of a line it could not read: not JSON to it (a lone surrogate
# escape, nesting too deep), or not Unicode (bytes that were not UTF-8, decoded as lone
# surrogates: it cannot even encode the line to parse it).
_UNREAD = ("json_invalid", "string_unicode")


def _unparsed_line(error: Exception) -> str | None:
    if not isinstance(error, ValidationError):
        return None
    for detail in error.errors():
        if detail.get("type") in _UNREAD and isinstance(detail.get("input"), str):
            return str(detail["input"])
    return None


def _bounded_int(digits: str) -> int | float:
    """A JSON integer; one too long for int() (Python refuses thousands of digits) becomes an
    infinity, which every argument check refuses with the argument's own code."""
    if len(digits) <= 4000:
        return int(digits)
    return -math.inf if digits.startswith("-") else math.inf
