"""A bulk write stages each fact's file as it plans it (engine/storage/bulk/staging.py): a bad
fact after thousands of staged files still writes nothing, and the files end in their day
folders whether that folder is new (renamed whole) or already holds facts (moved one by one)."""

from __future__ import annotations

import pytest

from engine.contract.errors import MemoryFailure
from engine.storage.bulk import BulkFact, add_many
from engine.storage.bulk.file_stager import CHILD_MIN_FILES

pytestmark = pytest.mark.embedded_mode


def facts(count: int, *, day: str | None = None, word: str = "plant") -> list[BulkFact]:
    return [
        BulkFact(
            text=f"The {word} on desk {n} needs water on day {n % 7}",
            scopes=[f"desk:{n}"],
            caller="tester",
            session="s1",
            created_at=f"{day}T09:00:00.000Z" if day else None,
        )
        for n in range(count)
    ]


def leftovers(engine) -> list:
    return sorted(engine.home.rglob(".import-*"))


@pytest.mark.parametrize("count", [40, CHILD_MIN_FILES])
def test_a_bad_fact_after_many_staged_files_writes_nothing(engine, probe, count):
    batch = facts(count)
    batch.append(BulkFact(text="Late and broken", scopes=["s"], caller="c", session="s",
                          created_at="yesterday"))  # fmt: skip
    with pytest.raises(MemoryFailure) as failure:
        add_many(engine, batch)
    assert failure.value.code == "MEMORY_IMPORT_INVALID"
    assert f"Item {count + 1} of the batch" in failure.value.message
    assert probe.state() == (0, 0)
    assert leftovers(engine) == []
    # The store takes the same facts once the bad one is gone.
    assert len(add_many(engine, batch[:-1]).added) == count
    assert probe.state() == (count, count)


def test_files_reach_new_and_existing_day_folders(engine, probe):
    first = add_many(engine, facts(30, day="2026-05-01"))
    assert len(first.added) == 30
    # One day folder holds facts already (file by file), one is new (renamed whole).
    second = add_many(
        engine, facts(25, day="2026-05-01", word="lamp") + facts(20, day="2026-05-02", word="cup")
    )
    assert len(second.added) == 45
    assert probe.state() == (75, 75)
    days = sorted(path.parent.name for path in probe.files())
    assert days == ["2026-05-01"] * 55 + ["2026-05-02"] * 20
    assert leftovers(engine) == []
