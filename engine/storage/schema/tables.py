"""The index: SQLModel tables over SQLAlchemy, rebuilt from the fact files by `reindex`.

Only the classes with ``table=True`` are tables. No ``from __future__ import annotations`` here:
SQLModel needs real annotations at class creation.
"""

from datetime import datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Index,
    Integer,
    LargeBinary,
    String,
    Text,
    TypeDecorator,
    text,
)
from sqlmodel import Field, SQLModel

from engine.contract import visibility
from engine.contract.normalize import iso_utc, parse_iso


class UtcDateTime(TypeDecorator[datetime]):
    """A timezone-aware datetime stored as ISO 8601 UTC text with milliseconds.

    Text keeps the exact value that appears in fact files and digests, sorts correctly on every
    backend, and comes back aware on SQLite (whose DATETIME drops the zone)."""

    impl = String(32)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> str | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UtcDateTime column")
        return iso_utc(value)

    def process_result_value(self, value: str | None, dialect: Any) -> datetime | None:
        return None if value is None else parse_iso(value)


def _utc_column(*, nullable: bool = True, index: bool = False) -> Any:
    return Field(default=None, sa_column=Column(UtcDateTime(), nullable=nullable, index=index))


class CollectionRow(SQLModel, table=True):
    __tablename__ = "collections"

    name: str = Field(primary_key=True)
    root: str
    policy: str
    policy_source: str
    # Bumped on each policy change, so a relaxation can be confirmed against what was shown.
    policy_revision: int = 1
    created_at: datetime | None = _utc_column(nullable=False)


# The rows ix_facts_superseded_by holds.
SUPERSEDED = "superseded_by IS NOT NULL"


class FactRow(SQLModel, table=True):
    __tablename__ = "facts"
    __table_args__ = (
        Index("ix_facts_collection_hash", "collection", "content_hash"),
        # The keyed API: a key's chain by revision, and recall newest event first. Unique: one
        # row per revision of a key, whichever home writes it (NULLs, on other facts, differ).
        Index("ix_facts_kv_key", "kv_namespace", "kv_key", "kv_revision", unique=True),
        Index("ix_facts_kv_time", "kv_namespace", "kv_occurred_at_ms"),
        Index("ix_facts_kv_topic", "kv_namespace", "kv_topic", "kv_occurred_at_ms"),
        # Only superseded facts (migration 0004): a store's NULLs, nearly every row, would
        # let a planner answer the liveness test from this index and read the whole store.
        Index(
            "ix_facts_superseded_by",
            "superseded_by",
            sqlite_where=text(SUPERSEDED),
            postgresql_where=text(SUPERSEDED),
        ),
    )

    record_id: str = Field(primary_key=True)
    docid: str = Field(sa_column=Column(String(40), unique=True, nullable=False))
    uri: str = Field(sa_column=Column(String(300), unique=True, nullable=False))
    collection: str = Field(index=True)
    rel_path: str
    text: str = Field(sa_column=Column(Text, nullable=False))
    content_hash: str = Field(index=True)
    scopes: list[str] = Field(sa_column=Column(JSON, nullable=False))
    caller: str
    session: str
    created_at: datetime | None = _utc_column(nullable=False, index=True)
    source: str | None = Field(default=None, sa_column=Column(Text))
    supersedes: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    superseded_by: str | None = Field(default=None)
    superseded_at: datetime | None = _utc_column()
    retired_at: datetime | None = _utc_column()
    retired_by: str | None = None
    retired_reason: str | None = None
    expires_at: datetime | None = _utc_column(index=True)
    # The workbench's own fields (front matter key `workbench:`), kept whole for round trips.
    workbench: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    # The keyed API (engine/keyed/service.py), NULL on other facts; derived from
    # `workbench.keyed` by records.row_from_file. Tags and metadata are read from
    # workbench["keyed"]; kv_tags is only the filter form ("\x1f" + "\x1f".join(tags) + "\x1f").
    kv_namespace: str | None = Field(default=None, sa_column=Column(String(64)))
    kv_key: str | None = Field(default=None, sa_column=Column(String(256)))
    kv_revision: int | None = Field(default=None, sa_column=Column(BigInteger))
    kv_topic: str | None = Field(default=None, sa_column=Column(String(64)))
    kv_tags: str | None = Field(default=None, sa_column=Column(Text))
    kv_occurred_at_ms: int | None = Field(default=None, sa_column=Column(BigInteger))

    def is_current(self, now: datetime) -> bool:
        """Neither superseded, retired nor expired at `now` (the engine's clock: engine.now());
        the rule is engine/contract/visibility.py's."""
        return visibility.is_current(self, now)


class FactScopeRow(SQLModel, table=True):
    """One row per (fact, scope): visibility is a join inside the query, not a post-filter."""

    __tablename__ = "fact_scopes"

    record_id: str = Field(primary_key=True, foreign_key="facts.record_id")
    scope: str = Field(primary_key=True, index=True)


