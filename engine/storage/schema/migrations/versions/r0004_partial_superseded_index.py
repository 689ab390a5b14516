"""ix_facts_superseded_by holds only superseded facts (a partial index, on both databases).

The full index held a NULL for every live fact, nearly every row of a store. Given the
liveness test (`superseded_by IS NULL`) beside a list of record ids, SQLite's planner chose it
over the primary key and read the whole store: 0.33 s per catch-up at 600k facts. Holding only
the superseded rows, it can no longer answer the liveness test, still serves what asks for
superseded facts, and no longer grows with every fact written.

Revision ID: 0004_partial_superseded_index
Revises: 0003_tokens_requests
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0004_partial_superseded_index"
down_revision = "0003_tokens_requests"
branch_labels = None
depends_on = None

INDEX = "ix_facts_superseded_by"
# Frozen here, as a revision freezes its schema (tables.SUPERSEDED).
SUPERSEDED = "superseded_by IS NOT NULL"


def upgrade() -> None:
    op.drop_index(INDEX, table_name="facts")
    op.create_index(
        INDEX,
        "facts",
        ["superseded_by"],
        sqlite_where=text(SUPERSEDED),
        postgresql_where=text(SUPERSEDED),
    )


def downgrade() -> None:
    op.drop_index(INDEX, table_name="facts")
    op.create_index(INDEX, "facts", ["superseded_by"])
