"""Baseline: the schema of gno-tui's index when migrations began.

On a new database it creates every table, index and the change-log triggers. On an index made
by a gno-tui from before Alembic (tables, but no alembic_version) it adds what that index
lacks, as the additive upgrade of those versions did (baseline_ops.py). The tables are frozen
here, in SQLAlchemy Core: engine/storage/schema/tables.py describes only the newest schema, and a
later revision changes the database with op.add_column and friends, not this file.

Revision ID: 0001_baseline
Revises: (none)
"""

from __future__ import annotations

from alembic import context, op
from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from engine.storage.schema.migrations import baseline_ops

revision = "0001_baseline"
down_revision = None
branch_labels = None
depends_on = None

# Every time is ISO 8601 UTC text with milliseconds (tables.UtcDateTime); names and ids are
# VARCHAR without a length (SQLModel's str).
TIME = String(32)
NAME = String()

metadata = MetaData()

Table(
    "collections",
    metadata,
    Column("name", NAME, primary_key=True),
    Column("root", NAME, nullable=False),
    Column("policy", NAME, nullable=False),
    Column("policy_source", NAME, nullable=False),
    Column("policy_revision", Integer, nullable=False),
    Column("created_at", TIME, nullable=False),
)
Table(
    "facts",
    metadata,
    Column("record_id", NAME, primary_key=True),
    Column("docid", String(40), nullable=False),
    Column("uri", String(300), nullable=False),
    Column("collection", NAME, nullable=False, index=True),
    Column("rel_path", NAME, nullable=False),
    Column("text", Text, nullable=False),
    Column("content_hash", NAME, nullable=False, index=True),
    Column("scopes", JSON, nullable=False),
    Column("caller", NAME, nullable=False),
    Column("session", NAME, nullable=False),
    Column("created_at", TIME, nullable=False, index=True),
    Column("source", Text),
    Column("supersedes", JSON, nullable=False),
    Column("superseded_by", NAME, index=True),
    Column("superseded_at", TIME),
    Column("retired_at", TIME),
    Column("retired_by", NAME),
    Column("retired_reason", NAME),
    Column("expires_at", TIME, index=True),
    Column("workbench", JSON, nullable=False),
    Column("kv_namespace", String(64)),
    Column("kv_key", String(256)),
    Column("kv_revision", BigInteger),
    Column("kv_topic", String(64)),
    Column("kv_tags", Text),
    Column("kv_occurred_at_ms", BigInteger),
    UniqueConstraint("docid"),
    UniqueConstraint("uri"),
    Index("ix_facts_collection_hash", "collection", "content_hash"),
    Index(baseline_ops.KEYED_INDEX, "kv_namespace", "kv_key", "kv_revision", unique=True),
    Index("ix_facts_kv_time", "kv_namespace", "kv_occurred_at_ms"),
    Index("ix_facts_kv_topic", "kv_namespace", "kv_topic", "kv_occurred_at_ms"),
)
Table(
    "fact_scopes",
    metadata,
    Column("record_id", NAME, ForeignKey("facts.record_id"), primary_key=True),
    Column("scope", NAME, primary_key=True, index=True),
)
Table(
    "embeddings",
    metadata,
    Column("record_id", NAME, primary_key=True),
    Column("model_id", NAME, nullable=False),
    Column("content_hash", NAME, nullable=False),
    Column("vector", LargeBinary, nullable=False),
)
Table(
    "receipts",
    metadata,
    Column("digest", NAME, primary_key=True),
    Column("caller", NAME, nullable=False, index=True),
    Column("session", NAME, nullable=False),
    Column("issued_at", TIME, nullable=False, index=True),
    Column("memory_ids", JSON, nullable=False),
    Column("span_hashes", JSON, nullable=False),
)
Table(
    "recall_labels",
    metadata,
    Column("digest", NAME, primary_key=True),
    Column("record_id", NAME, primary_key=True),
    Column("actor", NAME, primary_key=True),
    Column("label", NAME, nullable=False),
    Column("at", TIME, nullable=False),
)
Table(
    "proposals",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("created_at", TIME, nullable=False, index=True),
    Column("origin", NAME, nullable=False),
    Column("state", NAME, nullable=False, index=True),
    Column("text", Text, nullable=False),
    Column("scopes", JSON, nullable=False),
    Column("collection", NAME, nullable=False),
    Column("caller", NAME, nullable=False),
    Column("session", NAME, nullable=False),
    Column("source", NAME),
    Column("decision", NAME, nullable=False),
    Column("predecessor", NAME),
    Column("predecessor_hash", NAME),
    Column("candidates", JSON, nullable=False),
    Column("matching", JSON, nullable=False),
    Column("decided_at", TIME),
    Column("decided_by", NAME),
    Column("resolution", NAME),
)
Table(
    "decisions",
    metadata,
    Column("id", Integer, primary_key=True),
    Column("at", TIME, nullable=False, index=True),
    Column("actor", NAME, nullable=False),
    Column("action", NAME, nullable=False),
    Column("target", NAME, nullable=False),
    Column("detail", JSON, nullable=False),
)
Table(
    "store_meta",
    metadata,
    Column("name", NAME, primary_key=True),
    Column("value", Integer, nullable=False),
)
Table(
    "fact_changes",
    metadata,
    # AUTOINCREMENT on SQLite: a pruned seq is never handed out again.
    Column(
        "seq", BigInteger().with_variant(Integer, "sqlite"), primary_key=True, autoincrement=True
    ),
    Column("record_id", String(64), nullable=False),
    sqlite_autoincrement=True,
)


def upgrade() -> None:
    connection = op.get_bind()
    baseline_ops.create_or_complete_tables(connection, metadata)
    baseline_ops.create_change_triggers(connection)
    notes = baseline_ops.make_keyed_index_unique(connection, metadata)
    # What was repaired goes back to the engine, which reports it (MemoryEngine.note).
    context.config.attributes.setdefault("notes", []).extend(notes)


def downgrade() -> None:
    # Below the baseline there is no schema to go back to, only data to lose: refused.
    raise NotImplementedError(
        "The baseline is the first revision; gno-tui does not drop the index's tables."
    )
