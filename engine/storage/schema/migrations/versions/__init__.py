"""One Alembic revision per file (Alembic skips this one)."""
