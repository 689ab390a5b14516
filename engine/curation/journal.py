"""How the decision log records undo, redo and batches: the logged action and the ids it
points at.

The log is the journal that engine/curation/undo.py walks: an undo names the decision it takes back
(`undoes`), a redo names the undo it takes back (`redoes`). Decisions made inside one `batch()`
carry the same `batch` tag, and undo takes a batch back (and redo does it again) as one step."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

# The batch the decisions now being logged belong to (per thread: a worker's loop).
_BATCH: ContextVar[str | None] = ContextVar("decision_batch", default=None)


@contextmanager
def batch() -> Iterator[str]:
    """Every decision logged inside is one step for undo and redo. Nested: the outer batch."""
    current = _BATCH.get()
    if current is not None:
        yield current
        return
    token = _BATCH.set(uuid.uuid4().hex[:16])
    try:
        yield _BATCH.get() or ""
    finally:
        _BATCH.reset(token)


def current_batch() -> str | None:
    """The batch the decisions now being logged belong to, if any."""
    return _BATCH.get()


@contextmanager
def batch_of(tag: str | None) -> Iterator[None]:
    """Decisions logged inside belong to the batch `tag` (None: to none), whatever batch is
    open: the recovery of a killed decision completes that decision's step, not the one in
    progress in this thread (engine/curation/claim_recovery.py)."""
    token = _BATCH.set(tag)
    try:
        yield
    finally:
        _BATCH.reset(token)


def journal_action(action: str, *, undoes: int | None, redoes: int | None, undo_of: str) -> str:
    """The logged action: `undo:<what it undoes>`, `redo:<action>`, or the action itself."""
    if undoes is not None:
        return f"undo:{undo_of}"
    if redoes is not None:
        return f"redo:{action}"
    return action


def journal_detail(undoes: int | None, redoes: int | None) -> dict[str, Any]:
    """What a logged decision's detail says of the journal: the ids it undoes or redoes, and
    the batch it is part of."""
    detail: dict[str, Any] = {
        key: value for key, value in (("undoes", undoes), ("redoes", redoes)) if value is not None
    }
    if (current := _BATCH.get()) is not None:
        detail["batch"] = current
    return detail
