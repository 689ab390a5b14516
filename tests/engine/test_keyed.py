"""The keyed memory API (docs/contract.md section 8, seed 003): keys and revisions over facts,
limits, expiry on an injected clock, recall/search pages under max_bytes, cursors and their
errors."""

from __future__ import annotations

import base64
import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.contract.errors import ERROR_CODES, MemoryFailure, exit_code_for
from engine.contract.validation import load_schema, schema_errors
from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.keyed import service as keyed
from engine.keyed.cursor import dumps, size_of
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.schema import tables
from engine.storage.store import MemoryEngine

START = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
START_MS = int(START.timestamp() * 1000)


class Clock:
    """Injected into the engine: every reading moves one millisecond on; `advance` jumps."""

    def __init__(self) -> None:
        self.moment = START

    def __call__(self) -> datetime:
        self.moment += timedelta(milliseconds=1)
        return self.moment

    def advance(self, **delta: float) -> None:
        self.moment += timedelta(**delta)


@pytest.fixture
def clock() -> Clock:
    return Clock()


def open_kv(home: Path, clock: Callable[[], datetime]) -> MemoryEngine:
    return open_engine(home=home, embedder_status=EmbedderStatus(None, "no model"), clock=clock)


@pytest.fixture
def kv(home: Path, clock: Clock) -> Iterator[MemoryEngine]:
    store = open_kv(home, clock)
    yield store
    store.db.dispose()


def valid(kind: str, document: Any) -> Any:
    errors = schema_errors(kind, document)
    assert not errors, (kind, errors, document)
    return document


def put(store: MemoryEngine, content: str, key: str | None = None, **fields: Any) -> Any:
    memory = {"content": content}
    for name in ("topic", "tags", "metadata", "occurred_at_ms"):
        if name in fields:
            memory[name] = fields.pop(name)
    request: dict[str, Any] = {"memory": memory, **fields}
    if key is not None:
        request["key"] = key
    return valid("keyed_hit", keyed.remember(store, request))


def recall(store: MemoryEngine, **request: Any) -> Any:
    page = valid("keyed_recall", keyed.recall(store, request))
    assert size_of(page) <= request.get("max_bytes", 16384)
    return page


def search(store: MemoryEngine, **request: Any) -> Any:
    page = valid("keyed_search", keyed.search(store, request))
    assert size_of(page) <= request.get("max_bytes", 16384)
    return page


def fails(code: str, call: Callable[[], Any]) -> MemoryFailure:
    with pytest.raises(MemoryFailure) as caught:
        call()
    assert caught.value.code == code, caught.value
    assert caught.value.message.strip()
    return caught.value


def contents(page: dict[str, Any]) -> list[str]:
    return [item["memory"]["content"] for item in page["items"]]


# -- keys, revisions, history -----------------------------------------------------------------


def test_a_create_is_a_fact_with_its_keyed_fields_in_the_file_and_the_index(kv, probe):
    hit = put(
        kv,
        "Alice prefers green tea",
        "pref/tea",
        topic=" Drinks ",
        tags=["Tea", "alice"],
        metadata={"source": {"app": "chat", "turn": 3}, "ok": True},
    )
    assert hit == {
        "key": "pref/tea",
        "revision": 1,
        "written_at_ms": hit["written_at_ms"],
        "expires_at_ms": None,
        "memory": {
            "content": "Alice prefers green tea",
            "topic": "drinks",
            "tags": ["alice", "tea"],
            "metadata": {"source": {"app": "chat", "turn": 3}, "ok": True},
            "occurred_at_ms": hit["written_at_ms"],  # omitted: the write time
        },
    }
    assert hit["written_at_ms"] > START_MS
    (path,) = probe.files()
    front = yaml.safe_load(path.read_text(encoding="utf-8").split("---")[1])
    assert front["memory"]["scopes"] == ["kv:default"]
    assert front["workbench"]["keyed"] == {
        "namespace": "default",
        "key": "pref/tea",
        "revision": 1,
        "topic": "drinks",
        "tags": ["alice", "tea"],
        "metadata": {"source": {"app": "chat", "turn": 3}, "ok": True},
    }
    assert probe.query(
        "SELECT collection, kv_namespace, kv_key, kv_revision, kv_topic, kv_occurred_at_ms "
        "FROM facts"
    ) == [("memory", "default", "pref/tea", 1, "drinks", hit["written_at_ms"])]


