"""When a cold call takes the sqlite3 read path, and when it leaves the home to the full
engine: anything the engine does at open (migrate, rewrite collections.yaml, rebuild an
index that lags the files, settle an unfinished or interrupted write, set a damaged file
aside, refuse a newer schema) must still happen, so the read path declines those homes; and
the index copy it reads is used only when whole and its own."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from engine.contract.errors import MemoryFailure
from engine.facade.factory import open_engine, open_recall_store
from engine.facade.service import MemoryService, RecallService
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest
from engine.retrieval import persisted
from engine.retrieval.embeddings import EmbedderStatus, StaticModelEmbedder
from engine.storage import journal
from engine.storage.bulk import recovery as bulk_recovery
from engine.storage.embedded import factfiles
from engine.storage.embedded import sqlite_reader as reader
from engine.storage.embedded.sqlite_reader import SqliteRecallStore
from engine.storage.embedded.sqlite_settings import sqlite_file, sqlite_url
from engine.storage.schema import version as schema
from engine.storage.store import MemoryEngine

pytestmark = pytest.mark.sqlite_only

LEXICAL = EmbedderStatus(None, "lexical")


def made_home(home: Path) -> Path:
    engine = open_engine(home=home, embedder_status=LEXICAL)
    MemoryService(engine).remember(
        RememberRequest("alice likes green tea", ["user:alice"], "w", "s", decision="add")
    )
    engine.db.dispose()
    return home


def opened(home: Path) -> object:
    store = open_recall_store(home=home, embedder_status=LEXICAL)
    if isinstance(store, MemoryEngine):
        store.db.dispose()
    else:
        assert isinstance(store, SqliteRecallStore)
        store.close()
    return type(store)


def test_the_names_it_checks_are_the_engines() -> None:
    """The read path cannot import the modules that define them (they load SQLAlchemy)."""
    assert reader.SCHEMA_HEAD == schema.HEAD
    assert reader.JOURNAL_FOLDER == journal.JOURNAL_FOLDER
    assert reader.STAGING_PREFIX == bulk_recovery.STAGING_PREFIX


def test_a_sound_home_takes_the_read_path(tmp_path: Path) -> None:
    assert opened(made_home(tmp_path / "home")) is SqliteRecallStore


@pytest.mark.parametrize(
    "damage",
    [
        "no index",
        "older schema",
        "no collections file",
        "unfinished write",
        "interrupted import",
        "index lags the files",
        "damaged index",
    ],
)
def test_a_home_the_engine_must_see_to_is_left_to_it(tmp_path: Path, damage: str) -> None:
    home = made_home(tmp_path / "home")
    index = home / reader.INDEX_FILE
    root = home / "collections" / "memory"
    if damage == "no index":
        index.unlink()
    elif damage == "older schema":  # an index from before Alembic: completed at open
        with sqlite3.connect(index) as db:
            db.execute("DROP TABLE alembic_version")
    elif damage == "no collections file":
        (home / "collections.yaml").unlink()
    elif damage == "unfinished write":
        (home / reader.JOURNAL_FOLDER).mkdir(exist_ok=True)
        (home / reader.JOURNAL_FOLDER / "mem-0123456789abcdef.json").write_text("{}")
    elif damage == "interrupted import":
        (root / f"{reader.STAGING_PREFIX}999999999-ab").mkdir()
    elif damage == "index lags the files":
        with sqlite3.connect(index) as db:
            db.execute("DELETE FROM fact_scopes")
            db.execute("DELETE FROM facts")
    else:
        index.write_bytes(b"this is not a database" * 100)
        for suffix in ("-wal", "-shm"):
            Path(f"{index}{suffix}").unlink(missing_ok=True)
    assert opened(home) is MemoryEngine
    # ... which does what opening a home does, and a recall through it answers.
    service = RecallService(open_recall_store(home=home, embedder_status=LEXICAL))
    result = service.recall(RecallRequest("tea", ["user:alice"], "agent", "s"))
    assert [fact["text"] for fact in result["facts"]] == ["alice likes green tea"]
    service.close()
    if damage not in ("no index",):
        assert opened(home) is SqliteRecallStore  # repaired: the next call reads directly


def test_a_crashed_writes_temp_file_is_left_for_the_engine_to_remove(tmp_path: Path) -> None:
    """It changes no answer, so the read path answers and leaves it; the engine's next open
    removes it as always."""
    home = made_home(tmp_path / "home")
    temp = next((home / "collections" / "memory").glob("facts/*")) / f"{factfiles.TEMP_PREFIX}x.md"
    temp.write_text("half a fact", encoding="utf-8")
    store = open_recall_store(home=home, embedder_status=LEXICAL)
    assert isinstance(store, SqliteRecallStore)
    service = RecallService(store)
    result = service.recall(RecallRequest("tea", ["user:alice"], "agent", "s"))
    assert [fact["text"] for fact in result["facts"]] == ["alice likes green tea"]
    service.close()
    assert temp.exists()
    open_engine(home=home, embedder_status=LEXICAL).db.dispose()
    assert not temp.exists()


def test_a_newer_schema_is_refused_as_the_engine_refuses_it(tmp_path: Path) -> None:
    home = made_home(tmp_path / "home")
    with sqlite3.connect(home / reader.INDEX_FILE) as db:
        db.execute("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    with pytest.raises(MemoryFailure) as refused:
        opened(home)
    assert refused.value.code == "MEMORY_QUERY_FAILED"
    assert "9999_from_the_future" in refused.value.message


def test_another_database_or_backend_is_left_to_the_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = made_home(tmp_path / "home")
    assert sqlite_file(sqlite_url(home / "index.sqlite")) == home / "index.sqlite"
    for url in ("postgresql://me@server/db", "sqlite:///:memory:", "sqlite:///x.db?mode=ro"):
        assert sqlite_file(url) is None
    monkeypatch.setenv("GNO_TUI_RETRIEVAL", "postgres")
    assert (
        reader.open_sqlite_store(
            home, db_url=sqlite_url(home / "index.sqlite"), embedder_status=lambda: LEXICAL
        )
        is None
    )
    monkeypatch.setenv("GNO_TUI_RETRIEVAL", "memory")
    assert opened(home) is SqliteRecallStore


def test_the_index_copy_is_used_only_when_whole(
    tmp_path: Path, tiny_embedder: StaticModelEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A copy with a changed byte anywhere, cut short, or claiming more than the file holds is
    not used: one rebuild, the same answers. A whole one restores the very facts."""
    monkeypatch.setattr(persisted, "PERSIST_MIN_FACTS", 3)
    status = EmbedderStatus(tiny_embedder)
    home = tmp_path / "home"
    engine = open_engine(home=home, embedder_status=status)
    memory = MemoryService(engine)
    for text in ("alice likes tea", "bob drinks coffee", "carol lives in paris"):
        memory.remember(RememberRequest(text, ["user:alice"], "w", "s", decision="add"))
    # Facts with every field the copy keeps: two scopes, a source, an expiry, a predecessor.
    both = RememberRequest("zebra note", ["user:alice", "user:bob"], "w", "s", decision="add")
    both.source = "a note"
    old = memory.remember(both)["record"]
    later = RememberRequest("bob moved to lyon", ["user:bob"], "w", "s", decision="add")
    later.workbench = {"expiresAt": "2099-01-01T00:00:00.000Z"}
    memory.remember(later)
    memory.remember(
        RememberRequest(
            "zebra stripes note",
            None,
            "w",
            "s",
            decision="supersede",
            predecessor=old["uri"],
            predecessor_hash=old["contentHash"],
            source="the same note",
        )
    )
    built = engine.snapshot()
    assert any(len(f.scopes) == 2 for f in built.facts) and any(f.source for f in built.facts)
    assert any(f.supersedes for f in built.facts) and any(f.expires_at for f in built.facts)
    assert engine._snapshots.saving is not None
    engine._snapshots.saving.join()
    kept = persisted.index_file(home, tiny_embedder.model_id)
    whole = kept.read_bytes()

    identity = engine.reads.store_identity()
    assert identity is not None  # drawn as the index was kept

    def load() -> object:
        return persisted.load(
            kept,
            store_id=identity,
            model_id=tiny_embedder.model_id,
            dims=tiny_embedder.dims,
            word_vectors=None,
            newest_change=engine.reads.last_change(),
        )

    restored = load()
    assert restored is not None
    assert list(restored.facts) == list(built.facts)  # type: ignore[attr-defined]
    for fact in built.facts:
        assert restored.position_of(fact.record_id) == built.position_of(fact.record_id)  # type: ignore[attr-defined]
    flipped = []
    for where in (len(whole) // 2, len(whole) - 100):  # in the arrays, in the text columns
        changed = bytearray(whole)
        changed[where] ^= 0x40
        flipped.append(bytes(changed))
    for damaged in (*flipped, whole[: len(whole) // 2], whole + b"\0" * 64):
        kept.write_bytes(damaged)
        assert load() is None
    kept.write_bytes(whole.replace(b'"size": ', b'"size": 9', 1))  # a size it does not hold
    assert load() is None
    engine.db.dispose()
