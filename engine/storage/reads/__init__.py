"""What recall and a propose read of a store, and the one write a recall makes (its receipt),
as an interface with two implementations: the ORM's (engine/storage/reads/orm.py, every
database) and the standard library's sqlite3 (engine/storage/embedded/sqlite_reader.py, the embedded
SQLite index of a cold CLI call, which then loads no SQLAlchemy, SQLModel or pydantic).

The ranking index (engine/retrieval/index_cache.py), recall (engine/memory/recall.py), the
replay fence (engine/memory/receipts.py) and a propose (engine/memory/remember.py) work on
these protocols and never learn which implementation answers. This module imports neither."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import iso_utc
from engine.retrieval.source import IndexSource
from engine.retrieval.source import StoredVector as StoredVector  # re-exported: the readers'

if TYPE_CHECKING:
    from engine.retrieval.embeddings import EmbedderStatus
    from engine.retrieval.seam import RetrievalIndex

# Record ids per IN (...) query (SQLite binds at most 32766 parameters).
IN_CHUNK = 500


T = TypeVar("T")


def chunks(items: Sequence[T], size: int) -> Iterator[list[T]]:
    """`items` a `size` at a time (IN_CHUNK ids to an `IN (...)`)."""
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


class Collection(Protocol):
    """A collection as recall reads it: a CollectionRow, or a CollectionInfo."""

    @property
    def name(self) -> str: ...
    @property
    def root(self) -> str: ...
    @property
    def policy(self) -> str: ...
    @property
    def policy_source(self) -> str: ...


@dataclass(frozen=True)
class CollectionInfo:
    name: str
    root: str
    policy: str
    policy_source: str
    policy_revision: int


class StoreReads(IndexSource, Protocol):
    """The reads of the ranking index (IndexSource, engine/retrieval/source.py) and of
    recall, and the receipt a recall stores."""

    # -- recall, the replay fence ------------------------------------------------------------

    def collections(self) -> dict[str, CollectionInfo]: ...

    def stored_receipt(self, digest: str) -> dict[str, Any] | None:
        """The stored receipt with this digest, in its public shape, or None."""
        ...

    def fact_texts(self, record_ids: Sequence[str]) -> dict[str, str]:
        """recordId -> text of those facts still in the index."""
        ...

    def add_receipt(self, receipt: dict[str, Any], issued_at: datetime) -> None:
        """Store a recall's receipt (committed on return; the same digest twice is one row)."""
        ...


class RecallStore(Protocol):
    """What recall and a propose need of an opened home: StoreEngine, or the sqlite3 store of
    a cold CLI call (engine/storage/embedded/sqlite_reader.py)."""

    @property
    def home(self) -> Path: ...
    @property
    def embedder_status(self) -> EmbedderStatus: ...
    @property
    def reads(self) -> StoreReads: ...

    def now(self) -> datetime: ...

    def collections_by_name(self) -> Mapping[str, Collection]: ...

    def require_collection(self, name: str) -> Collection: ...

    def retrieval(self) -> RetrievalIndex: ...


C = TypeVar("C", bound=Collection)


def collection_named(collections: Mapping[str, C], name: str) -> C:
    """The collection `name`, or MEMORY_COLLECTION_NOT_FOUND saying how to create one."""
    row = collections.get(name)
    if row is None:
        raise MemoryFailure(
            "MEMORY_COLLECTION_NOT_FOUND",
            f"There is no collection {name!r}. Create it with "
            f"`gno-tui collection add {name}` or list them with `gno-tui collection list`.",
        )
    return row


def public_receipt(
    *,
    caller: str,
    session: str,
    issued_at: datetime,
    memory_ids: Sequence[str],
    span_hashes: Sequence[str],
    digest: str,
) -> dict[str, Any]:
    """A stored receipt in the shape a recall issued it (what a presented one is compared to)."""
    return {
        "caller": caller,
        "session": session,
        "issuedAt": iso_utc(issued_at),
        "memoryIds": list(memory_ids),
        "spanHashes": list(span_hashes),
        "digest": digest,
    }