def test_an_omitted_key_is_a_new_uuid(kv):
    first, second = put(kv, "one"), put(kv, "two")
    assert first["key"] != second["key"]
    for hit in (first, second):
        assert len(hit["key"]) == 36 and hit["key"].count("-") == 4


def test_a_retried_create_returns_the_stored_head_and_writes_nothing(kv, probe):
    fields = {"topic": "t", "tags": ["b", "a"], "metadata": {"n": 1}}
    first = put(kv, "Bob lives in Lyon", "bob/city", **fields)
    before = probe.state()
    again = put(
        kv, "  Bob lives in Lyon ", "bob/city", topic="T", tags=["A", "b", "a"], metadata={"n": 1}
    )
    assert again == first
    assert probe.state() == before


def test_create_only_on_a_live_key_with_other_content_names_the_current_revision(kv, probe):
    put(kv, "Bob lives in Lyon", "bob/city")
    put(kv, "Bob lives in Paris", "bob/city", if_revision=1)
    before = probe.state()
    for different in (
        {"content": "Bob lives in Rome"},
        {"content": "Bob lives in Paris", "tags": ["x"]},
        {"content": "Bob lives in Paris", "metadata": {"v": 2}},
    ):
        failure = fails(
            "MEMORY_KEY_EXISTS",
            partial(keyed.remember, kv, {"key": "bob/city", "memory": different}),
        )
        assert "revision 2" in failure.message and "if_revision: 2" in failure.message
        assert failure.exit_code == 4
    probe.assert_nothing_written(before, "Bob lives in Rome")


def test_if_revision_supersedes_the_head_and_every_revision_stays_readable(kv, probe):
    first = put(kv, "Carol works at Acme", "carol/job")
    second = put(kv, "Carol works at Initech", "carol/job", if_revision=1, tags=["work"])
    third = put(kv, "Carol works at Hooli", "carol/job", if_revision=2)
    assert [first["revision"], second["revision"], third["revision"]] == [1, 2, 3]
    assert keyed.get(kv, "carol/job") == third
    history = valid("keyed_history", keyed.history(kv, "carol/job"))
    assert history == {"key": "carol/job", "items": [first, second, third]}
    # The chain is GNO's supersession: each revision supersedes the one before.
    rows = probe.query(
        "SELECT kv_revision, superseded_by IS NULL, supersedes FROM facts ORDER BY kv_revision"
    )
    assert [(r, live) for r, live, _ in rows] == [(1, 0), (2, 0), (3, 1)]
    # JSON columns come back as text from SQLite and already parsed from PostgreSQL.
    supersedes = [json.loads(r[2]) if isinstance(r[2], str) else r[2] for r in rows]
    assert supersedes[0] == [] and all(supersedes[1:])
    assert contents(recall(kv)) == ["Carol works at Hooli"]


def test_a_stale_if_revision_is_a_conflict_naming_the_current_revision(kv, probe):
    put(kv, "v1", "k")
    put(kv, "v2", "k", if_revision=1)
    before = probe.state()
    for stale in (0, 1, 3):
        failure = fails(
            "MEMORY_REVISION_CONFLICT",
            partial(
                keyed.remember, kv, {"key": "k", "if_revision": stale, "memory": {"content": "v3"}}
            ),
        )
        assert "at revision 2" in failure.message and failure.exit_code == 4
    probe.assert_nothing_written(before, "v3")


def test_if_revision_on_an_unknown_key_is_not_found(kv, probe):
    fails(
        "MEMORY_KEY_NOT_FOUND",
        lambda: keyed.remember(kv, {"key": "nope", "if_revision": 1, "memory": {"content": "x"}}),
    )
    fails("MEMORY_KEY_NOT_FOUND", lambda: keyed.get(kv, "nope"))
    fails("MEMORY_KEY_NOT_FOUND", lambda: keyed.history(kv, "nope"))
    assert probe.state() == (0, 0)


def test_two_keys_may_hold_the_same_text(kv, probe):
    put(kv, "The deploy is on Friday", "a")
    put(kv, "The deploy is on Friday", "b")
    assert probe.state() == (2, 2)
    assert sorted(item["key"] for item in recall(kv)["items"]) == ["a", "b"]


