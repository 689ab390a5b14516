"""Which scopes already hold a text, by collection and content hash: a bulk write's exact-
duplicate check (engine/storage/bulk/__init__.py), and an import plan's
(engine/interop/import_plan.py).

A bulk write holds an entry for every fact it writes (232k for a large import) besides the
store's, so an entry is kept small: the content hash string (the fact's own) and, for a text
in one scope, that scope's string (interned), where a (collection, hash) tuple and a set of
scopes took 300 bytes a fact."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable


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


# Content hashes looked up in the store by one query (well under any database's limit on a
# statement's parameters).
LOOKUP_CHUNK = 500

HeldRows = Iterable[tuple[str, str, Iterable[str]]]  # (collection, content hash, scopes)


class StoreHashes:
    """HashScopes of the store's current facts, looked up by content hash for the texts a bulk
    write is about to write (`look_up`: a batch at a time, through the index on the hash),
    and of the write's own texts as it adds them. Reading every current fact's hash and
    scopes as the write began took 2.5 s at 334k facts, and kept them all in memory."""

    def __init__(self, read: Callable[[list[str]], HeldRows]) -> None:
        self._read = read  # the current facts holding any of these content hashes
        self._held = HashScopes()
        self._looked: set[str] = set()

    def look_up(self, digests: Iterable[str]) -> None:
        """Learn where the store holds these texts (each content hash asked once)."""
        new = [digest for digest in dict.fromkeys(digests) if digest not in self._looked]
        for start in range(0, len(new), LOOKUP_CHUNK):
            chunk = new[start : start + LOOKUP_CHUNK]
            for collection, digest, scopes in self._read(chunk):
                self._held.add(collection, digest, scopes)
            self._looked.update(chunk)

    def shares(self, collection: str, digest: str, scopes: Iterable[str]) -> bool:
        """Whether the store or the write holds the text in one of `scopes` (a text not looked
        up beforehand is looked up alone)."""
        self.look_up((digest,))
        return self._held.shares(collection, digest, scopes)

    def add(self, collection: str, digest: str, scopes: Iterable[str]) -> None:
        """The write holds the text in `scopes` now, as well."""
        self.look_up((digest,))
        self._held.add(collection, digest, scopes)
