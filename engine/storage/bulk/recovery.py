"""Recovery from a bulk write that was killed (engine/storage/bulk/__init__.py, "The write phase"):
every staging folder a dead writer left is settled file by file, a staged file whose row
committed moved into place (rolled forward), any other deleted (rolled back); then the temp
files of interrupted atomic writes are removed. It runs at the start of every bulk write,
at the store's open and in reindex."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session
from sqlmodel import col

from engine.contract.errors import MemoryFailure
from engine.storage.embedded.factfiles import TEMP_PREFIX, fsync_folder, remove_temp_files
from engine.storage.reads import chunks
from engine.storage.schema import tables

if TYPE_CHECKING:
    from engine.storage.mode import StoreEngine

STAGING_PREFIX = ".import-"


def _staging_folders(engine: StoreEngine, *, skip_live: bool = False) -> list[Path]:
    return sorted(
        folder
        for row in engine.collections_by_name().values()
        for folder in Path(row.root).glob(f"{STAGING_PREFIX}*")
        if folder.is_dir() and not (skip_live and _writer_alive(folder))
    )


def _writer_alive(staging: Path) -> bool:
    """The process named in a staging folder (`.import-<pid>-<hex>`) still runs: probably an
    import in progress (or a pid reused since). Where that cannot be told, it is alive."""
    pid = staging.name.removeprefix(STAGING_PREFIX).partition("-")[0]
    if os.name != "posix" or not pid.isdigit():
        return os.name != "posix"
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as another user
        return True
    return True


def _temp_folders(engine: StoreEngine) -> list[Path]:
    return [engine.home, *(Path(row.root) for row in engine.collections_by_name().values())]


def interrupted_writes_left(engine: StoreEngine, *, skip_live: bool = False) -> bool:
    """Whether a crashed write left anything behind (a staging folder or a `.tmp-*` file):
    a cheap look, without the write lock, to decide whether recovery is needed."""
    if _staging_folders(engine, skip_live=skip_live):
        return True
    return any(
        _holds_temp_files(folder) or _fact_folders_hold_temp_files(folder)
        for folder in _temp_folders(engine)
    )


def _holds_temp_files(folder: Path) -> bool:
    """Whether `folder` holds a `.tmp-*` entry: one listing, each name tested by its prefix
    (a fact folder holds every fact file of its day; at a million files pathlib's glob, which
    matches each name in Python, took 1.1 s of every open, this 0.45 s)."""
    try:
        with os.scandir(folder) as entries:
            return any(entry.name.startswith(TEMP_PREFIX) for entry in entries)
    except OSError:  # missing or unreadable: glob found nothing there either
        return False


def _fact_folders_hold_temp_files(root: Path) -> bool:
    try:
        with os.scandir(root / "facts") as folders:
            return any(entry.is_dir() and _holds_temp_files(Path(entry.path)) for entry in folders)
    except OSError:
        return False


def recover_interrupted_writes(engine: StoreEngine, *, skip_live: bool = True) -> dict[str, int]:
    """Settle what a killed write left behind, under the write lock (re-entrant: callers that
    hold it already, such as reindex, may call it). Every staging folder of an interrupted bulk
    write is settled file by file, a staged file whose row is committed moved into place
    (`rolledForward`), any other deleted (`rolledBack`); then the temp files of interrupted
    atomic writes in the collection roots and the home are removed (`tempFiles`).

    Returns those three counts; all zero when there was nothing to do, which costs a few
    directory listings and no lock. By default (`skip_live`) the staging folder of a process
    that still runs is left alone: it is an import in progress, which holds the lock, and
    waiting for it would stall whoever opens the store meanwhile (a recall); if the lock stays
    busy anyway, recovery is left to the next write. A bulk write passes `skip_live=False`: it
    holds the lock, so no other import can be running and every staging folder is a
    leftover (its pid reused)."""
    done = {"rolledBack": 0, "rolledForward": 0, "tempFiles": 0}
    if not interrupted_writes_left(engine, skip_live=skip_live):
        return done
    try:
        with engine.write_lock():
            for staging in _staging_folders(engine):
                forward, back = _settle(engine, staging)
                done["rolledForward"] += forward
                done["rolledBack"] += back
            for folder in _temp_folders(engine):
                done["tempFiles"] += remove_temp_files(folder)
    except MemoryFailure as failure:
        if not skip_live or failure.code != "MEMORY_WRITE_LEASE_BUSY":
            raise
    return done


def _settle(engine: StoreEngine, staging: Path) -> tuple[int, int]:
    """Roll one staging folder forward or back, file by file (see the module docstring)."""
    root = staging.parent
    collections = {Path(row.root): name for name, row in engine.collections_by_name().items()}
    staged = sorted(staging.glob("facts/*/mem-*.md"))
    rows: dict[str, tables.FactRow] = {}
    with Session(engine.db, expire_on_commit=False) as session:
        for chunk in chunks([path.stem for path in staged], 500):
            found = session.scalars(
                select(tables.FactRow).where(col(tables.FactRow.record_id).in_(chunk))
            )
            rows.update({row.record_id: row for row in found})
    forward = back = 0
    folders: set[Path] = set()
    for path in staged:
        rel_path = path.relative_to(staging).as_posix()
        row = rows.get(path.stem)
        final = root / rel_path
        if (
            row is not None
            and row.collection == collections.get(root)
            and Path(row.rel_path).as_posix() == rel_path
            and not final.exists()
        ):
            final.parent.mkdir(parents=True, exist_ok=True)
            path.replace(final)
            folders.add(final.parent)
            forward += 1
        else:
            back += 1
    for folder in folders:
        fsync_folder(folder)
    shutil.rmtree(staging, ignore_errors=True)
    return forward, back
