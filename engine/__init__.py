"""The domain core of gno-tui: facts, remember/recall, fence, egress, embeddings.

It never imports the UI (textual, rich, screens, gno_tui); a test proves it in a subprocess.
Submodules load on first use so that `import engine` stays cheap."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from engine.errors import MemoryFailure
    from engine.factory import open_engine
    from engine.recall import RecallRequest
    from engine.remember import RememberRequest
    from engine.store import MemoryEngine

__all__ = ["MemoryEngine", "MemoryFailure", "RecallRequest", "RememberRequest", "open_engine"]

_HOMES = {
    "MemoryEngine": "engine.store",
    "MemoryFailure": "engine.errors",
    "RecallRequest": "engine.recall",
    "RememberRequest": "engine.remember",
    "open_engine": "engine.factory",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
