"""Which backend of the retrieval seam (engine/retrieval/seam.py) a store uses: one ordered table.

Each `Backend` entry declares the name `gno-tui status` shows, the `$GNO_TUI_RETRIEVAL` words
that insist on it, what it can do (`capabilities`, seam.py's words), when it applies, and how
it is opened. `auto` (the default) takes the first entry that applies, in table order;
`REGISTRY` lists the PostgreSQL backend (a PostgreSQL database with pgvector) before the
in-memory one (always). To add a backend: its module (an index implementing `RetrievalIndex`
and taking its entry) and one `Backend` line in `REGISTRY`.

`Registry.chosen` is the one reader of `$GNO_TUI_RETRIEVAL`, for MemoryEngine
(engine/storage/store.py) and the sqlite3 read path (engine/storage/embedded/sqlite_reader.py). This
module loads neither SQLAlchemy nor a backend: each entry imports its own modules when asked,
so a cold CLI call on SQLite loads only the in-memory backend."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.contract.errors import MemoryFailure
from engine.retrieval.entry import Backend as Backend
from engine.retrieval.entry import Place as Place
from engine.retrieval.seam import BATCH_CANDIDATES, LEXICAL, RETRIEVAL_ENV, SEMANTIC

if TYPE_CHECKING:
    from engine.retrieval.embeddings import Embedder
    from engine.retrieval.seam import RetrievalIndex
    from engine.retrieval.snapshot import Snapshot

AUTO = "auto"


@dataclass(frozen=True)
class Registry:
    backends: tuple[Backend, ...]

    @property
    def choices(self) -> tuple[str, ...]:
        """What `$GNO_TUI_RETRIEVAL` accepts: `auto`, then each entry's words in table order."""
        return (AUTO, *(word for backend in self.backends for word in backend.choices))

    def described(self) -> str:
        """The choices as a person reads them, e.g. in the CLI's help."""
        each = [f"{'|'.join(b.choices)} ({b.summary})" for b in self.backends]
        return f"{AUTO} (the first of these that applies), " + ", ".join(each)

    def chosen(self, environ: Mapping[str, str] = os.environ) -> str:
        """The one parse of `$GNO_TUI_RETRIEVAL` (unset or empty: auto)."""
        choice = (environ.get(RETRIEVAL_ENV) or AUTO).strip().lower()
        if choice not in self.choices:
            raise MemoryFailure(
                "MEMORY_USAGE_INVALID",
                f"${RETRIEVAL_ENV} is {choice!r}; use one of {', '.join(self.choices)}.",
            )
        return choice

    def choose(self, place: Place, choice: str | None = None) -> Backend:
        """The backend for `place` under `choice` (None: `$GNO_TUI_RETRIEVAL`)."""
        choice = self.chosen() if choice is None else choice
        for backend in self.backends:
            if choice == AUTO and backend.applies(place, False):
                return backend
            if choice in backend.choices:
                if backend.applies(place, True):  # raises saying why where it cannot be had
                    return backend
                raise MemoryFailure(
                    "MEMORY_QUERY_FAILED",
                    f"{RETRIEVAL_ENV}={choice} cannot serve a {place.dialect} database.",
                )
        raise MemoryFailure("MEMORY_INTERNAL", f"No retrieval backend applies to {place.dialect}.")


def _postgres_applies(place: Place, insisted: bool) -> bool:
    if place.dialect != "postgresql" or place.db is None:
        if insisted:
            raise MemoryFailure(
                "MEMORY_QUERY_FAILED",
                f"{RETRIEVAL_ENV}=postgres needs a PostgreSQL database: pass --db "
                "postgresql://user@host/db (or set $GNO_TUI_DB).",
            )
        return False
    # Imported here: it loads SQLAlchemy, which a store on SQLite may not have loaded (the
    # sqlite3 read path).
    from engine.retrieval.backend import pgvector_ready

    return pgvector_ready(place.db, insisted)


def _open_postgres(
    backend: Backend,
    place: Place,
    embedder: Embedder | None,
    snapshot: Callable[[], Snapshot],
) -> Callable[[], RetrievalIndex]:
    from engine.retrieval.postgres import PostgresIndex

    # postgres_applies holds a PostgreSQL engine; the store gives its fact reader with it.
    assert place.db is not None and place.read_facts is not None
    index = PostgresIndex(place.db, embedder, backend=backend, read_facts=place.read_facts)
    return lambda: index


def _open_in_memory(
    backend: Backend,
    place: Place,
    embedder: Embedder | None,
    snapshot: Callable[[], Snapshot],
) -> Callable[[], RetrievalIndex]:
    from engine.retrieval.in_memory import InMemoryIndex

    # One per query, over the snapshot as it is then (caught up when the generation moved).
    return lambda: InMemoryIndex(snapshot(), embedder, backend=backend)


POSTGRES = Backend(
    name="postgres",
    choices=("postgres",),
    capabilities=frozenset({LEXICAL, SEMANTIC, BATCH_CANDIDATES}),
    applies=_postgres_applies,
    opener=_open_postgres,
    summary="ranking inside a PostgreSQL database with pgvector",
)
IN_MEMORY = Backend(
    name="in-memory",
    choices=("memory",),
    capabilities=frozenset({LEXICAL, SEMANTIC, BATCH_CANDIDATES}),
    applies=lambda place, insisted: True,
    opener=_open_in_memory,
    summary="ranking in this process, on any database",
)
REGISTRY = Registry((POSTGRES, IN_MEMORY))