class EmbeddingRow(SQLModel, table=True):
    __tablename__ = "embeddings"

    record_id: str = Field(primary_key=True)
    # Which model and which text the vector belongs to; a mismatch means "recompute".
    model_id: str
    content_hash: str
    vector: bytes = Field(sa_column=Column(LargeBinary, nullable=False))


class ReceiptRow(SQLModel, table=True):
    __tablename__ = "receipts"

    digest: str = Field(primary_key=True)
    caller: str = Field(index=True)
    session: str
    issued_at: datetime | None = _utc_column(nullable=False, index=True)
    memory_ids: list[str] = Field(sa_column=Column(JSON, nullable=False))
    span_hashes: list[str] = Field(sa_column=Column(JSON, nullable=False))


class RecallLabelRow(SQLModel, table=True):
    """A person's verdict on one fact of one recall: relevant, irrelevant, or missing (a fact
    the recall should have returned). Keyed by the receipt, so it stays content-free."""

    __tablename__ = "recall_labels"

    digest: str = Field(primary_key=True)
    record_id: str = Field(primary_key=True)
    actor: str = Field(primary_key=True)
    label: str
    at: datetime | None = _utc_column(nullable=False)


class ProposalRow(SQLModel, table=True):
    """A write held for a person (the review queue of docs/contract.md section 7)."""

    __tablename__ = "proposals"

    id: int | None = Field(default=None, primary_key=True)
    created_at: datetime | None = _utc_column(nullable=False, index=True)
    origin: str  # "mcp" (a propose-only server) or "import"
    state: str = Field(default="pending", index=True)
    text: str = Field(sa_column=Column(Text, nullable=False))
    scopes: list[str] = Field(sa_column=Column(JSON, nullable=False))
    collection: str
    caller: str
    session: str
    source: str | None = None
    decision: str  # what the agent asked for: add or supersede
    predecessor: str | None = None
    predecessor_hash: str | None = None
    candidates: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    matching: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    decided_at: datetime | None = _utc_column()
    decided_by: str | None = None
    resolution: str | None = None  # the reason of a rejection, or the written fact's uri


class DecisionRow(SQLModel, table=True):
    """The curation log: who did what to which item, and when. Append-only."""

    __tablename__ = "decisions"

    id: int | None = Field(default=None, primary_key=True)
    at: datetime | None = _utc_column(nullable=False, index=True)
    actor: str
    action: str
    target: str
    detail: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))


class StoreMetaRow(SQLModel, table=True):
    """Counters shared by every process on the store; `generation` changes on every write."""

    __tablename__ = "store_meta"

    name: str = Field(primary_key=True)
    value: int = 0


class FactChangeRow(SQLModel, table=True):
    """The change log: one row per insert, update or delete of a fact row, written by triggers
    on `facts` (engine/storage/schema/database.py), so no write path can forget it. A process keeps
    its in-memory index current by applying the rows after the last `seq` it applied
    (engine/retrieval/snapshot.py); writes are serialised (the home's write lock, or the
    database's in server mode), so `seq` order is commit order."""

    __tablename__ = "fact_changes"
    __table_args__ = {"sqlite_autoincrement": True}  # a pruned seq is never handed out again

    seq: int | None = Field(
        default=None,
        sa_column=Column(
            BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
        ),
    )
    record_id: str = Field(sa_column=Column(String(64), nullable=False))


class ApiTokenRow(SQLModel, table=True):
    """A bearer token of `gno-tui serve`: its principal and grants. Only the token's SHA-256
    digest is stored; the token itself is shown once, when it is made (engine/access)."""

    __tablename__ = "api_tokens"

    id: str = Field(primary_key=True)
    name: str = Field(index=True)
    digest: str = Field(sa_column=Column(String(64), unique=True, nullable=False))
    scopes: list[str] = Field(sa_column=Column(JSON, nullable=False))
    namespaces: list[str] = Field(sa_column=Column(JSON, nullable=False))
    can_write: bool = False
    can_curate: bool = False
    # The egress ceiling of every recall made with it (local_only: none): a token for an
    # agent on another machine gets lan or remote, so local-only facts never reach it.
    egress: str = "local_only"
    created_at: datetime | None = _utc_column(nullable=False)
    created_by: str
    revoked_at: datetime | None = _utc_column()
    revoked_by: str | None = None


class WriteRequestRow(SQLModel, table=True):
    """A write sent with a `requestId`: done at most once per caller. The digest is of the
    request as received; the result is what the first attempt answered (engine/access)."""

    __tablename__ = "write_requests"

    caller: str = Field(primary_key=True)
    request_id: str = Field(primary_key=True)
    verb: str
    body_digest: str = Field(sa_column=Column(String(64), nullable=False))
    result: dict[str, Any] = Field(sa_column=Column(JSON, nullable=False))
    # The HTTP status of the first answer, when the surface has one to keep (a keyed PUT's
    # 201 or 200 is not in its body); NULL for the CLI's and MCP's writes.
    status: int | None = None
    created_at: datetime | None = _utc_column(nullable=False, index=True)
