"""Opening the Textual workbench from the CLI."""

from __future__ import annotations

import argparse

from engine.errors import MemoryFailure


def open_workbench(args: argparse.Namespace, screen: str | None = None) -> int:
    try:
        from gno_tui.app import create_app
    except ImportError as exc:
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID",
            "This build of gno-tui has no workbench yet; use the CLI commands "
            "(gno-tui --help).",
        ) from exc
    app = create_app(home=args.home, db_url=args.db, model=args.model, screen=screen)
    app.run()
    return 0
