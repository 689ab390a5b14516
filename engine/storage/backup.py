"""A store's backup: a folder with a manifest, written whole or not at all, and checked whole
before a restore writes anything (docs/reliability.md, "Backup and restore").

Two layouts, one per storage mode, under one manifest (`manifest.json`):

- embedded (`engine/storage/embedded/backup.py`): what is canonical (every collection's fact
  files, `collections.yaml`) and what only the index holds (receipts, proposals, decisions,
  labels, tokens: a copy of `index.sqlite`), taken at one instant under the home's write lock;
- server (`engine/storage/server/backup.py`): the store's tables as JSON lines, read in one
  REPEATABLE READ transaction (a snapshot: writers are never held up).

The manifest lists every file with its size and SHA-256, so a backup that was cut short,
edited or damaged is refused by name before a restore begins. A backup is written into a
hidden sibling folder and renamed into place once complete: a killed backup leaves no folder
at the path asked for."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.contract.errors import MemoryFailure
from engine.storage.embedded.factfiles import fsync_folder, sync_filesystem

FORMAT = "gno-tui-backup"
VERSION = 1
MANIFEST = "manifest.json"
MODES = ("embedded", "server")
# What a manifest may name, relative to the backup folder: nothing else is read or copied, so
# an edited manifest cannot make a restore write outside the store.
_ALLOWED = (
    re.compile(r"index\.sqlite"),
    re.compile(r"collections\.yaml"),
    re.compile(r"keyed-secret"),
    re.compile(r"inflight/mem-[0-9a-f]{16}\.json"),
    re.compile(r"receipts-pending/[0-9a-f]{64}\.json"),
    re.compile(r"collections/[a-z0-9][a-z0-9_-]{0,63}/facts/[^/]{1,64}/mem-[0-9a-f]{16}\.md"),
    re.compile(r"tables/[a-z_]{1,40}\.jsonl"),
)
_MAX_MANIFEST_BYTES = 512 * 1024 * 1024  # a million files' entries fit well inside
_CHUNK = 1024 * 1024


def invalid(where: Path, why: str) -> MemoryFailure:
    return MemoryFailure(
        "MEMORY_BACKUP_INVALID",
        f"{where} is not a usable gno-tui backup: {why}. Pass the folder `gno-tui backup` "
        "wrote, unchanged; nothing was restored.",
    )


def file_digest(path: Path) -> tuple[int, str]:
    """(size in bytes, SHA-256 hex) of a file, read in chunks."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
            size += len(chunk)
    return size, digest.hexdigest()


@dataclass
class Backup:
    """A backup folder whose manifest was read and whose every file matched it."""

    folder: Path
    manifest: dict[str, Any]

    @property
    def mode(self) -> str:
        return str(self.manifest["mode"])

    @property
    def files(self) -> list[str]:
        return sorted(self.manifest["files"])

    def path(self, name: str) -> Path:
        return self.folder / name

    def summary(self) -> dict[str, Any]:
        """What a person is told about the backup: where, when, which store, how much."""
        return {
            "backup": str(self.folder),
            "mode": self.mode,
            "takenAt": self.manifest["takenAt"],
            "schema": self.manifest["schema"],
            **self.manifest["counts"],
        }


def read_backup(folder: Path) -> Backup:
    """The backup in `folder`, every file checked against the manifest (size and SHA-256);
    MEMORY_BACKUP_INVALID naming the first problem, before anything is written anywhere."""
    folder = folder.expanduser()
    if not folder.is_dir():
        what = "a file" if folder.exists() else "missing"
        raise invalid(folder, f"it is {what}, not a backup folder")
    manifest_path = folder / MANIFEST
    try:
        if manifest_path.stat().st_size > _MAX_MANIFEST_BYTES:
            raise invalid(folder, f"its {MANIFEST} is too large to be a manifest")
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise invalid(
            folder, f"it has no {MANIFEST} (a backup cut short, or another folder)"
        ) from None
    except (OSError, ValueError) as exc:
        raise invalid(folder, f"its {MANIFEST} cannot be read ({exc})") from None
    _check_manifest(folder, manifest)
    for name, expected in sorted(manifest["files"].items()):
        path = folder / name
        try:
            size, digest = file_digest(path)
        except FileNotFoundError:
            raise invalid(folder, f"{name} is missing") from None
        except OSError as exc:
            raise invalid(folder, f"{name} cannot be read ({exc.strerror or exc})") from None
        if (size, digest) != (expected["bytes"], expected["sha256"]):
            raise invalid(folder, f"{name} was changed or damaged after the backup (checksum)")
    return Backup(folder.resolve(), manifest)


