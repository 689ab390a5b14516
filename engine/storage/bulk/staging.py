"""A bulk write's fact files (engine/storage/bulk/__init__.py): staged while the write plans its
facts, made durable before the rows commit, moved into their fact folders after.

The files go to the stager (this process, or a child for a large write:
engine/storage/bulk/file_stager.py) as each fact is planned, not after the plan: the child then
creates them while this process renders the next ones, and a 100k import no longer waits
2.8 s for a staging loop of its own. They land in `<collection root>/.import-<pid>-<hex>/`,
outside `facts/`, so nothing sees them until they are moved; a write that fails before its
commit kills the child and rolls its staging folders back (engine/storage/bulk/recovery.py)."""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from engine.storage.bulk.file_stager import Stager, stager_for
from engine.storage.bulk.recovery import STAGING_PREFIX, _settle
from engine.storage.bulk.rows import FactFolders, PlannedFact
from engine.storage.crash_hook import CrashPoint, crash_at, crash_within
from engine.storage.embedded.factfiles import fsync_file, fsync_folder, sync_filesystem

if TYPE_CHECKING:
    from engine.storage.mode import StoreEngine


class StagedFiles:
    """The staging of one bulk write, for at most `expected` files."""

    def __init__(self, engine: StoreEngine, expected: int, crash: CrashPoint) -> None:
        self._engine = engine
        self._expected = expected
        self._crash = crash
        self._token = f"{os.getpid()}-{secrets.token_hex(4)}"
        self._stagings: dict[Path, Path] = {}  # collection root -> its staging folder
        # Each file by its folder (staged and final) and its name: no Path is built per file.
        self._folders: dict[tuple[Path, str], tuple[Path, Path]] = {}  # (root, day) -> both
        self._names: dict[tuple[Path, str], list[str]] = {}  # (root, day) -> names, in order
        self._writer: Stager | None = None
        self.count = 0

    def stage(self, item: PlannedFact) -> None:
        """Hand one planned fact's file to the stager."""
        _, day, name = item.row.rel_path.split("/")
        where = (item.root, day)
        folders = self._folders.get(where)
        if folders is None:
            staging = self._staging(item.root)
            folders = self._folders[where] = (staging / f"facts/{day}", item.root / f"facts/{day}")
            self._names[where] = []
        assert self._writer is not None  # started with the first staging folder
        self._writer.create(folders[0], name, item.content)
        self._names[where].append(name)
        self.count += 1
        crash_at(self._crash, "staged", self.count)

    def _staging(self, root: Path) -> Path:
        staging = self._stagings.get(root)
        if staging is None:
            if self._writer is None:
                self._writer = stager_for(self._expected)
            staging = self._stagings[root] = root / f"{STAGING_PREFIX}{self._token}"
            staging.mkdir(parents=True)
            crash_at(self._crash, "staged", 0)
        return staging

    def finish(self, *, durable: bool) -> None:
        """Every file written (raising the first failure), and on disk when `durable`: one
        syncfs per staging folder's filesystem, or an fsync per file where it does not exist."""
        if self._writer is None:
            return
        self._writer.finish()
        if not durable:
            return
        if not all(sync_filesystem(staging) for staging in self._stagings.values()):
            for where, names in self._names.items():
                folder = self._folders[where][0]
                for name in names:
                    fsync_file(folder / name)
        for folder in self._writer.folders():
            fsync_folder(folder)

    def abandon(self) -> None:
        """After a failure before the commit: stop the stager and roll the staging folders
        back (or forward, should the commit have gone through after all). If even that fails,
        the next recovery does it; the original error is the one to report."""
        if self._writer is not None:
            self._writer.close()
        for staging in self._stagings.values():
            with contextlib.suppress(Exception):
                _settle(self._engine, staging)

    def publish(self, *, durable: bool) -> None:
        """Move the staged files into their fact folders (after the commit). A day folder that
        does not exist yet (a new store, the first write of a day) is its staged folder
        renamed whole: one rename instead of one per file (78k renames were 1.3 s of a 100k
        import)."""
        staged, final = FactFolders(), FactFolders()
        renamed: set[Path] = set()  # folders whose entries a whole-folder rename changed
        done = 0
        try:
            for where, names in self._names.items():
                source, target = self._folders[where]
                # Absent: checked under this hold of the write lock, which every fact writer
                # takes.
                if not target.exists() and _renamed(source, target):
                    renamed.add(target.parent)
                    crash_within(self._crash, "published", done, done + len(names))
                    done += len(names)
                    continue
                for name in names:
                    staged.move(source, target, name, final)
                    done += 1
                    crash_at(self._crash, "published", done)
            if durable:
                for folder in final.folders() | renamed:
                    fsync_folder(folder)
        finally:
            staged.close()
            final.close()

    def close(self) -> None:
        """Release the stager: its pipes, or the folders it holds open; a child that still
        runs (only when the write failed) is stopped."""
        if self._writer is not None:
            self._writer.close()

    def remove(self) -> None:
        """Remove the staging folders, emptied by `publish`."""
        for staging in self._stagings.values():
            shutil.rmtree(staging, ignore_errors=True)


def _renamed(source: Path, target: Path) -> bool:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        source.rename(target)
    except OSError:  # made meanwhile after all, or not renameable: file by file
        return False
    return True