def test_the_supersede_cas_turns_a_lost_race_into_a_revision_conflict(kv, monkeypatch):
    """Another writer moves the head between our check and our write: the write path's
    compare-and-swap refuses, and the keyed API names the revision that won."""
    put(kv, "v1", "race")
    real_index = kv.index_new_fact

    def sneaky(row: Any, predecessor: Any) -> None:
        monkeypatch.setattr(kv, "index_new_fact", real_index)
        from sqlalchemy import update
        from sqlalchemy.orm import Session
        from sqlmodel import col

        from engine.storage.schema import tables

        with Session(kv.db) as db:  # the other writer's successor takes the head
            db.execute(
                update(tables.FactRow)
                .where(col(tables.FactRow.kv_key) == "race")
                .values(superseded_by="mem-ffffffffffffffff")
            )
            db.commit()
        real_index(row, predecessor)

    monkeypatch.setattr(kv, "index_new_fact", sneaky)
    fails(
        "MEMORY_REVISION_CONFLICT",
        lambda: keyed.remember(kv, {"key": "race", "if_revision": 1, "memory": {"content": "v2"}}),
    )


def test_namespaces_are_separate_key_spaces(kv, probe):
    put(kv, "default one", "k")
    other = valid(
        "keyed_hit",
        keyed.remember(kv, {"key": "k", "memory": {"content": "team one"}}, namespace="Team-A"),
    )
    assert other["revision"] == 1
    assert keyed.get(kv, "k", namespace="team-a")["memory"]["content"] == "team one"
    assert contents(valid("keyed_recall", keyed.recall(kv, {}, namespace="team-a"))) == ["team one"]
    assert sorted(s for (s,) in probe.query("SELECT scope FROM fact_scopes")) == [
        "kv:default",
        "kv:team-a",
    ]
    fails("MEMORY_REQUEST_INVALID", lambda: keyed.recall(kv, {}, namespace="bad space"))


def test_keyed_facts_are_ordinary_facts_for_gno_recall(kv, client):
    put(kv, "Dana drinks black coffee", "dana")
    result = client.recall("what does dana drink", ["kv:default"])
    assert [fact["text"] for fact in result["facts"]] == ["Dana drinks black coffee"]
    # ... and GNO's own exact check still applies to GNO writes.
    assert client.remember("Dana drinks black coffee", ["kv:default"])["outcome"] == "existing"


def test_a_retired_head_leaves_the_key_free_for_a_new_revision(kv):
    from engine.curation.review import retire

    put(kv, "Eve likes jazz", "eve")
    row = keyed.get(kv, "eve")
    assert row["revision"] == 1
    uri = _uri_of(kv, "eve", 1)
    retire(kv, ref=uri, actor="person", reason="wrong person")
    fails("MEMORY_KEY_NOT_FOUND", lambda: keyed.get(kv, "eve"))
    assert recall(kv)["items"] == []
    assert put(kv, "Eve likes blues", "eve")["revision"] == 2


def _uri_of(store: MemoryEngine, key: str, revision: int) -> str:
    from sqlalchemy import select
    from sqlalchemy.orm import Session
    from sqlmodel import col

    from engine.storage.schema import tables

    with Session(store.db) as db:
        return db.scalars(
            select(col(tables.FactRow.uri))
            .where(col(tables.FactRow.kv_key) == key)
            .where(col(tables.FactRow.kv_revision) == revision)
        ).one()


# -- limits and validation --------------------------------------------------------------------


def test_tags_are_trimmed_lowercased_sorted_deduplicated_and_at_most_eight(kv, probe):
    hit = put(kv, "tagged", tags=[" Zeta", "alpha ", "ALPHA", "Ünï", "beta"])
    assert hit["memory"]["tags"] == ["alpha", "beta", "zeta", "ünï"]
    eight_with_duplicates = [f"t{i}" for i in range(8)] + ["T0", " t1 "]
    assert len(put(kv, "eight", tags=eight_with_duplicates)["memory"]["tags"]) == 8
    before = probe.state()
    failure = fails(
        "MEMORY_TAGS_INVALID", lambda: put(kv, "nine", tags=[f"t{i}" for i in range(9)])
    )
    assert "at most 8" in failure.message
    fails("MEMORY_TAGS_INVALID", lambda: put(kv, "long tag", tags=["x" * 65]))
    fails("MEMORY_TAGS_INVALID", lambda: put(kv, "empty tag", tags=["  "]))
    fails("MEMORY_TAGS_INVALID", lambda: put(kv, "control", tags=["a\x1fb"]))
    probe.assert_nothing_written(before)


