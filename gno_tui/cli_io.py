"""What every CLI command shares with the parser: who is calling (caller and session, from
the flags, the environment or the process) and how a JSON document is written."""

from __future__ import annotations

import getpass
import json
import os
import sys
from typing import Any


def default_caller(given: str | None) -> str:
    if given is not None:
        return given
    if os.environ.get("GNO_TUI_CALLER"):
        return os.environ["GNO_TUI_CALLER"]
    try:
        user = getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in some containers
        user = str(os.getuid()) if hasattr(os, "getuid") else "unknown"
    return f"cli:{user}"


def default_session(given: str | None) -> str:
    if given is not None:
        return given
    return os.environ.get("GNO_TUI_SESSION") or f"ppid:{os.getppid()}"


def emit_json(document: Any) -> None:
    sys.stdout.write(json.dumps(document, ensure_ascii=False) + "\n")


def read_stdin_bytes() -> bytes:
    """stdin as bytes, so that the caller decodes it strictly (the text layer may replace
    undecodable bytes with surrogate escapes or raise, depending on the locale)."""
    buffer = getattr(sys.stdin, "buffer", None)
    if buffer is None:  # stdin replaced by a text stream (tests, embedding)
        return sys.stdin.read().encode("utf-8", "surrogateescape")
    data: bytes = buffer.read()
    return data


def hide_password(url: str) -> str:
    """A database URL with its password (if any) replaced by ***, for messages."""
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if not password:
        return url
    user = parts.username or ""
    netloc = parts.netloc.replace(f"{user}:{password}@", f"{user}:***@", 1)
    if netloc == parts.netloc:  # an encoded form: rebuild it
        host = parts.netloc.rsplit("@", 1)[-1]
        netloc = f"{user}:***@{host}"
    return parts._replace(netloc=netloc).geturl()
