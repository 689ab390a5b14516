"""Receipts waiting to be stored: where a recall's receipt goes when the SQLite index's write
lock stays taken (a writer stopped while it holds it, a long import), so that the recall
answers at once instead of waiting for that writer.

A recall stores its receipt in the index (engine/storage/reads/__init__.py `add_receipt`), waiting
at most READER_WRITE_WAIT_MS (engine/storage/embedded/sqlite_settings.py). If the lock is still
taken then, the receipt is written here instead, one JSON file per digest in
`<folder of the index>/.receipts-pending/`, in the shape the recall issued it. It counts as
stored from that moment: a presented receipt is looked up in the index, then here, so the
replay fence and MEMORY_RECEIPT_INVALID work as for any stored receipt. The next receipt
written to the index (any process's recall) moves the waiting ones into it in the same
way, and so does everything that lists, counts, verifies or deletes receipts first
(engine/memory/receipts.py), so no receipt is missed by the audit views or escapes a purge.

A file is written to a temp name and renamed, so a reader never sees half of one; a temp
file left by a killed process is removed by the next move. Moving a receipt twice (two
processes at once, or a kill between the row's commit and the file's removal) stores the
same row twice, which is one row (the upsert of the same digest).

The folder holds at most `$GNO_TUI_RECEIPTS_WAITING` receipts (WAITING_MAX, 10,000: about
3 MB). A writer that keeps the lock past that many recalls is stopped or stuck, not busy:
the next recall is refused with MEMORY_WRITE_LEASE_BUSY (retry once the writer is done)
rather than filling the disk one file per recall. Only the standard library and the
contract's error type: the cold CLI's sqlite3 reader uses it too."""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from engine.contract.errors import MemoryFailure

PENDING_FOLDER = ".receipts-pending"
_TEMP_PREFIX = ".tmp-"
_RECEIPT_NAME = re.compile(r"^[0-9a-f]{64}\.json$")
_FIELDS = ("caller", "session", "issuedAt", "memoryIds", "spanHashes", "digest")
WAITING_ENV = "GNO_TUI_RECEIPTS_WAITING"
WAITING_MAX = 10_000
log = logging.getLogger("engine.storage")


def pending_folder(index: Path) -> Path:
    """Where the receipts of the SQLite index file `index` wait (beside it, as its lock)."""
    return index.parent / PENDING_FOLDER


def waiting_max() -> int:
    """The bound on waiting receipts: $GNO_TUI_RECEIPTS_WAITING, else WAITING_MAX (a value
    that is not a whole number of at least 1 is ignored, logged, as the compaction's are)."""
    given = os.environ.get(WAITING_ENV, "").strip()
    if not given:
        return WAITING_MAX
    if given.isascii() and given.isdigit() and int(given) >= 1:
        return int(given)
    log.warning(
        "%s=%r is not a whole number of at least 1: %d is used", WAITING_ENV, given, WAITING_MAX
    )
    return WAITING_MAX


@dataclass(frozen=True)
class PendingReceipt:
    path: Path
    receipt: dict[str, Any]  # the public shape, as the recall issued it


def keep(folder: Path, receipt: dict[str, Any]) -> None:
    """Write `receipt` (as a recall issued it) to wait in `folder`; MEMORY_WRITE_LEASE_BUSY
    when the folder already holds its bound (a writer has held the index for that long)."""
    bound = waiting_max()
    folder.mkdir(parents=True, exist_ok=True)
    if (folder / f"{receipt['digest']}.json").exists():
        return  # the same receipt already waits: stored once
    held = _count_waiting(folder, bound)
    if held >= bound:
        raise MemoryFailure(
            "MEMORY_WRITE_LEASE_BUSY",
            f"The index has been locked by a writer for {held} recalls: that many receipts "
            f"already wait in {folder} (the bound, {WAITING_ENV}). The writer is stopped or "
            "stuck; recall again once it is done, or end it (a stopped process holds the "
            "lock until it is continued or killed).",
        )
    data = json.dumps({key: receipt[key] for key in _FIELDS}, sort_keys=True)
    temp = folder / f"{_TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
    try:
        temp.write_text(data + "\n", encoding="utf-8")
        temp.replace(folder / f"{receipt['digest']}.json")
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _count_waiting(folder: Path, upto: int) -> int:
    """How many receipts wait in `folder`, counting no further than `upto`."""
    held = 0
    with os.scandir(folder) as entries:
        for entry in entries:
            if entry.name.endswith(".json") and not entry.name.startswith(_TEMP_PREFIX):
                held += 1
                if held >= upto:
                    break
    return held


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
