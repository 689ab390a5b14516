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
