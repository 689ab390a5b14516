"""Which scopes already hold a text, by collection and content hash: a bulk write's exact-
duplicate check (engine/storage/bulk/__init__.py), and an import plan's
(engine/interop/import_plan.py).

A bulk write holds an entry for every fact it writes (232k for a large import) besides the
store's, so an entry is kept small: the content hash string (the fact's own) and, for a text
in one scope, that scope's string (interned), where a (collection, hash) tuple and a set of
scopes took 300 bytes a fact."""

from __future__ import annotations

import sys
from collections.abc import Iterable


class HashScopes:
    def __init__(self) -> None:
        # collection -> content hash -> the one scope holding it, or the several
        self._held: dict[str, dict[str, str | set[str]]] = {}

    def shares(self, collection: str, digest: str, scopes: Iterable[str]) -> bool:
        """Whether the text is held in one of `scopes` already."""
        held = self._held.get(collection, {}).get(digest)
        if held is None:
            return False
        if isinstance(held, str):
            return held in scopes
        return not held.isdisjoint(scopes)

    def add(self, collection: str, digest: str, scopes: Iterable[str]) -> None:
        """The text is held in `scopes` now, as well."""
        new = {sys.intern(scope) for scope in scopes}
        if not new:
            return
        table = self._held.setdefault(collection, {})
        held = table.get(digest)
        if held is not None:
            new |= {held} if isinstance(held, str) else held
        table[digest] = next(iter(new)) if len(new) == 1 else new
