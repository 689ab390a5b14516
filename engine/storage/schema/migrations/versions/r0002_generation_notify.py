"""The store's generation is notified: on PostgreSQL, a trigger on the generation row of
`store_meta` calls pg_notify('gno_tui_store_changed', <new generation>), which the server
mode's change feed LISTENs for (engine/storage/server/listen.py). Every write path bumps that row
in its own transaction, so every write notifies, and PostgreSQL delivers the notification at
commit: a listener never hears of a write that could still roll back.

On SQLite the revision changes nothing: SQLite cannot notify another process, and its change
feed reads the counter at an interval instead (engine/storage/reads/change_feed.py).

Revision ID: 0002_generation_notify
Revises: 0001_baseline
"""

from __future__ import annotations

from alembic import op
from sqlalchemy import text

revision = "0002_generation_notify"
down_revision = "0001_baseline"
branch_labels = None
depends_on = None

# Frozen here, as a revision freezes its schema; the channel is pg_listen.CHANNEL.
_FUNCTION = """CREATE OR REPLACE FUNCTION notify_store_generation() RETURNS trigger AS $$
BEGIN
  PERFORM pg_notify('gno_tui_store_changed', NEW.value::text);
  RETURN NULL;
END $$ LANGUAGE plpgsql"""
_TRIGGER = """CREATE OR REPLACE TRIGGER store_meta_generation_notify
AFTER INSERT OR UPDATE OF value ON store_meta
FOR EACH ROW WHEN (NEW.name = 'generation') EXECUTE FUNCTION notify_store_generation()"""


def upgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name != "postgresql":
        return
    connection.execute(text(_FUNCTION))
    connection.execute(text(_TRIGGER))


def downgrade() -> None:
    connection = op.get_bind()
    if connection.dialect.name != "postgresql":
        return
    connection.execute(text("DROP TRIGGER IF EXISTS store_meta_generation_notify ON store_meta"))
    connection.execute(text("DROP FUNCTION IF EXISTS notify_store_generation()"))
