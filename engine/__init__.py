"""The domain core of gno-tui: facts, remember/recall, fence, egress, embeddings.

It never imports the UI (textual, rich, screens, gno_tui); a test proves it in a subprocess.
Submodules load on first use so that `import engine` stays cheap."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

# Ranking multiplies one query vector by the fact matrix: memory-bound work where BLAS threads
# only add synchronisation (measured: 13 ms with threads vs 1.7 ms with one, 10k x 256, on a
# busy 2-core machine). Set before numpy loads; an explicit setting of the user's wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

if TYPE_CHECKING:
    from engine.contract.errors import MemoryFailure
    from engine.facade.factory import open_engine
    from engine.memory.recall import RecallRequest
    from engine.memory.remember import RememberRequest
    from engine.storage.store import MemoryEngine

__all__ = ["MemoryEngine", "MemoryFailure", "RecallRequest", "RememberRequest", "open_engine"]

_HOMES = {
    "MemoryEngine": "engine.storage.store",
    "MemoryFailure": "engine.contract.errors",
    "RecallRequest": "engine.memory.recall",
    "RememberRequest": "engine.memory.remember",
    "open_engine": "engine.facade.factory",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        import importlib

        return getattr(importlib.import_module(_HOMES[name]), name)
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
