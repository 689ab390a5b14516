"""Opening the Textual workbench from the CLI."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.facade import MemoryService


def open_workbench(args: argparse.Namespace, screen: str | None = None) -> int:
    from gno_tui.app import create_app

    if getattr(args, "demo", False):
        return open_demo(args, screen)
    app = create_app(
        home=args.home, db_url=args.db, model=args.model, screen=screen, prebuild_screens=True
    )
    app.run()
    return 0


def open_demo(args: argparse.Namespace, screen: str | None = None) -> int:
    """The workbench on the demo store: seeded into `--home` when one is given (it must be
    empty or new, and stays), else into a temporary home deleted when the app closes."""
    from gno_tui.app import create_app

    if args.home:
        service = seed_demo_home(Path(args.home), model=args.model)
        try:
            create_app(service=service, screen=screen, prebuild_screens=True).run()
        finally:
            service.close()
        return 0
    with tempfile.TemporaryDirectory(prefix="gno-tui-demo-") as home:
        service = seed_demo_home(Path(home), model=args.model)
        try:
            create_app(service=service, screen=screen, prebuild_screens=True).run()
        finally:
            service.close()
    return 0


def seed_demo_home(home: Path, *, model: str | None = None) -> MemoryService:
    """A new store in `home` seeded by `seed_demo`, opened. A folder that holds anything is
    refused (MEMORY_USAGE_INVALID): the demo never mixes its facts into a real store. The
    index is the home's own SQLite file, whatever $GNO_TUI_DB says."""
    from engine.facade import MemoryFailure, open_service
    from gno_tui.demo import seed_demo

    if home.exists() and (not home.is_dir() or any(home.iterdir())):
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID",
            f"--demo seeds a new store and {home} is not an empty folder. Give --home an "
            "empty or new folder, or leave --home out for a throwaway demo (deleted on exit).",
        )
    home.mkdir(parents=True, exist_ok=True)
    service = open_service(home=home, db_url=f"sqlite:///{home}/index.sqlite", model=model)
    try:
        seed_demo(service)
    except BaseException:
        service.close()
        raise
    return service
