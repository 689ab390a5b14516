"""What the keyed API's modules share about keyed facts (engine/keyed/service.py, query.py,
search.py): the collection they live in, millisecond times and the MemoryHit a keyed fact's
row becomes. It imports none of them, so they all import it. Their SQL is
engine/storage/queries/keyed.py's."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.storage.schema import tables

COLLECTION = "memory"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_ms(moment: datetime) -> int:
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def from_ms(value: int) -> datetime:
    return _EPOCH + timedelta(milliseconds=value)


def hit_from_row(row: tables.FactRow) -> dict[str, Any]:
    """instantKV's MemoryHit, from a keyed fact's row."""
    keyed = row.workbench.get("keyed") or {}
    assert row.created_at is not None and row.kv_key is not None
    return {
        "key": row.kv_key,
        "revision": row.kv_revision,
        "written_at_ms": to_ms(row.created_at),
        "expires_at_ms": to_ms(row.expires_at) if row.expires_at is not None else None,
        "memory": {
            "content": row.text,
            "topic": row.kv_topic,
            "tags": list(keyed.get("tags") or []),
            "metadata": copy.deepcopy(keyed.get("metadata") or {}),
            "occurred_at_ms": row.kv_occurred_at_ms,
        },
    }
