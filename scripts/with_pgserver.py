"""Run a command with a throwaway PostgreSQL 16 + pgvector (pgserver) for it.

    python scripts/with_pgserver.py -- pytest tests/engine -q

The server's URL is in $GNO_TUI_TEST_PG for the command (tests/conftest.py then gives every
engine test's home a database of its own on it); the server and its folder are removed when
the command ends. CI (.ci/run) runs the engine tests this way, on the server backend.

The server does not fsync (`without_fsync`): it exists for one test run, and a test's killed
process or stopped server leaves its writes in the operating system's cache, which is what
fsync would have flushed; only a machine crash would lose them, and that loses the server too.
Every commit still writes its WAL before it returns (synchronous_commit stays on)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path


def without_fsync(url: str) -> None:
    """Turn off fsync and full-page writes on the throwaway server at `url` (both take effect
    on a reload): creating a database and every commit then cost no disk flush."""
    import psycopg

    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute("ALTER SYSTEM SET fsync = off")
        connection.execute("ALTER SYSTEM SET full_page_writes = off")
        connection.execute("SELECT pg_reload_conf()")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--"]:
        argv = argv[1:]
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    import pgserver

    folder = Path(tempfile.mkdtemp(prefix="gno-tui-pgserver-"))
    server = pgserver.get_server(folder, cleanup_mode="delete")
    try:
        without_fsync(server.get_uri())
        env = {**os.environ, "GNO_TUI_TEST_PG": server.get_uri()}
        return subprocess.run(argv, env=env, check=False).returncode
    finally:
        server.cleanup()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
