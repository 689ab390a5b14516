"""What every namespace of the façade is: a set of verbs over one home's MemoryEngine."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine


class Namespace:
    def __init__(self, engine: MemoryEngine) -> None:
        self._engine = engine
