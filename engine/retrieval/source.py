"""What the ranking index reads of a store to keep itself current (engine/retrieval/
index_cache.py): declared here, on the index's side, so that retrieval never imports storage;
storage's readers (engine/storage/reads) implement it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from engine.retrieval.results import IndexedFact


@dataclass(frozen=True)
class StoredVector:
    """A row of the embeddings table: the vector block kept for one fact's text."""

    record_id: str
    content_hash: str
    vector: bytes


class IndexSource(Protocol):
    """The store as the ranking index reads it."""

    def generation(self) -> int:
        """The store's write counter (store_meta `generation`)."""
        ...

    def store_identity(self) -> str | None:
        """The number drawn once per index database (the store's database); None when
        it is not drawn yet and a writer holds the database (a reader does not wait for it:
        the index copy on disk, which it identifies, is then neither read nor written)."""
        ...

    def last_change(self) -> int:
        """The seq of the newest change log entry (0 for none)."""
        ...

    def changes_since(self, seq: int, *, limit: int) -> list[tuple[int, str]] | None:
        """(seq, record id) after `seq`, oldest first; None when more than `limit` or pruned."""
        ...

    def current_facts(self, record_ids: Sequence[str]) -> dict[str, IndexedFact]:
        """The facts among these ids that are neither superseded nor retired."""
        ...

    def all_current_facts(self) -> list[IndexedFact]:
        """Every fact neither superseded nor retired, by (createdAt, record id)."""
        ...

    def stored_vectors(self, model_id: str, record_ids: Sequence[str] | None) -> list[StoredVector]:
        """The kept vectors of this model (of these facts; None: of every fact)."""
        ...

    def keep_vectors(
        self, model_id: str, facts: Sequence[IndexedFact], blocks: Sequence[Any]
    ) -> None:
        """Keep freshly embedded vectors for the next reader; best effort (derived data)."""
        ...
