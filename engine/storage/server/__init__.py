"""The server mode: PostgreSQL canonical, advisory locks, LISTEN/NOTIFY."""
