"""One backend's entry in the retrieval registry (engine/retrieval/registry.py), apart from
the table itself so that a backend's module can take its own entry without importing the
table that imports it."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.retrieval.seam import SEMANTIC

if TYPE_CHECKING:
    from sqlalchemy import Connection, Engine

    from engine.retrieval.embeddings import Embedder
    from engine.retrieval.results import IndexedFact
    from engine.retrieval.seam import RetrievalIndex
    from engine.retrieval.snapshot import Snapshot


# Facts by record id, read on a connection of the store's database.
FactReader = Callable[["Connection", Iterable[str]], "dict[str, IndexedFact]"]


@dataclass(frozen=True)
class Place:
    """Where a store's index would run: the database's dialect (`sqlite`, `postgresql`) and,
    when the store has one, its SQLAlchemy engine (the sqlite3 read path has none)."""

    dialect: str
    db: Engine | None = None
    # How a backend inside the database reads facts by record id (the store's ORM reads:
    # engine/storage/reads/snapshot_rows.py), so that retrieval never imports storage.
    read_facts: FactReader | None = None


# What a store opens its backend with: the place, its embedder (None: no model) and its
# in-process snapshot of the current facts (read at each call: a rebuild replaces it).
Opener = Callable[
    ["Backend", Place, "Embedder | None", Callable[[], "Snapshot"]],
    Callable[[], "RetrievalIndex"],
]


@dataclass(frozen=True)
class Backend:
    """One backend, declared. `applies(place, insisted)`: whether it can serve `place`; False
    lets `auto` try the next entry, and where it was insisted on (its choice word) it raises
    MemoryFailure saying why instead (a backend that needs the SQLAlchemy engine does not
    apply where `place.db` is None). `opener` gives what returns the index at each query."""

    name: str
    choices: tuple[str, ...]
    capabilities: frozenset[str]
    applies: Callable[[Place, bool], bool]
    opener: Opener
    summary: str = ""  # where it ranks, for a person choosing (`gno-tui status --help`)

    def open(
        self, place: Place, embedder: Embedder | None, snapshot: Callable[[], Snapshot]
    ) -> Callable[[], RetrievalIndex]:
        return self.opener(self, place, embedder, snapshot)

    def usable(self, semantic: bool) -> frozenset[str]:
        """The declared capabilities less the semantic leg where there is none (no model)."""
        return self.capabilities if semantic else self.capabilities - {SEMANTIC}
