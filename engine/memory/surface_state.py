"""What a surface keeps in a home between runs that is no memory: the workbench's Library
filter, say. One small JSON file in the home (per home, shared by whoever opens it), outside
the fact files and the index: it is never recalled, exported or reindexed.

Losing it loses nothing of the store, so a file that cannot be read or written (a read-only
home, a half-written file) reads as empty and a failed write is dropped."""

from __future__ import annotations

import json
import os
from pathlib import Path

STATE_FILE = ".surface-state.json"


def _path(home: Path) -> Path:
    return home / STATE_FILE


def _read(home: Path) -> dict[str, str]:
    try:
        loaded = json.loads(_path(home).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {str(k): v for k, v in loaded.items() if isinstance(v, str)}


def read_setting(home: Path, name: str) -> str | None:
    return _read(home).get(name)


def write_setting(home: Path, name: str, value: str | None) -> None:
    """Set (None: forget) `name`; written whole, atomically (a reader sees the old file or
    the new one)."""
    state = _read(home)
    if value is None:
        state.pop(name, None)
    else:
        state[name] = value
    path = _path(home)
    temporary = path.with_name(f"{STATE_FILE}.{os.getpid()}.tmp")
    try:
        temporary.write_text(json.dumps(state, indent=1, sort_keys=True), encoding="utf-8")
        temporary.replace(path)
    except OSError:
        temporary.unlink(missing_ok=True)
