"""An issued receipt is stored once, however often it is stored: the same digest stands for
the same fields, and the fence and the audit read it back as issued."""

from __future__ import annotations

from datetime import timedelta


def test_the_same_receipt_stored_twice_is_one_row_read_back_as_issued(engine):
    issued = engine.now()
    receipt = {
        "digest": "d" * 64,
        "caller": "cli:alice",
        "session": "s1",
        "memoryIds": ["mem-0123456789abcdef", "mem-fedcba9876543210"],
        "spanHashes": ["a" * 64, "b" * 64],
    }
    engine.reads.add_receipt(receipt, issued)
    engine.reads.add_receipt(receipt, issued + timedelta(seconds=0))
    stored = engine.reads.stored_receipt("d" * 64)
    assert stored is not None
    assert stored["memoryIds"] == receipt["memoryIds"]
    assert stored["spanHashes"] == receipt["spanHashes"]
    assert (stored["caller"], stored["session"]) == ("cli:alice", "s1")
    from sqlalchemy import func, select
    from sqlalchemy.orm import Session

    from engine.storage.schema import tables

    with Session(engine.db) as session:
        assert session.scalar(select(func.count()).select_from(tables.ReceiptRow)) == 1
        row = session.get(tables.ReceiptRow, "d" * 64)
        assert row is not None and row.issued_at == issued
