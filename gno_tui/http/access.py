"""What one HTTP request may do: its token's grant, as the routes and the MCP tools read it.

The guard (guard.py) puts an `HttpAccess` in the ASGI scope of every request it lets through;
nothing in a request's body or query can change it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine.facade import Grant, MemoryFailure
from gno_tui.mcp_access import McpAccess, check_bound_scopes

SCOPE_KEY = "gno.access"  # where the guard leaves it in the ASGI scope
OPEN_CALLER = "http:local"  # the caller on a loopback server started with --no-auth


@dataclass(frozen=True)
class HttpAccess:
    caller: str
    scopes: frozenset[str] | None  # the fact scopes it may read and write; None: every one
    namespaces: frozenset[str] | None  # the keyed namespaces; None: every one
    can_write: bool  # else every write waits for a person's review
    can_curate: bool  # may decide reviews
    egress: str = "local_only"  # the ceiling of every recall it makes

    @classmethod
    def of_grant(cls, grant: Grant) -> HttpAccess:
        return cls(
            caller=grant.caller,
            scopes=frozenset(grant.scopes),
            namespaces=frozenset(grant.namespaces),
            can_write=grant.can_write,
            can_curate=grant.can_curate,
            egress=grant.egress,
        )

    @classmethod
    def anonymous(cls) -> HttpAccess:
        """A public route's caller: no scope, no namespace, no grant."""
        return cls("http:anonymous", frozenset(), frozenset(), can_write=False, can_curate=False)

    @classmethod
    def open_loopback(cls, *, can_write: bool) -> HttpAccess:
        return cls(OPEN_CALLER, None, None, can_write=can_write, can_curate=False)

    def mcp(self) -> McpAccess:
        """The same reach for the MCP tools: the fact scopes, plus kv:default when the token
        has that namespace (the keyed tools take no namespace: they work in kv:default)."""
        allowed: frozenset[str] | None = None
        if self.scopes is not None and self.namespaces is not None:
            keyed = {"kv:default"} if "default" in self.namespaces else set()
            allowed = frozenset(self.scopes | keyed)
        return McpAccess(self.caller, allowed, self.can_write, origin="http", egress=self.egress)

    def check_scopes(self, what: str, named: Iterable[Any]) -> None:
        check_bound_scopes(what, list(named), self.scopes)

    def require_namespace(self, namespace: str) -> None:
        if self.namespaces is not None and namespace not in self.namespaces:
            granted = ", ".join(sorted(self.namespaces)) or "none"
            raise MemoryFailure(
                "MEMORY_GRANT_MISSING",
                f"This token has no grant for the keyed namespace {namespace!r} (granted: "
                f"{granted}). Ask for a token made with `gno-tui token create NAME "
                f"--namespace {namespace}`.",
            )

    def require_curate(self, what: str) -> None:
        if not self.can_curate:
            raise MemoryFailure(
                "MEMORY_GRANT_MISSING",
                f"{what} decides a review, which needs the curate grant; this token has none. "
                "Ask for a token made with `gno-tui token create NAME --curate ...`.",
            )