def test_topic_is_normalised_and_at_most_64_bytes(kv, probe):
    assert put(kv, "t", topic="  Mixed Case ")["memory"]["topic"] == "mixed case"
    assert put(kv, "u", topic="é" * 32)["memory"]["topic"] == "é" * 32  # 64 bytes
    before = probe.state()
    failure = fails("MEMORY_TOPIC_INVALID", lambda: put(kv, "v", topic="a" * 65))
    assert "65 bytes" in failure.message
    fails("MEMORY_TOPIC_INVALID", lambda: put(kv, "w", topic="é" * 32 + "a"))
    probe.assert_nothing_written(before)


def test_content_is_at_most_16_kib(kv, probe):
    assert len(put(kv, "x" * 16384)["memory"]["content"]) == 16384
    before = probe.state()
    failure = fails("MEMORY_CONTENT_TOO_LARGE", lambda: put(kv, "y" * 17 * 1024))
    assert "17408 bytes" in failure.message and "16384" in failure.message
    fails("MEMORY_CONTENT_TOO_LARGE", lambda: put(kv, "é" * 8193))  # 16386 bytes
    fails("MEMORY_TEXT_REQUIRED", lambda: put(kv, "   "))
    probe.assert_nothing_written(before)


def test_metadata_is_stored_and_returned_up_to_8_kib(kv, probe):
    metadata = {"nested": {"list": [1, 2.5, None, "ü"], "flag": False}, "pad": "m" * 8000}
    assert size_of(metadata) <= 8192
    hit = put(kv, "with metadata", "meta", metadata=metadata)
    assert hit["memory"]["metadata"] == metadata
    assert keyed.get(kv, "meta")["memory"]["metadata"] == metadata
    before = probe.state()
    failure = fails(
        "MEMORY_METADATA_TOO_LARGE", lambda: put(kv, "too much", metadata={"pad": "m" * 9 * 1024})
    )
    assert "8192" in failure.message
    probe.assert_nothing_written(before)


@pytest.mark.parametrize(
    "request_",
    [
        {},
        {"memory": {}},
        {"memory": {"content": 5}},
        {"memory": {"content": "x", "colour": "red"}},
        {"memory": {"content": "x"}, "extra": 1},
        {"memory": {"content": "x"}, "ttl_seconds": -1},
        {"memory": {"content": "x"}, "if_revision": "1"},
        {"memory": {"content": "x", "tags": "a"}},
        {"memory": {"content": "x", "metadata": []}},
        {"memory": {"content": "x", "occurred_at_ms": True}},
        {"memory": {"content": "x"}, "ttl_seconds": 0},
        {"memory": {"content": "x", "occurred_at_ms": 10**16}},
        {"memory": {"content": "x", "metadata": {"n": float("nan")}}},
        {"memory": {"content": "\ud800"}},
        [],
    ],
)
def test_requests_that_break_seed_003_or_its_ranges_write_nothing(kv, probe, request_):
    failure = fails("MEMORY_REQUEST_INVALID", lambda: keyed.remember(kv, request_))
    assert failure.exit_code == 1
    assert probe.state() == (0, 0)


def test_keys_have_1_to_256_bytes(kv, probe):
    assert put(kv, "long key", "k" * 256)["key"] == "k" * 256
    fails("MEMORY_KEY_INVALID", lambda: put(kv, "x", "k" * 257))
    fails("MEMORY_KEY_INVALID", lambda: put(kv, "x", ""))
    fails("MEMORY_KEY_INVALID", lambda: put(kv, "x", "a\nb"))
    assert probe.state() == (1, 1)


def test_query_requests_are_validated_before_anything_runs(kv):
    for bad in ({"limit": -1}, {"query": 3}, {"unknown": 1}, {"since_ms": "0"}):
        fails("MEMORY_REQUEST_INVALID", partial(keyed.recall, kv, bad))
        fails("MEMORY_REQUEST_INVALID", partial(keyed.search, kv, {"query": "x", **bad}))
    fails("MEMORY_REQUEST_INVALID", lambda: keyed.recall(kv, {"limit": 0}))
    fails("MEMORY_REQUEST_INVALID", lambda: keyed.recall(kv, {"limit": 101}))
    fails("MEMORY_REQUEST_INVALID", lambda: keyed.recall(kv, {"max_bytes": 2**21}))
    fails("MEMORY_REQUEST_INVALID", lambda: keyed.search(kv, {"query": "x", "expand": "yes"}))
    failure = fails(
        "MEMORY_RANGE_INVALID", lambda: keyed.recall(kv, {"since_ms": 10, "until_ms": 9})
    )
    assert "since_ms" in failure.message
    fails(
        "MEMORY_RANGE_INVALID",
        lambda: keyed.search(kv, {"query": "x", "since_ms": 2, "until_ms": 1}),
    )
    fails("MEMORY_TOPIC_INVALID", lambda: keyed.recall(kv, {"topic": "a" * 65}))
    fails("MEMORY_TAGS_INVALID", lambda: keyed.recall(kv, {"tag": ""}))


