"""`gno-tui backup PATH` and `gno-tui restore PATH`: a whole store copied out at one instant
while writers may be running, and brought back into an empty home or database (the engine's
engine/facade/backup.py). The parsers are built with every start (argparse only); the
handlers import the engine when they run."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping
from typing import Any

from gno_tui.cli_io import emit_json


def add_backup_commands(
    commands: Any,
    *,
    formatter: Callable[[str], argparse.HelpFormatter],
    common: Callable[..., None],
) -> None:
    backup = commands.add_parser(
        "backup",
        formatter_class=formatter,
        help="copy the whole store into a backup folder, while agents keep writing",
        description="Write one instant of the store into PATH, a new or empty folder outside "
        "the store: the fact files, collections and index (receipts, proposals, decisions, "
        "tokens) of a home, or every table of a PostgreSQL store (--db). Writers may keep "
        "running: a home's writers wait only for a moment at the end, a database's not at "
        "all. Every file is listed with its checksum in PATH/manifest.json.",
        epilog="examples:\n  gno-tui backup ~/gno-backups/2026-12-01\n"
        "  gno-tui --db postgresql://me@db/gno backup /srv/backups/gno-nightly --json",
    )
    backup.add_argument("path", metavar="PATH", help="the backup folder to create")
    common(backup)

    restore = commands.add_parser(
        "restore",
        formatter_class=formatter,
        help="bring a backup back into an empty home or database",
        description="Restore the backup in PATH into the store named by --home (a new or "
        "empty folder) or by --db (an empty PostgreSQL database). The whole backup is "
        "checked first; a damaged backup or a store that is not empty is refused and "
        "nothing is written. The restored store answers the same recalls, its receipts "
        "still verify and its chains are whole; it is checked as reindex would afterwards.",
        epilog="examples:\n  gno-tui --home ~/gno-restored restore ~/gno-backups/2026-12-01\n"
        "  gno-tui --db postgresql://me@db/gno_restored restore /srv/backups/gno-nightly",
    )
    restore.add_argument("path", metavar="PATH", help="a folder `gno-tui backup` wrote")
    common(restore)


def cmd_backup(args: argparse.Namespace) -> int:
    from engine.facade import backup_store
    from gno_tui.cli_store import open_store

    store = open_store(args)
    try:
        report = backup_store(store, args.path)
    finally:
        store.close()
    if args.json:
        emit_json(report)
        return 0
    paused = (
        f"; writers waited {report['writersPausedMs']:.0f} ms"
        if report["mode"] == "embedded"
        else "; a database snapshot, no writer waited"
    )
    sys.stdout.write(
        f"backed up {report['facts']} facts ({report['currentFacts']} current), "
        f"{report['receipts']} receipts, {report['proposals']} proposals, "
        f"{report['decisions']} decisions to {report['backup']}\n"
        f"  {report['files']} files, {report['bytes']} bytes, taken at {report['takenAt']}"
        f"{paused}\n"
    )
    return 0


def cmd_restore(args: argparse.Namespace) -> int:
    from engine.facade import restore_store
    from gno_tui.cli_store import _opened

    # A database that cannot be reached is MEMORY_QUERY_FAILED, password hidden, as at open.
    report = _opened(
        lambda: restore_store(args.path, home=args.home, db_url=args.db, model=args.model), args
    )
    if args.json:
        emit_json(report)
        return 0
    check: Mapping[str, Any] = report["check"]  # read by key name below
    sys.stdout.write(
        f"restored {report['facts']} facts, {report['receipts']} receipts, "
        f"{report['proposals']} proposals, {report['decisions']} decisions "
        f"(taken at {report['takenAt']}) into {report['restored']}\n"
    )
    for item in report["collections"]:
        if "root" in item:
            sys.stdout.write(f"  collection {item['name']}: {item['root']}\n")
    out_of_line = [f"{check[key]} {key}" for key in ("added", "changed", "removed") if check[key]]
    found = [f"{len(check[key])} {key}" for key in ("problems", "forks") if check[key]]
    if out_of_line or found:
        sys.stdout.write(
            f"  check: {', '.join(out_of_line + found)} (`gno-tui reindex --json` lists them)\n"
        )
    else:
        sys.stdout.write("  check: the index agrees with the restored store\n")
    return 0
