"""What Alembic runs for every command: migrate on the connection the engine handed over.

engine/storage/schema/version.py puts its open connection (inside a transaction it commits) in
`config.attributes["connection"]`; there is no URL and no alembic.ini to read."""

from __future__ import annotations

from alembic import context


def run_migrations() -> None:
    connection = context.config.attributes["connection"]
    # target_metadata stays None: revisions are written by hand, and each freezes its schema.
    context.configure(connection=connection, target_metadata=None)
    with context.begin_transaction():  # joins the caller's transaction, which it commits
        context.run_migrations()


try:
    _configured = context.config is not None
except AttributeError:
    # Imported as a plain module (the engine's import walk in tests), not run by Alembic:
    # there is no migration context, and nothing to do.
    _configured = False
if _configured:
    run_migrations()