# -- expiry on the injected clock -------------------------------------------------------------


def test_expired_memories_are_never_returned(kv, clock):
    hit = put(kv, "temporary parking code 4411", "parking", ttl_seconds=60)
    # The ttl counts from the moment the request was checked, a clock reading before the write.
    assert 0 < hit["written_at_ms"] + 60_000 - hit["expires_at_ms"] < 50
    put(kv, "permanent parking rule", "rule")
    assert sorted(contents(search(kv, query="parking"))) == [
        "permanent parking rule",
        "temporary parking code 4411",
    ]
    clock.advance(seconds=59)
    assert keyed.get(kv, "parking") == hit
    clock.advance(seconds=2)
    fails("MEMORY_KEY_NOT_FOUND", lambda: keyed.get(kv, "parking"))
    fails("MEMORY_KEY_NOT_FOUND", lambda: keyed.history(kv, "parking"))
    assert contents(recall(kv, query="parking")) == ["permanent parking rule"]
    assert contents(search(kv, query="parking")) == ["permanent parking rule"]
    fails(
        "MEMORY_KEY_NOT_FOUND",
        lambda: keyed.remember(
            kv, {"key": "parking", "if_revision": 1, "memory": {"content": "new code"}}
        ),
    )
    # The key is free again; the new revision continues the chain.
    renewed = put(kv, "parking code 5522", "parking")
    assert renewed["revision"] == 2 and renewed["expires_at_ms"] is None
    assert [item["revision"] for item in keyed.history(kv, "parking")["items"]] == [2]


def test_ttl_is_written_to_the_file_as_expires_at(kv, probe):
    put(kv, "short lived", ttl_seconds=3600)
    front = yaml.safe_load(probe.files()[0].read_text(encoding="utf-8").split("---")[1])
    assert front["workbench"]["expiresAt"].startswith("2026-11-30T13:00:00.")
    assert probe.query("SELECT expires_at IS NOT NULL FROM facts") == [(1,)]


# -- recall -----------------------------------------------------------------------------------


def test_recall_is_newest_event_first_with_every_term_required(kv):
    put(kv, "Alice drinks TEA at noon", occurred_at_ms=3_000, tags=["drink"], topic="alice")
    put(kv, "Bob drinks coffee", occurred_at_ms=2_000, tags=["drink"], topic="bob")
    put(kv, "alice reads at noon", occurred_at_ms=1_000, tags=["book"], topic="alice")
    put(kv, "tea for alice, later", occurred_at_ms=4_000)
    assert contents(recall(kv)) == [
        "tea for alice, later",
        "Alice drinks TEA at noon",
        "Bob drinks coffee",
        "alice reads at noon",
    ]
    assert contents(recall(kv, query="ALICE tea")) == [
        "tea for alice, later",
        "Alice drinks TEA at noon",
    ]
    assert contents(recall(kv, query="  noon   ALICE ")) == [
        "Alice drinks TEA at noon",
        "alice reads at noon",
    ]
    assert contents(recall(kv, tag="DRINK")) == ["Alice drinks TEA at noon", "Bob drinks coffee"]
    assert contents(recall(kv, topic="Alice")) == [
        "Alice drinks TEA at noon",
        "alice reads at noon",
    ]
    assert contents(recall(kv, since_ms=2_000, until_ms=3_000)) == [
        "Alice drinks TEA at noon",
        "Bob drinks coffee",
    ]  # inclusive
    assert contents(recall(kv, since_ms=3_001)) == ["tea for alice, later"]
    assert recall(kv, query="zebra") == {
        "items": [],
        "next_cursor": None,
        "scanned": 4,
        "scanned_bytes": sum(len(c) for c in contents(recall(kv))),
    }
    assert contents(recall(kv, tag="dr%nk")) == [] and contents(recall(kv, tag="dr_nk")) == []


def test_recall_pages_with_a_cursor_and_continues_across_writes(kv):
    for i in range(5):
        put(kv, f"note {i}", occurred_at_ms=1_000 + i)
    first = recall(kv, limit=2)
    assert contents(first) == ["note 4", "note 3"] and first["next_cursor"]
    put(kv, "a newer note", occurred_at_ms=9_000)  # pages are not a snapshot
    put(kv, "note 2 revised", "k2", occurred_at_ms=500)
    second = recall(kv, limit=2, cursor=first["next_cursor"])
    assert contents(second) == ["note 2", "note 1"]
    third = recall(kv, limit=2, max_bytes=4096, cursor=second["next_cursor"])
    assert contents(third) == ["note 0", "note 2 revised"] and third["next_cursor"] is None


