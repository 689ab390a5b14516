"""`gno-tui serve`'s settings, read in one place: from the command line in the process that
starts the server, and from the environment in each worker process it starts (uvicorn's
workers import the application afresh, so the settings travel as GNO_TUI_SERVE_* variables)."""

from __future__ import annotations

import ipaddress
import json
import os
from dataclasses import asdict, dataclass

from engine.facade import MemoryFailure

ENV = "GNO_TUI_SERVE_SETTINGS"
DEFAULT_PORT = 8765
# A keyed memory is at most 16 KiB of content and 8 KiB of metadata; JSON escaping can
# multiply a text's bytes, so the request limit leaves room above them.
DEFAULT_MAX_BODY = 256 * 1024
DEFAULT_BODY_TIMEOUT = 10.0
LOOPBACK_NAMES = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def host_name(value: str) -> str:
    """The name of a Host header or an Origin's authority, without the port."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[: value.find("]") + 1] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def is_loopback(host: str) -> bool:
    if host.strip("[]").lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServeSettings:
    host: str = "127.0.0.1"
    port: int = DEFAULT_PORT
    workers: int = 1
    # --no-auth: a loopback server answers requests without a token as `http:local`, with
    # every scope, propose-only unless --enable-write. Refused on any other address.
    open_loopback: bool = False
    open_write: bool = False
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()
    max_body: int = DEFAULT_MAX_BODY
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    home: str | None = None
    db: str | None = None
    model: str | None = None

    def check(self) -> None:
        """Refuse what must not run: an open server off loopback, nonsense limits."""
        if self.open_loopback and not is_loopback(self.host):
            raise MemoryFailure(
                "MEMORY_USAGE_INVALID",
                f"--no-auth serves without tokens, which is refused on {self.host}: only a "
                "loopback address (127.0.0.1, ::1) may run open. Make tokens with `gno-tui "
                "token create` and drop --no-auth, or listen on 127.0.0.1.",
            )
        if self.open_loopback and self.allow_hosts:
            raise MemoryFailure(
                "MEMORY_USAGE_INVALID",
                "--no-auth with --allow-host would serve a proxy's clients without tokens: a "
                "server reached through another name needs tokens (`gno-tui token create`).",
            )
        if not 0 <= self.port < 65536:
            raise MemoryFailure("MEMORY_USAGE_INVALID", f"--port {self.port} is not a port.")
        if self.workers < 1:
            raise MemoryFailure("MEMORY_USAGE_INVALID", "--workers must be at least 1.")
        if self.max_body < 16 * 1024 or self.body_timeout <= 0:
            raise MemoryFailure(
                "MEMORY_USAGE_INVALID",
                "--max-body must be at least 16384 bytes and --body-timeout positive.",
            )

    @property
    def loopback(self) -> bool:
        return is_loopback(self.host)

    def host_allowed(self, name: str) -> bool:
        """A loopback server serves loopback names only (and --allow-host ones); any other
        serves every name unless --allow-host lists them."""
        if name in {host.lower() for host in self.allow_hosts}:
            return True
        if self.loopback:
            return name in LOOPBACK_NAMES
        return not self.allow_hosts

    def origin_allowed(self, origin: str) -> bool:
        if origin.rstrip("/") in self.allow_origins:
            return True
        scheme, _, authority = origin.partition("://")
        if scheme not in ("http", "https"):
            return False
        return host_name(authority) in LOOPBACK_NAMES

    def to_env(self) -> dict[str, str]:
        return {ENV: json.dumps(asdict(self))}

    @classmethod
    def from_env(cls) -> ServeSettings:
        raw = os.environ.get(ENV)
        if raw is None:
            return cls()
        values = json.loads(raw)
        values["allow_hosts"] = tuple(values.get("allow_hosts", ()))
        values["allow_origins"] = tuple(values.get("allow_origins", ()))
        return cls(**values)
