"""The index keeps its facts as columns (engine/retrieval/fact_columns.py): every fact comes
back exactly as it went in, from columns built by appends, read back from the kept file, or
both; the record-id and hash lookups find every position and only the right ones."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest

from engine.retrieval import persisted
from engine.retrieval.fact_columns import (
    FactColumns,
    IndexedFact,
    KeyedPositions,
    TextColumn,
)
from engine.retrieval.growing import GrowingArray
from engine.retrieval.snapshot import Snapshot

START = datetime(2026, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
TEXTS = [
    "I drink tea.",
    "Ünïcödé: 日本語のテキスト",
    "emoji 🐈‍⬛ and a tab\tinside",
    "",
    "x" * 3000,
]
TEXTS += ["a lone surrogate \udcff kept"]


def fact(n: int, rng: random.Random, record_id: str | None = None) -> IndexedFact:
    return IndexedFact(
        record_id=record_id or f"mem-{rng.getrandbits(64):016x}",
        docid=f"#{n:06x}",
        uri=f"gno://memory/facts/{n}.md",
        collection=rng.choice(["memory", "work", "Ünïcödé"]),
        text=f"{rng.choice(TEXTS)} {n}",
        content_hash=f"{rng.getrandbits(256):064x}",
        scopes=tuple(rng.sample(["a", "b", "c", "d"], rng.choice((1, 1, 2, 3)))),
        caller=rng.choice(["agent", "person"]),
        session=f"s{n % 7}",
        created_at=START + timedelta(microseconds=rng.randrange(10**12)),
        source=rng.choice([None, "a note", ""]),
        supersedes=rng.choice([(), (f"gno://memory/facts/{n - 1}.md",)]),
        expires_at=rng.choice([None, START + timedelta(days=3, microseconds=n)]),
    )


def test_every_field_comes_back_as_it_was_appended():
    rng = random.Random(1)
    facts = [fact(n, rng) for n in range(500)]
    columns = FactColumns()
    for item in facts:
        columns.append(item)
    assert len(columns) == 500
    assert list(columns) == facts
    assert columns[-1] == facts[-1] and columns[10:13] == facts[10:13]
    assert [columns.text(p) for p in range(500)] == [f.text for f in facts]
    assert [columns.scopes(p) for p in range(500)] == [f.scopes for f in facts]
    assert all(columns[p].created_at.tzinfo is UTC for p in range(0, 500, 50))
    with pytest.raises(IndexError):
        columns[500]


def test_a_text_column_read_back_then_appended_to_holds_both():
    column = TextColumn()
    for text in TEXTS:
        column.append(text)
    data, bounds = column.arrays()
    read_back = TextColumn.of(data, bounds)
    read_back.append("after the file")
    assert [read_back[i] for i in range(len(read_back))] == [*TEXTS, "after the file"]
    again = TextColumn.of(*read_back.arrays())
    assert [again[i] for i in range(len(again))] == [*TEXTS, "after the file"]
    with pytest.raises(ValueError):
        TextColumn.of(data, bounds[::-1].copy())  # bounds that run backwards
    with pytest.raises(ValueError):
        TextColumn.of(data[:-1], bounds)  # bounds past the bytes


def test_keyed_positions_find_each_position_across_sorts():
    keys = GrowingArray(np.uint64)
    index = KeyedPositions(keys)
    index.SORT_MIN = 8  # sort the recent ones in many times
    rng = random.Random(2)
    expected: dict[int, list[int]] = {}
    for position in range(300):
        key = rng.randrange(40)  # keys repeat: a record indexed again, a repeated hash
        keys.append(key)
        index.added(position, key)
        expected.setdefault(key, []).append(position)
        if position % 37 == 0:
            for probe, found in expected.items():
                assert index.positions(probe) == found
            # All keys at once (the graph's copies of its texts): the same positions, each
            # with the index of its key among those asked, sorted ones and recent ones alike.
            asked = np.array([*expected, 99, *expected][::-1], dtype=np.uint64)
            positions, owners = index.positions_many(asked)
            got = sorted(zip(owners.tolist(), positions.tolist(), strict=True))
            assert got == sorted(
                (owner, position)
                for owner, key in enumerate(asked.tolist())
                for position in expected.get(key, [])
            )
    assert index.positions(99) == []
    names = {p: f"name-{p % 3}" for p in range(300)}
    assert index.matching(5, names.__getitem__, "name-1") == [p for p in expected[5] if p % 3 == 1]


def snapshot_of(facts: list[IndexedFact]) -> Snapshot:
    snapshot = Snapshot(1, 0)
    snapshot.add_many(facts, [None] * len(facts))
    return snapshot


def test_the_kept_index_reads_back_the_same_facts_and_lookups(tmp_path):
    rng = random.Random(3)
    facts = [fact(n, rng) for n in range(2500)]
    # A record indexed twice (changed, added anew at the end) and ids gno-tui did not write.
    facts.append(fact(2500, rng, record_id=facts[7].record_id))
    facts += [fact(2501 + n, rng, record_id=f"imported/{n}") for n in range(20)]
    built = snapshot_of(facts)
    built.leave(7)
    path = tmp_path / "index.idx"
    persisted.write(persisted.prepare(built, "store", None), path)

    def load() -> Snapshot | None:
        return persisted.load(
            path, store_id="store", model_id=None, dims=0, word_vectors=None, newest_change=0
        )

    restored = load()
    assert restored is not None
    assert list(restored.facts) == facts
    assert restored.position_of(facts[7].record_id) == 2500  # the latest position
    for position, item in enumerate(facts):
        if position != 7:
            assert restored.position_of(item.record_id) == position
        assert restored.with_hash(item.content_hash) == ([] if position == 7 else [position])
    assert restored.position_of("mem-0000000000000000") is None
    # Facts added after the load live beside the file's columns, and are kept in turn.
    later = [fact(3000 + n, rng) for n in range(5)]
    restored.add_many(later, [None] * 5)
    assert restored.position_of(later[2].record_id) == len(facts) + 2
    persisted.write(persisted.prepare(restored, "store", None), path)
    again = load()
    assert again is not None and list(again.facts) == [*facts, *later]


def test_a_kept_index_with_damaged_fact_columns_is_refused(tmp_path):
    rng = random.Random(4)
    built = snapshot_of([fact(n, rng) for n in range(2100)])
    prepared = persisted.prepare(built, "store", None)
    bounds = prepared["arrays"]["fact_text_bounds"].copy()
    bounds[5], bounds[6] = bounds[6], bounds[5]  # consistent checksums, impossible bounds
    prepared["arrays"]["fact_text_bounds"] = bounds
    path = tmp_path / "index.idx"
    persisted.write(prepared, path)
    loaded = persisted.load(
        path, store_id="store", model_id=None, dims=0, word_vectors=None, newest_change=0
    )
    assert loaded is None  # the caller rebuilds from the database


def test_taking_many_facts_gives_each_as_indexing_does(tmp_path):
    rng = random.Random(5)
    facts = [fact(n, rng) for n in range(2200)]
    built = snapshot_of(facts)
    path = tmp_path / "index.idx"
    persisted.write(persisted.prepare(built, "store", None), path)
    restored = persisted.load(
        path, store_id="store", model_id=None, dims=0, word_vectors=None, newest_change=0
    )
    assert restored is not None
    restored.add_many([fact(5000 + n, rng) for n in range(30)], [None] * 30)  # a tail
    columns = restored.facts
    wanted = [2229, 0, 17, 2200, 17, 1999, 2215]  # tail and file, any order, repeats
    assert columns.take(wanted) == [columns[p] for p in wanted]
    assert columns.take([]) == []
