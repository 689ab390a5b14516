"""Network access: `api_tokens` (the bearer tokens of `gno-tui serve`, stored as digests, with
their grants) and `write_requests` (a write sent with a requestId, answered once per caller).

Revision ID: 0003_tokens_requests
Revises: 0002_generation_notify
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import JSON, Boolean, Column, Integer, String, inspect

revision = "0003_tokens_requests"
down_revision = "0002_generation_notify"
branch_labels = None
depends_on = None

# Frozen here, as a revision freezes its schema (tables.UtcDateTime is String(32) text).
TIME = String(32)
NAME = String()


def upgrade() -> None:
    existing = set(inspect(op.get_bind()).get_table_names())
    if "api_tokens" not in existing:
        op.create_table(
            "api_tokens",
            Column("id", NAME, primary_key=True),
            Column("name", NAME, nullable=False),
            Column("digest", String(64), nullable=False, unique=True),
            Column("scopes", JSON, nullable=False),
            Column("namespaces", JSON, nullable=False),
            Column("can_write", Boolean, nullable=False),
            Column("can_curate", Boolean, nullable=False),
            Column("egress", NAME, nullable=False),
            Column("created_at", TIME, nullable=False),
            Column("created_by", NAME, nullable=False),
            Column("revoked_at", TIME, nullable=True),
            Column("revoked_by", NAME, nullable=True),
        )
        op.create_index("ix_api_tokens_name", "api_tokens", ["name"])
    if "write_requests" not in existing:
        op.create_table(
            "write_requests",
            Column("caller", NAME, primary_key=True),
            Column("request_id", NAME, primary_key=True),
            Column("verb", NAME, nullable=False),
            Column("body_digest", String(64), nullable=False),
            Column("result", JSON, nullable=False),
            Column("status", Integer, nullable=True),
            Column("created_at", TIME, nullable=False),
        )
        op.create_index("ix_write_requests_created_at", "write_requests", ["created_at"])


def downgrade() -> None:
    op.drop_table("write_requests")
    op.drop_table("api_tokens")
