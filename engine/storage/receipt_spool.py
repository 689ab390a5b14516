"""Receipts waiting to be stored: where a recall's receipt goes when the SQLite index's write
lock stays taken (a writer stopped while it holds it, a long import), so that the recall
answers at once instead of waiting for that writer.

A recall stores its receipt in the index (engine/storage/reads.py `add_receipt`), waiting at
most READER_WRITE_WAIT_MS (engine/storage/sqlite_settings.py). If the lock is still taken
then, the receipt is written here instead, one JSON file per digest in
`<folder of the index>/.receipts-pending/`, in the shape the recall issued it. It counts as
stored from that moment: a presented receipt is looked up in the index, then here, so the
replay fence and MEMORY_RECEIPT_INVALID work as for any stored receipt. The next receipt
written to the index (any process's recall) moves the waiting ones into it in the same
way, and so does everything that lists, counts, verifies or deletes receipts first
(engine/memory/receipts.py), so no receipt is missed by the audit views or escapes a purge.

A file is written to a temp name and renamed, so a reader never sees half of one; a temp
file left by a killed process is removed by the next move. Moving a receipt twice (two
processes at once, or a kill between the row's commit and the file's removal) stores the
same row twice, which is one row (the upsert of the same digest). Only the standard library:
the cold CLI's sqlite3 reader uses it too."""

from __future__ import annotations

import json
import os
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

PENDING_FOLDER = ".receipts-pending"
_TEMP_PREFIX = ".tmp-"
_RECEIPT_NAME = re.compile(r"^[0-9a-f]{64}\.json$")
_FIELDS = ("caller", "session", "issuedAt", "memoryIds", "spanHashes", "digest")


def pending_folder(index: Path) -> Path:
    """Where the receipts of the SQLite index file `index` wait (beside it, as its lock)."""
    return index.parent / PENDING_FOLDER


@dataclass(frozen=True)
class PendingReceipt:
    path: Path
    receipt: dict[str, Any]  # the public shape, as the recall issued it


def keep(folder: Path, receipt: dict[str, Any]) -> None:
    """Write `receipt` (as a recall issued it) to wait in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    data = json.dumps({key: receipt[key] for key in _FIELDS}, sort_keys=True)
    temp = folder / f"{_TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    try:
        temp.write_text(data + "\n", encoding="utf-8")
        temp.replace(folder / f"{receipt['digest']}.json")
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _read(path: Path) -> dict[str, Any] | None:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(document, dict) or document.get("digest") != path.stem:
        return None
    texts = [document.get(key) for key in ("caller", "session", "issuedAt")]
    lists = [document.get(key) for key in ("memoryIds", "spanHashes")]
    if not all(isinstance(text, str) for text in texts) or not all(
        isinstance(items, list) and all(isinstance(item, str) for item in items) for items in lists
    ):
        return None  # not a receipt this module wrote: ignored
    try:
        datetime.fromisoformat(document["issuedAt"].replace("Z", "+00:00"))
    except ValueError:
        return None
    return {key: document[key] for key in _FIELDS}


def find(folder: Path, digest: str) -> dict[str, Any] | None:
    """The waiting receipt with this digest, in its public shape, or None."""
    if not _RECEIPT_NAME.match(f"{digest}.json"):
        return None  # not a digest: no file could hold it (nor may it name a path)
    return _read(folder / f"{digest}.json")


def waiting(folder: Path) -> list[PendingReceipt]:
    """Every receipt waiting in `folder`, oldest name first; temp files of dead processes
    are removed on the way."""
    try:
        paths = sorted(folder.iterdir())
    except OSError:  # no folder: nothing ever waited
        return []
    found: list[PendingReceipt] = []
    for path in paths:
        name = path.name
        if name.startswith(_TEMP_PREFIX):
            _remove_if_abandoned(path, name)
        elif _RECEIPT_NAME.match(name):
            receipt = _read(path)
            if receipt is not None:
                found.append(PendingReceipt(path, receipt))
    return found


def stored(receipts: list[PendingReceipt]) -> None:
    """These receipts are in the index now: their files go."""
    for pending in receipts:
        pending.path.unlink(missing_ok=True)


def _remove_if_abandoned(path: Path, name: str) -> None:
    pid_text = name[len(_TEMP_PREFIX) :].partition("-")[0]
    if not pid_text.isdigit() or _alive(int(pid_text)):
        return
    path.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True
