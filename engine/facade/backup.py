"""The façade's backup and restore of a whole store, in either storage mode
(engine/storage/backup.py says what a backup is; backup_files.py and backup_rows.py how each
mode takes and restores one).

A restore goes into an empty store only (a new or empty home; a database holding no store),
and checks the whole backup before it writes anything; afterwards it checks the restored
store as `reindex` would (embedded: the index must agree with the files, nothing to add,
change or remove; server: the derived search tables are rebuilt from the restored rows)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, cast

from engine.contract.errors import MemoryFailure

if TYPE_CHECKING:
    from engine.contract.results import BackupReport, RestoreCheck, RestoreReport
    from engine.facade.service import MemoryService
    from engine.retrieval.embeddings import EmbedderStatus
    from engine.storage.backup import Backup


def backup_store(service: MemoryService, target: str | Path) -> BackupReport:
    """Write a backup of the store into `target` (a new or empty folder, outside the store):
    one instant of it, taken while writers may be running. What was written: counts, size,
    and how long writers were held up (embedded mode; none in the server mode)."""
    from engine.storage.backup import check_backup_target

    engine = service.engine
    resolved = check_backup_target(Path(target), engine.store.backup_protected(engine))
    # Each store builds its report as a mapping; BackupReport names its keys.
    return cast("BackupReport", engine.store.take_backup(engine, resolved))


def restore_store(
    source: str | Path,
    *,
    home: str | Path | None = None,
    db_url: str | None = None,
    model: str | Path | None = None,
    embedder_status: EmbedderStatus | None = None,
) -> RestoreReport:
    """Restore the backup in `source` into the store that `home` and `db_url` name (as
    open_service resolves them), which must be empty: MEMORY_STORE_NOT_EMPTY otherwise, and
    MEMORY_BACKUP_INVALID for a backup that is missing, damaged or of a newer gno-tui; either
    way nothing is written. What was restored, and what the check afterwards found."""
    from engine.facade import factory
    from engine.storage.backup import read_backup
    from engine.storage.embedded.sqlite_reader import INDEX_FILE

    backup = read_backup(Path(source))
    resolved = factory.resolve_home(home)
    own_index = factory.sqlite_url(resolved / INDEX_FILE)  # the URL open_engine would use
    url = db_url or os.environ.get("GNO_TUI_DB") or own_index
    server = url.startswith("postgresql")
    if backup.mode != ("server" if server else "embedded"):
        raise _wrong_mode(backup)
    if server:
        return _restore_server(backup, resolved, url, model, embedder_status)
    if url != own_index:
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID",
            "An embedded-mode restore writes the home's own index (index.sqlite in the home); "
            "leave --db and $GNO_TUI_DB out and name the new home with --home. Nothing was "
            "restored.",
        )
    return _restore_embedded(backup, resolved, model, embedder_status)


def _wrong_mode(backup: Backup) -> MemoryFailure:
    if backup.mode == "server":
        how = (
            "it holds a server-mode store (PostgreSQL rows): restore it into an empty "
            "PostgreSQL database, `gno-tui --db postgresql://HOST/NEWDB restore "
            f"{backup.folder}`"
        )
    else:
        how = (
            "it holds an embedded store (fact files and a SQLite index): restore it into a "
            f"new home without --db, `gno-tui --home NEW_HOME restore {backup.folder}`"
        )
    return MemoryFailure("MEMORY_USAGE_INVALID", f"Cannot restore {backup.folder} here: {how}.")


def _schema_known(backup: Backup, *, exactly_head: bool) -> None:
    from engine.storage.schema import version as schema

    revision = backup.manifest["schema"]
    if revision == schema.HEAD:
        return
    if revision not in schema.known_revisions():
        raise MemoryFailure(
            "MEMORY_BACKUP_INVALID",
            f"{backup.folder} was taken by a newer gno-tui (schema {revision!r}; this one is "
            f"{schema.HEAD!r}). Upgrade gno-tui to restore it; nothing was restored.",
        )
    if exactly_head:
        raise MemoryFailure(
            "MEMORY_BACKUP_INVALID",
            f"{backup.folder} holds rows of schema {revision!r}, and this gno-tui restores "
            f"server-mode rows of schema {schema.HEAD!r} only. Restore it with the gno-tui "
            "that took it, then open the database with this one (which migrates it); nothing "
            "was restored.",
        )


def _restore_embedded(
    backup: Backup,
    home: Path,
    model: str | Path | None,
    embedder_status: EmbedderStatus | None,
) -> RestoreReport:
    from engine.facade.factory import open_engine
    from engine.storage.embedded.backup import home_is_empty, place_embedded_backup
    from engine.storage.reindex import reindex

    _schema_known(backup, exactly_head=False)  # an older index is migrated when it opens
    if not home_is_empty(home):
        shown = sorted(path.name for path in home.iterdir())[:4] if home.is_dir() else []
        raise MemoryFailure(
            "MEMORY_STORE_NOT_EMPTY",
            f"The home {home} is not empty ({', '.join(shown) or 'a file'}); a restore never "
            "writes over a store. Restore into a new home, `gno-tui --home NEW_HOME restore "
            f"{backup.folder}`, or move this one away first; nothing was restored.",
        )
    roots = place_embedded_backup(backup, home)
    engine = open_engine(home=home, model=model, embedder_status=embedder_status)
    try:
        check = reindex(engine)
    finally:
        engine.db.dispose()
    # The summary is the backup's manifest, JSON read from disk: typed here, once.
    report = {
        **backup.summary(),
        "restored": str(home),
        "collections": roots,
        "check": _check_of(check),
    }
    return cast("RestoreReport", report)


def _restore_server(
    backup: Backup,
    home: Path,
    url: str,
    model: str | Path | None,
    embedder_status: EmbedderStatus | None,
) -> RestoreReport:
    from engine.facade.factory import open_engine
    from engine.storage.schema.database import make_db_engine
    from engine.storage.server.backup import (
        database_holdings,
        load_server_backup,
        not_empty,
        shown_url,
    )
    from engine.storage.server.parts import rebuild_derived

    _schema_known(backup, exactly_head=True)
    probe = make_db_engine(url)
    where = shown_url(probe)
    try:
        held = database_holdings(probe)
    finally:
        probe.dispose()
    if held:
        raise not_empty(where, held)
    engine = open_engine(home=home, db_url=url, model=model, embedder_status=embedder_status)
    try:
        with engine.write_lock():
            loaded = load_server_backup(engine.db, backup)
            check = rebuild_derived(engine)
        collections = [{"name": row.name} for row in engine.collections_by_name().values()]
    finally:
        engine.db.dispose()
    # The summary is the backup's manifest, JSON read from disk: typed here, once.
    report = {
        **backup.summary(),
        "restored": where,
        "collections": sorted(collections, key=lambda item: item["name"]),
        "rows": loaded,
        "check": _check_of(check),
    }
    return cast("RestoreReport", report)


def _check_of(report: Mapping[str, object]) -> RestoreCheck:
    """What the check after a restore found, in reindex's words: all zero and empty lists
    for a backup restored whole."""
    keys = ("added", "changed", "removed", "problems", "forks", "duplicates", "notes")
    return cast("RestoreCheck", {key: report.get(key) for key in keys})  # reindex's report
