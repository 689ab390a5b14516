"""Opening the Textual workbench from the CLI."""

from __future__ import annotations

import argparse


def open_workbench(args: argparse.Namespace, screen: str | None = None) -> int:
    from gno_tui.app import create_app

    app = create_app(home=args.home, db_url=args.db, model=args.model, screen=screen)
    app.run()
    return 0
