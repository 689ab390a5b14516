"""Run a command with a throwaway PostgreSQL 16 + pgvector (pgserver) for it.

    python scripts/with_pgserver.py -- pytest tests/engine -q

The server's URL is in $GNO_TUI_TEST_PG for the command (tests/conftest.py then gives every
engine test's home a database of its own on it); the server and its folder are removed when
the command ends. CI (.ci/run) runs the engine tests this way, on the server backend."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path


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
        env = {**os.environ, "GNO_TUI_TEST_PG": server.get_uri()}
        return subprocess.run(argv, env=env, check=False).returncode
    finally:
        server.cleanup()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