def test_max_bytes_bounds_the_whole_recall_response(kv):
    for i in range(6):
        put(kv, f"memory number {i} " + "x" * 100, occurred_at_ms=10 + i)
    whole = recall(kv)
    two = {"items": whole["items"][:2]}
    # A budget that holds two items and a cursor, but not three.
    probe_page = keyed.recall(kv, {"limit": 2})
    assert contents(probe_page) == contents(two)
    budget = size_of(probe_page)
    page = recall(kv, max_bytes=budget)
    assert len(page["items"]) == 2 and page["next_cursor"]
    assert size_of(page) == budget == len(dumps(page).encode("utf-8"))
    smaller = recall(kv, max_bytes=budget - 1)
    assert len(smaller["items"]) == 1
    failure = fails("MEMORY_RESPONSE_TOO_LARGE", lambda: keyed.recall(kv, {"max_bytes": 120}))
    assert "max_bytes is 120" in failure.message
    fails("MEMORY_RESPONSE_TOO_LARGE", lambda: keyed.recall(kv, {"max_bytes": 0}))
    fails(
        "MEMORY_RESPONSE_TOO_LARGE", lambda: keyed.search(kv, {"query": "memory", "max_bytes": 120})
    )


def test_a_memory_larger_than_the_default_budget_needs_a_larger_max_bytes(kv):
    put(kv, "big " + "y" * 16000)
    fails("MEMORY_RESPONSE_TOO_LARGE", lambda: keyed.recall(kv, {}))
    assert len(recall(kv, max_bytes=20_000)["items"]) == 1


