"""The embedded mode's backup and the placing of one into a new home (engine/storage/backup.py
says what a backup folder is).

One instant, with writers held up for as short a time as can be:

1. without the lock, every collection's fact files are copied, each file's identity (inode,
   size, mtime) noted as it was before its copy: fact files are only ever replaced whole
   (temp file + rename), so an unchanged identity means an unchanged file;
2. under the home's write lock (which settles unfinished writes first, like any writer's),
   the roots are listed again: files new or replaced since step 1 are copied, copies of files
   gone are dropped; collections.yaml, the keyed API's secret and the journal entries left
   out of the index (forks a person must look at) are copied; and a read transaction is
   opened on the index, a WAL snapshot of that instant, with the receipts that wait beside
   the index for it to be free (engine/storage/embedded/receipt_spool.py);
3. the lock is let go and SQLite's backup API copies the index from that snapshot.

The files and the index of the backup are so of one instant, and a writer waits only for
step 2 (a directory listing and the files written since step 1)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

from engine.contract import visibility
from engine.contract.errors import MemoryFailure
from engine.contract.normalize import iso_utc
from engine.storage.backup import Backup, BackupWriter, sync_tree
from engine.storage.embedded import receipt_spool
from engine.storage.embedded.cursor_secret import SECRET_FILE
from engine.storage.embedded.factfiles import iter_fact_paths, write_atomically
from engine.storage.journal import JOURNAL_FOLDER

if TYPE_CHECKING:
    from engine.storage.mode import StoreEngine

INDEX = "index.sqlite"
SECRET = "keyed-secret"
PENDING = "receipts-pending"  # in the backup; receipt_spool.PENDING_FOLDER beside the index
# What the backup counts from its index copy: the manifest's and the reports' figures.
COUNTED = ("facts", "receipts", "proposals", "decisions", "collections")

Identity = tuple[int, int, int]  # inode, size, mtime in ns: a version of a fact file


def _identity(path: Path) -> Identity | None:
    try:
        found = path.stat()
    except FileNotFoundError:
        return None
    return (found.st_ino, found.st_size, found.st_mtime_ns)


class _FactCopies:
    """The backup's copies of the fact files: backup name -> the source's identity when its
    copy was taken."""

    def __init__(self, writer: BackupWriter) -> None:
        self._writer = writer
        self.copied: dict[str, Identity] = {}

    def sync(self, engine: StoreEngine) -> int:
        """Copy what is new or replaced since the last pass, drop what is gone; how many
        files were copied."""
        sources: dict[str, Path] = {}
        for name, row in engine.collections_by_name().items():
            for path in iter_fact_paths(Path(row.root)):
                sources[f"collections/{name}/facts/{path.parent.name}/{path.name}"] = path
        for gone in set(self.copied) - set(sources):
            (self._writer.staging / gone).unlink(missing_ok=True)
            del self.copied[gone]
        copied = 0
        for name, source in sources.items():
            before = _identity(source)
            if before is None or self.copied.get(name) == before:
                continue  # gone meanwhile (the next pass drops its copy), or unchanged
            try:
                shutil.copyfile(source, self._writer.path(name))
            except FileNotFoundError:  # a lost race's file, taken back meanwhile (no lock yet)
                (self._writer.staging / name).unlink(missing_ok=True)
                self.copied.pop(name, None)
                continue
            self.copied[name] = before  # noted before the copy: a later replace shows
            copied += 1
        return copied


def take_embedded_backup(engine: StoreEngine, target: Path) -> dict[str, Any]:
    """Write the home's backup into `target` (checked by the caller: new or empty); what a
    person is told about it."""
    index = engine.sqlite_path
    if index is None:
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID",
            "This store's index is not a SQLite file, so it cannot be copied as one. Back up "
            "its database with that database's own tools.",
        )
    writer = BackupWriter(target, "embedded")
    try:
        copies = _FactCopies(writer)
        copies.sync(engine)  # step 1: no lock
        snapshot = sqlite3.connect(index, timeout=30, isolation_level=None)
        try:
            waited = time.perf_counter()
            with engine.write_lock():  # step 2: settles unfinished writes first
                held = time.perf_counter()
                from engine.storage.bulk.recovery import recover_interrupted_writes

                recover_interrupted_writes(engine, skip_live=False)
                late = copies.sync(engine)
                _copy_home_files(engine, writer)
                waiting = _snapshot_with_waiting_receipts(index, snapshot, writer)
                taken_at = iso_utc(engine.now())
                released = time.perf_counter()
            copy = sqlite3.connect(writer.path(INDEX))  # step 3: from the snapshot
            try:
                snapshot.backup(copy)
                copy.execute("PRAGMA journal_mode=DELETE")  # one file, no -wal beside it
                counts = _counts(copy, waiting)
                schema = str(copy.execute("SELECT version_num FROM alembic_version").fetchone()[0])
            finally:
                copy.close()
        finally:
            snapshot.close()
        counts["factFiles"] = len(copies.copied)
        written = writer.finish(taken_at=taken_at, schema=schema, counts=counts)
    except BaseException:
        writer.abandon()
        raise
    return {
        "backup": str(target),
        "mode": "embedded",
        "takenAt": taken_at,
        "schema": schema,
        **counts,
        **written,
        "writersPausedMs": round((released - held) * 1000, 1),
        "lockWaitMs": round((held - waited) * 1000, 1),
        "copiedUnderLock": late,
    }


def _copy_home_files(engine: StoreEngine, writer: BackupWriter) -> None:
    """collections.yaml, the keyed API's cursor key and the journal's left-out entries."""
    if engine.collections_file.is_file():
        shutil.copyfile(engine.collections_file, writer.path("collections.yaml"))
    secret = engine.home / SECRET_FILE
    if secret.is_file():
        shutil.copyfile(secret, writer.path(SECRET))
    for entry in sorted((engine.home / JOURNAL_FOLDER).glob("mem-*.json")):
        shutil.copyfile(entry, writer.path(f"inflight/{entry.name}"))


def _snapshot_with_waiting_receipts(
    index: Path, snapshot: sqlite3.Connection, writer: BackupWriter
) -> set[str]:
    """Open the index's snapshot, and copy the receipts that wait beside the index for it to
    be free (engine/storage/embedded/receipt_spool.py: stored, but not in the index yet). SQLite's
    write lock is held meanwhile, so that no waiting receipt moves into the index between
    the two: each receipt issued before the snapshot is in one of them. The digests copied."""
    gate = sqlite3.connect(index, timeout=30, isolation_level=None)
    try:
        gate.execute("BEGIN IMMEDIATE")
        snapshot.execute("BEGIN")
        snapshot.execute("SELECT count(*) FROM facts").fetchone()  # the snapshot is taken
        found = receipt_spool.waiting(receipt_spool.pending_folder(index))
        for pending in found:
            shutil.copyfile(pending.path, writer.path(f"{PENDING}/{pending.path.name}"))
        gate.execute("ROLLBACK")
    finally:
        gate.close()
    return {pending.path.stem for pending in found}


def _counts(index: sqlite3.Connection, waiting: set[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for table in COUNTED:
        found[table] = int(index.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    stored = {row[0] for row in index.execute("SELECT digest FROM receipts")} if waiting else set()
    found["receipts"] += len(waiting - stored)  # waiting ones count as stored (receipt_spool)
    # Live facts, whatever their expiry (engine/contract/visibility.py), as backup_rows counts.
    found["currentFacts"] = int(
        index.execute(f"SELECT count(*) FROM facts WHERE {visibility.live_sql()}").fetchone()[0]
    )
    return found


# -- restoring ------------------------------------------------------------------------------


def home_is_empty(home: Path) -> bool:
    return not home.exists() or (home.is_dir() and not any(home.iterdir()))


def place_embedded_backup(backup: Backup, home: Path) -> list[dict[str, str]]:
    """Write the backup's store into `home` (new or empty: the caller checked), whole or not
    at all: into a hidden sibling folder first, renamed into place at the end. Every
    collection comes back under `<home>/collections/<name>`, wherever its root was; the
    index and collections.yaml are told so. Returns each collection's name and new root."""
    staging = home.parent / f".{home.name}.restoring-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    home.parent.mkdir(parents=True, exist_ok=True)
    staging.mkdir()
    try:
        for name in backup.files:
            if name.startswith("collections/") or name == INDEX:
                target = staging / name
            elif name == SECRET:
                target = staging / SECRET_FILE
            elif name.startswith("inflight/"):
                target = staging / JOURNAL_FOLDER / name.removeprefix("inflight/")
            elif name.startswith(f"{PENDING}/"):  # moved into the index at its next receipt
                target = staging / receipt_spool.PENDING_FOLDER / name.removeprefix(PENDING + "/")
            else:
                continue  # collections.yaml: rewritten below with the new roots
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(backup.path(name), target)
        if (staging / SECRET_FILE).is_file():
            (staging / SECRET_FILE).chmod(stat.S_IRUSR | stat.S_IWUSR)
        roots = _rehome_collections(backup, staging, home)
        sync_tree(staging)
        if home.is_dir():
            home.rmdir()  # empty: checked by the caller
        staging.rename(home)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return roots


def _rehome_collections(backup: Backup, staging: Path, home: Path) -> list[dict[str, str]]:
    """Point the index's collections and collections.yaml at the roots under the new home."""
    listing: dict[str, Any] = {"collections": []}
    if "collections.yaml" in backup.files:
        loaded = yaml.safe_load(backup.path("collections.yaml").read_text(encoding="utf-8"))
        listing = loaded if isinstance(loaded, dict) else listing
    index = sqlite3.connect(staging / INDEX)
    try:
        names = [str(row[0]) for row in index.execute("SELECT name FROM collections")]
        roots = {name: str(home / "collections" / name) for name in names}
        with index:
            for name, root in roots.items():
                index.execute("UPDATE collections SET root = ? WHERE name = ?", (root, name))
                (staging / "collections" / name / "facts").mkdir(parents=True, exist_ok=True)
    finally:
        index.close()
    for entry in listing.get("collections") or []:
        if isinstance(entry, dict) and entry.get("name") in roots:
            entry["root"] = roots[entry["name"]]
    write_atomically(staging / "collections.yaml", yaml.safe_dump(listing, sort_keys=False))
    return [{"name": name, "root": root} for name, root in sorted(roots.items())]
