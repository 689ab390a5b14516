"""Who an MCP request is and what it may reach: the caller from the client's name (cleaned,
fixed per connection), the server instance's session id, and the scopes a server or a token
binds (gno_tui/mcp_server.py serves stdio; gno_tui/http/mcp_http.py the same tools over HTTP)."""

from __future__ import annotations

import re
import unicodedata
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext

from engine.facade import MemoryFailure, normalize_scopes

CLIENT_INFO_META_KEY = types.CLIENT_INFO_META_KEY

UNKNOWN_CLIENT = "mcp:unknown"
MAX_CLIENT_NAME = 64  # characters of the client's name kept in the caller
# ANSI/VT escape sequences: CSI (ESC [ ... final byte), OSC (ESC ] ... BEL or ESC \), and the
# two-character ones (ESC + one of @ to _).
_ESCAPES = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]?|\][^\x07\x1b]*(?:\x07|\x1b\\)?|[@-_])")


def new_session_id() -> str:
    """One id per server instance: every fact and receipt this server writes carries it."""
    return "mcp-" + uuid.uuid4().hex[:12]


def clean_client_name(name: Any) -> str:
    """A client's name as a caller may carry it: escape sequences and every control, format,
    surrogate, private-use or unassigned character removed, and U+FFFD (what the wire makes of
    bytes that are not UTF-8 where they only route a request, gno_tui/mcp_wire.py), whitespace
    collapsed, NFC, at most MAX_CLIENT_NAME characters ("" when nothing is left)."""
    if not isinstance(name, str):
        return ""
    text = _ESCAPES.sub("", name[: MAX_CLIENT_NAME * 64])  # bound the work before cleaning
    kept = "".join(
        " " if ch.isspace() else ch
        for ch in text
        if ch.isspace() or (ch != "\ufffd" and not unicodedata.category(ch).startswith("C"))
    )
    return " ".join(unicodedata.normalize("NFC", kept).split())[:MAX_CLIENT_NAME].rstrip()


def caller_for_name(name: Any) -> str:
    cleaned = clean_client_name(name)
    return f"mcp:{cleaned}" if cleaned else UNKNOWN_CLIENT


def handshake_name(params: Any) -> Any:
    """clientInfo.name of an initialize request's raw params."""
    info = params.get("clientInfo") if isinstance(params, dict) else None
    return info.get("name") if isinstance(info, dict) else None


def session_client_name(ctx: ServerRequestContext[Any, Any]) -> Any:
    """The client's name as the request's connection holds it (the handshake's, or on the
    2026 protocol the one built from the request's envelope)."""
    try:
        params = ctx.session.client_params
    except Exception:  # noqa: BLE001 - no session on some transports
        return None
    return params.client_info.name if params is not None and params.client_info else None


def envelope_name(ctx: ServerRequestContext[Any, Any]) -> Any:
    """The client's name of a 2026-07-28 request: its connection's, else the envelope's
    clientInfo itself (client info without capabilities builds no client_params)."""
    name = session_client_name(ctx)
    if name:
        return name
    info = dict(ctx.meta).get(CLIENT_INFO_META_KEY) if ctx.meta is not None else None
    return info.get("name") if isinstance(info, dict) else None


def bind_scopes(scopes: Iterable[str] | None) -> frozenset[str] | None:
    """The normalised scopes of --allow-scope (any number, each in the scope grammar, else
    MEMORY_SCOPES_INVALID); None when none were given: every scope is served."""
    given = list(scopes or [])
    if not given:
        return None
    bound: set[str] = set()
    for scope in given:
        bound.update(normalize_scopes([scope]))
    return frozenset(bound)


@dataclass(frozen=True)
class McpAccess:
    """Who a request is and what it may reach: fixed per stdio server, per token over HTTP."""

    caller: str
    allowed_scopes: frozenset[str] | None  # None: every scope
    enable_write: bool
    origin: str = "mcp"  # as a held proposal records the surface
    egress: str = "local_only"  # the ceiling every recall gets at least (a token's)


def check_bound_scopes(tool: str, named: list[Any], allowed: frozenset[str] | None) -> None:
    """Refuse a call naming a scope outside `allowed` (None: every scope is served)."""
    if allowed is None:
        return
    outside = [scope for scope in normalize_scopes(named) if scope not in allowed]
    if outside:
        raise MemoryFailure(
            "MEMORY_SCOPE_FORBIDDEN",
            f"{tool} names the scope(s) {', '.join(outside)}, outside the scopes this "
            f"caller is bound to ({', '.join(sorted(allowed))}). Name only those; the person "
            "running gno-tui chooses them (`mcp --allow-scope`, or the token's --scope).",
        )