def test_cursors_are_bound_to_their_query_kind_and_store(kv, home, tmp_path, clock):
    for i in range(3):
        put(kv, f"alpha {i}", occurred_at_ms=i)
    cursor = recall(kv, query="alpha", limit=1)["next_cursor"]
    assert cursor and set(cursor) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    )
    assert recall(kv, query="ALPHA", limit=1, cursor=cursor)["items"]  # same normalised query
    assert recall(kv, query="alpha", limit=5, max_bytes=9000, cursor=cursor)["items"]
    raw = bytearray(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    raw[-3] ^= 1
    tampered = base64.urlsafe_b64encode(bytes(raw)).decode().rstrip("=")
    for bad in (tampered, "not a cursor!", "", cursor[:-4], "x" * 5000):
        failure = fails(
            "MEMORY_CURSOR_INVALID", partial(keyed.recall, kv, {"query": "alpha", "cursor": bad})
        )
        assert "first page" in failure.message
    for other in (
        {"query": "beta"},
        {"query": "alpha", "tag": "x"},
        {"query": "alpha", "since_ms": 0},
    ):
        failure = fails(
            "MEMORY_CURSOR_INVALID", partial(keyed.recall, kv, {**other, "cursor": cursor})
        )
        assert "same namespace, query and filters" in failure.message
    fails(
        "MEMORY_CURSOR_INVALID",
        lambda: keyed.recall(kv, {"query": "alpha", "cursor": cursor}, namespace="other"),
    )
    search_cursor = search(kv, query="alpha", limit=1)["next_cursor"]
    failure = fails(
        "MEMORY_CURSOR_INVALID",
        lambda: keyed.recall(kv, {"query": "alpha", "cursor": search_cursor}),
    )
    assert "search cursor" in failure.message
    fails("MEMORY_CURSOR_INVALID", lambda: keyed.search(kv, {"query": "alpha", "cursor": cursor}))
    elsewhere = open_kv(tmp_path / "other-home", clock)
    try:
        put(elsewhere, "alpha 9")
        fails(
            "MEMORY_CURSOR_INVALID",
            lambda: keyed.recall(elsewhere, {"query": "alpha", "cursor": cursor}),
        )
    finally:
        elsewhere.db.dispose()
    if kv.store.keeps_fact_files:  # the server mode keeps the key in the database, not in a home
        secret = home / ".keyed-secret"
        assert secret.stat().st_mode & 0o777 == 0o600
        assert len(secret.read_text().strip()) == 64


# -- search -----------------------------------------------------------------------------------


def test_search_ranks_by_bm25_and_any_term_may_match(kv):
    put(kv, "Alice bought a red car last spring", "a")
    put(kv, "The car park is closed on Sunday", "b")
    put(kv, "Bob prefers trains to cars and car parks", "c")
    put(kv, "Nothing relevant here", "d")
    page = search(kv, query="red car")
    assert page["items"][0]["key"] == "a"
    assert {item["key"] for item in page["items"]} == {"a", "b", "c"}
    scores = [item["score"] for item in page["items"]]
    assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
    assert page["truncated"] is False and page["next_cursor"] is None
    assert search(kv, query="red car", topic="none")["items"] == []


def test_expand_uses_the_synonym_dictionary_and_expansion_terms_are_added(kv):
    put(kv, "Alice purchased an automobile", "a")
    put(kv, "Bob rides a bicycle", "b")
    assert search(kv, query="buy car")["items"] == []
    expanded = search(kv, query="buy car", expand=True)
    assert [item["key"] for item in expanded["items"]] == ["a"]
    assert [i["key"] for i in search(kv, query="car", expansion_terms=["bicycle"])["items"]] == [
        "b"
    ]
    # An expansion word weighs less than the same word in the query.
    direct = search(kv, query="automobile")["items"][0]["score"]
    assert expanded["items"][0]["score"] < 2 * direct


def test_search_limits(kv):
    put(kv, "word0 word1 word70", "a")
    failure = fails("MEMORY_QUERY_TOO_LARGE", lambda: keyed.search(kv, {"query": "x" * 16385}))
    assert "16384" in failure.message
    fails("MEMORY_QUERY_TOO_LARGE", lambda: keyed.recall(kv, {"query": "x" * 16385}))
    fails(
        "MEMORY_QUERY_TOO_LARGE",
        lambda: keyed.recall(kv, {"query": " ".join(f"t{i}" for i in range(65))}),
    )
    many = " ".join(f"word{i}" for i in range(80))
    page = search(kv, query=many)
    assert page["truncated"] is True and [i["key"] for i in page["items"]] == ["a"]
    assert search(kv, query=" ".join(f"word{i}" for i in range(64)))["truncated"] is False
    fails(
        "MEMORY_EXPANSION_INVALID",
        lambda: keyed.search(kv, {"query": "x", "expansion_terms": ["a"] * 9}),
    )
    fails(
        "MEMORY_EXPANSION_INVALID",
        lambda: keyed.search(kv, {"query": "x", "expansion_terms": ["é" * 33]}),
    )
    fails(
        "MEMORY_EXPANSION_INVALID",
        lambda: keyed.search(kv, {"query": "x", "expansion_terms": [" "]}),
    )
    assert search(kv, query="x", expansion_terms=["a" * 64] * 8)["items"] == []
    for empty in ("", "   ", "the of and", "?!"):
        fails("MEMORY_QUERY_REQUIRED", partial(keyed.search, kv, {"query": empty}))


def test_a_search_cursor_pages_and_goes_stale_after_any_write(kv, client):
    for i in range(5):
        put(kv, f"garden note {i} " + "tomato " * i, f"k{i}")
    first = search(kv, query="tomato garden", limit=2)
    assert len(first["items"]) == 2 and first["next_cursor"]
    second = search(kv, query="tomato garden", limit=2, cursor=first["next_cursor"])
    third = search(kv, query="tomato garden", limit=2, cursor=second["next_cursor"])
    keys = [item["key"] for page in (first, second, third) for item in page["items"]]
    assert sorted(keys) == [f"k{i}" for i in range(5)] and third["next_cursor"] is None
    fails(
        "MEMORY_CURSOR_INVALID",
        lambda: keyed.search(kv, {"query": "tomato", "cursor": first["next_cursor"]}),
    )
    fails(
        "MEMORY_CURSOR_INVALID",
        lambda: keyed.search(
            kv, {"query": "tomato garden", "expand": True, "cursor": first["next_cursor"]}
        ),
    )
    client.add("an unrelated GNO fact", "user:x")  # any write, keyed or not
    failure = fails(
        "MEMORY_CURSOR_STALE",
        lambda: keyed.search(
            kv, {"query": "tomato garden", "limit": 2, "cursor": first["next_cursor"]}
        ),
    )
    assert "run the search again" in failure.message.lower()


# -- the index is rebuilt from the files ------------------------------------------------------


@pytest.mark.sqlite_only
def test_reindex_rebuilds_the_keyed_columns_from_the_files(kv, home, clock):
    put(kv, "Frank likes chess", "frank", tags=["games"], topic="frank", occurred_at_ms=42)
    put(kv, "Frank likes go", "frank", if_revision=1, ttl_seconds=999)
    put(kv, "Grace likes tennis")
    before = (recall(kv), keyed.history(kv, "frank"), search(kv, query="likes"))
    kv.db.dispose()
    (home / "index.sqlite").unlink()
    for suffix in ("-wal", "-shm"):
        (home / f"index.sqlite{suffix}").unlink(missing_ok=True)
    rebuilt = open_kv(home, clock)
    try:
        report = MemoryService(rebuilt).reindex()
        assert report["indexed"] == 3 and not report["problems"]
        after = (recall(rebuilt), keyed.history(rebuilt, "frank"), search(rebuilt, query="likes"))
        assert after == before
        assert MemoryService(rebuilt).reindex()["changed"] == 0
    finally:
        rebuilt.db.dispose()


@pytest.mark.sqlite_only
def test_an_index_from_before_the_keyed_api_is_upgraded_on_open(kv, home, clock, client):
    client.add("an old fact", "user:x")
    kv.db.dispose()
    facts = tables.FactRow.metadata.tables["facts"]
    keyed_indexes = {ix.name for ix in facts.indexes if str(ix.name).startswith("ix_facts_kv_")}
    assert keyed_indexes == {"ix_facts_kv_key", "ix_facts_kv_time", "ix_facts_kv_topic"}
    keyed_columns = [column.name for column in facts.columns if column.name.startswith("kv_")]
    assert len(keyed_columns) == 6
    with sqlite3.connect(home / "index.sqlite") as db:  # the index as it was before them
        db.execute("DROP TABLE alembic_version")  # (and before schema migrations)
        for index in keyed_indexes:
            db.execute(f"DROP INDEX {index}")
        for column in keyed_columns:
            db.execute(f"ALTER TABLE facts DROP COLUMN {column}")
    upgraded = open_kv(home, clock)
    try:
        put(upgraded, "a new keyed fact", "new")
        assert contents(recall(upgraded)) == ["a new keyed fact"]
    finally:
        upgraded.db.dispose()
    with sqlite3.connect(home / "index.sqlite") as db:
        names = {row[1] for row in db.execute("PRAGMA index_list(facts)")}
    assert keyed_indexes <= names


# -- contracts --------------------------------------------------------------------------------


def test_response_schemas_share_one_hit_definition():
    hit = load_schema("keyed_hit")
    definition = {
        k: v for k, v in hit.items() if k not in ("$schema", "title", "description", "$defs")
    }
    for name in ("keyed_recall", "keyed_history"):
        schema = load_schema(name)
        assert schema["$defs"]["hit"] == definition
        assert schema["$defs"]["memory"] == hit["$defs"]["memory"]
    search_item = load_schema("keyed_search")["$defs"]["item"]
    assert {k: v for k, v in search_item["properties"].items() if k != "score"} == hit["properties"]
    for name in ("keyed_hit", "keyed_recall", "keyed_search", "keyed_history"):
        assert load_schema(name)["additionalProperties"] is False


def test_keyed_error_codes_are_known_and_conflicts_exit_4():
    """Every code the keyed API's guide names is a contract code; of them the conflicts exit 4
    (as the guide says), a store failure 2, and every other one 1."""
    guide = Path(__file__).resolve().parents[2] / "docs" / "keyed-api.md"
    codes = set(re.findall(r"MEMORY_[A-Z_]*[A-Z]", guide.read_text(encoding="utf-8")))
    assert len(codes) >= 15 and codes <= ERROR_CODES
    exits = {code: exit_code_for(code) for code in codes}
    assert {code for code, exit in exits.items() if exit == 4} == {
        "MEMORY_KEY_EXISTS",
        "MEMORY_REVISION_CONFLICT",
        "MEMORY_WRITE_LEASE_BUSY",
    }
    assert {code for code, exit in exits.items() if exit == 2} == {"MEMORY_SYNC_FAILED"}
    assert set(exits.values()) == {1, 2, 4}


def test_synonym_groups_are_symmetric_and_plentiful():
    from engine.keyed.synonyms import GROUPS, synonyms

    assert len(GROUPS) >= 100
    assert {"automobile", "vehicle"} <= set(synonyms("cars"))
    assert "car" in synonyms("automobile")
    assert "large" in synonyms("big") and "purchase" in synonyms("buying")
    assert synonyms("xylophone") == ()