def _check_manifest(folder: Path, manifest: Any) -> None:
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise invalid(folder, f"its {MANIFEST} is not a gno-tui backup manifest")
    if manifest.get("version") != VERSION:
        raise invalid(
            folder,
            f"it is backup format {manifest.get('version')!r}; this gno-tui reads format "
            f"{VERSION} (a newer gno-tui wrote it: upgrade gno-tui)",
        )
    if manifest.get("mode") not in MODES:
        raise invalid(folder, f"its mode {manifest.get('mode')!r} is neither of {MODES}")
    files = manifest.get("files")
    if not isinstance(files, dict) or not isinstance(manifest.get("counts"), dict):
        raise invalid(folder, f"its {MANIFEST} lacks its list of files or its counts")
    for name, entry in files.items():
        if not any(pattern.fullmatch(name) for pattern in _ALLOWED) or ".." in name:
            raise invalid(folder, f"its {MANIFEST} names a file a backup never holds: {name!r}")
        if not (
            isinstance(entry, dict)
            and isinstance(entry.get("bytes"), int)
            and isinstance(entry.get("sha256"), str)
        ):
            raise invalid(folder, f"its {MANIFEST} entry for {name} lacks a size or checksum")
    for key in ("takenAt", "schema"):
        if not isinstance(manifest.get(key), str):
            raise invalid(folder, f"its {MANIFEST} lacks {key}")


# -- writing one ------------------------------------------------------------------------------


@dataclass
class BackupWriter:
    """A backup being written into a hidden sibling of its final folder, moved into place by
    `finish` once every file and the manifest are on disk."""

    target: Path
    mode: str
    staging: Path = field(init=False)

    def __post_init__(self) -> None:
        self.target.parent.mkdir(parents=True, exist_ok=True)  # e.g. ~/gno-backups, once
        self.staging = self.target.parent / f".{self.target.name}.partial-{os.getpid()}"
        shutil.rmtree(self.staging, ignore_errors=True)  # a killed earlier try of this pid
        self.staging.mkdir()

    def path(self, name: str) -> Path:
        path = self.staging / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path

    def finish(self, *, taken_at: str, schema: str, counts: dict[str, Any]) -> dict[str, Any]:
        """Checksum every file, write the manifest, make it all durable, move it into place."""
        files: dict[str, dict[str, Any]] = {}
        total = 0
        for path in sorted(p for p in self.staging.rglob("*") if p.is_file()):
            size, digest = file_digest(path)
            files[path.relative_to(self.staging).as_posix()] = {"bytes": size, "sha256": digest}
            total += size
        manifest = {
            "format": FORMAT,
            "version": VERSION,
            "mode": self.mode,
            "takenAt": taken_at,
            "schema": schema,
            "counts": counts,
            "files": files,
        }
        (self.staging / MANIFEST).write_text(
            json.dumps(manifest, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )
        sync_tree(self.staging)
        if self.target.is_dir():  # an empty folder the user made for it (checked empty)
            self.target.rmdir()
        self.staging.rename(self.target)
        return {"files": len(files), "bytes": total}

    def abandon(self) -> None:
        shutil.rmtree(self.staging, ignore_errors=True)


def sync_tree(folder: Path) -> None:
    """Make every file under `folder` durable: one syncfs where Linux has it, else an fsync
    per file and folder."""
    if sync_filesystem(folder):
        return
    for path in sorted(folder.rglob("*"), reverse=True):
        fsync_folder(path)  # a file's content, or a folder's entries
    fsync_folder(folder)


def check_backup_target(target: Path, protected: list[Path]) -> Path:
    """The resolved folder a backup may be written to: new or empty, in a folder that exists
    or can be made, and not inside the store it backs up (`protected`: the home and the
    collection roots). MEMORY_USAGE_INVALID saying how, before anything is written."""
    resolved = target.expanduser().resolve()

    def refuse(why: str) -> MemoryFailure:
        return MemoryFailure(
            "MEMORY_USAGE_INVALID",
            f"Cannot write a backup to {target}: {why}. Pass a new folder outside the store, "
            "e.g. `gno-tui backup ~/gno-backups/$(date +%F)`; nothing was written.",
        )

    if resolved.exists():
        if not resolved.is_dir():
            raise refuse("it is a file")
        if any(resolved.iterdir()):
            raise refuse("the folder is not empty (a backup never writes over another)")
    existing = next(folder for folder in resolved.parents if folder.exists())
    if not existing.is_dir():
        raise refuse(f"{existing} is a file")
    if not os.access(existing, os.W_OK):
        raise refuse(f"its folder {existing} cannot be written")
    for folder in protected:
        inside = folder.resolve()
        if resolved == inside or inside in resolved.parents:
            raise refuse(f"it is inside the store's own folder {inside}")
    return resolved
