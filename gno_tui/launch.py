"""Opening the Textual workbench from the CLI."""

from __future__ import annotations

import argparse
import tempfile


def open_workbench(args: argparse.Namespace, screen: str | None = None) -> int:
    from gno_tui.app import create_app

    if getattr(args, "demo", False):
        return open_demo(args, screen)
    app = create_app(home=args.home, db_url=args.db, model=args.model, screen=screen)
    app.run()
    return 0


def open_demo(args: argparse.Namespace, screen: str | None = None) -> int:
    """The workbench on a temporary home seeded by `seed_demo`; the folder lives as long as
    the app runs and is deleted when it closes."""
    from engine.facade import open_service
    from gno_tui.app import create_app
    from gno_tui.demo import seed_demo

    with tempfile.TemporaryDirectory(prefix="gno-tui-demo-") as home:
        service = open_service(home=home, db_url=f"sqlite:///{home}/index.sqlite", model=args.model)
        try:
            seed_demo(service)
            create_app(service=service, screen=screen).run()
        finally:
            service.close()
    return 0
