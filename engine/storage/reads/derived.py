"""Data derived from the index and kept between queries, per index generation.

A GenerationCache belongs to one MemoryEngine (`engine.derived`), never to a module: two
engines (two homes, or a test's fresh store) never see each other's entries, and an entry
goes when its engine does. A value is rebuilt when the store's generation counter has moved,
so a write by any process is seen by every other process's next query."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")


class GenerationCache:
    """Values by key, each kept with the index generation it was built at."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[Hashable, tuple[int, Any]] = {}

    def get(
        self,
        key: Hashable,
        read_generation: Callable[[], int],
        build: Callable[[int], T],
        *,
        attempts: int = 5,
    ) -> T | None:
        """The value for `key` at the current generation: the kept one, or `build(generation)`
        (under the lock, so concurrent callers build once). A value is kept only if the
        generation did not move while it was built; None if it moved during every attempt.
        Callers pick keys that name their module (`("keyed.search", namespace)`), as the
        cache holds whatever each key's builder returns."""
        with self._lock:
            for _ in range(attempts):
                generation = read_generation()
                kept = self._entries.get(key)
                if kept is not None and kept[0] == generation:
                    value: T = kept[1]
                    return value
                built = build(generation)
                if read_generation() == generation:  # nobody wrote while we read
                    self._entries[key] = (generation, built)
                    return built
        return None

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
