"""Receipt retention: export for audit, delete and purge with the decision log keeping who
did it; a deleted receipt no longer fences and can no longer be presented."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest

from engine.contract.errors import MemoryFailure
from engine.curation.review import decision_log
from engine.curation.undo import undo_last
from engine.memory.receipts import (
    delete_receipts,
    export_receipts,
    fence_exposure,
    purge_receipts,
    receipts_issued_before,
    recent_receipts,
)

PERSON = "tui:alice"


def test_export_writes_the_chosen_receipts_as_json_lines(client, engine):
    client.add("Alice drinks green tea", "user:alice")
    first = client.recall("green tea", ["user:alice"])["receipt"]
    second = client.recall("alice", ["user:alice"], caller="agent:two")["receipt"]

    path = export_receipts(engine)
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert path.parent == engine.home / "exports"
    assert {line["digest"] for line in lines} == {first["digest"], second["digest"]}
    # Content-free, as stored: ids and hashes, never the facts' text.
    assert "green tea" not in path.read_text(encoding="utf-8")

    only = export_receipts(engine, digests=[second["digest"]])
    assert [json.loads(line)["caller"] for line in only.read_text().splitlines()] == ["agent:two"]

    with pytest.raises(MemoryFailure) as caught:
        export_receipts(engine, digests=["0" * 64])
    assert caught.value.code == "MEMORY_NOT_FOUND"


def test_a_deleted_receipt_no_longer_fences_and_cannot_be_presented(client, engine):
    client.add("Alice drinks green tea", "user:alice")
    recalled = client.recall("green tea", ["user:alice"])
    digest = recalled["receipt"]["digest"]
    assert fence_exposure(engine, "Alice drinks green tea").receipts == 1

    assert delete_receipts(engine, digests=[digest], actor=PERSON) == 1
    assert recent_receipts(engine) == []
    assert fence_exposure(engine, "Alice drinks green tea").receipts == 0
    with pytest.raises(MemoryFailure) as caught:
        client.remember("Alice moved to Lyon", ["user:alice"], receipt=recalled)
    assert caught.value.code == "MEMORY_RECEIPT_INVALID"
    entry = decision_log(engine)[0]
    assert (entry["action"], entry["actor"]) == ("delete-receipts", PERSON)
    assert entry["detail"] == {"count": 1, "digests": [digest]}
    # Not undoable, and the refusal says why.
    with pytest.raises(MemoryFailure) as caught:
        undo_last(engine, actor=PERSON)
    assert caught.value.code == "MEMORY_UNDO_UNSUPPORTED"
    assert "deleted receipts are gone" in caught.value.message
    # Deleting what is gone deletes nothing and logs nothing.
    assert delete_receipts(engine, digests=[digest], actor=PERSON) == 0
    assert len(decision_log(engine)) == 1


def test_purge_deletes_every_receipt_issued_before_a_time(client, engine):
    client.add("Alice drinks green tea", "user:alice")
    start = engine.now()
    issued = []
    for hours in (0, 1, 2):
        engine._clock = lambda h=hours: start + timedelta(hours=h)
        issued.append(client.recall("green tea", ["user:alice"])["receipt"]["digest"])
    cut = start + timedelta(minutes=90)

    assert receipts_issued_before(engine, cut) == 2
    assert purge_receipts(engine, before=cut, actor=PERSON) == 2
    assert [r["digest"] for r in recent_receipts(engine)] == [issued[2]]
    entry = decision_log(engine)[0]
    assert entry["action"] == "purge-receipts"
    assert entry["detail"]["count"] == 2
    assert sorted(entry["detail"]["digests"]) == sorted(issued[:2])
    assert receipts_issued_before(engine, cut) == 0
