"""The incremental index ranks exactly as a fresh rebuild does.

Two engines on one home (each with its own database connections and its own index, as two
processes have) take turns writing: add, supersede, retire, restore, a fact that expires,
and import. Each keeps its index current by applying the change log between writes. At the
end a third engine builds its index from scratch, and all three must agree on everything
the retrieval seam answers: recall's ranking with its scores, dedup candidates, the exact
duplicate and the duplicate pairs, in every scope and in none.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import content_hash
from engine.facade import RememberResult
from engine.facade.curation import Curation, CurationAction
from engine.facade.factory import open_engine
from engine.facade.interop import ImportRequest
from engine.facade.service import MemoryService
from engine.memory.remember import RememberRequest
from engine.retrieval.embeddings import EmbedderStatus, StaticModelEmbedder
from engine.retrieval.seam import RetrievalIndex, Visibility, candidates_for
from engine.storage.store import MemoryEngine

# Words the tests' tiny model knows (tests/conftest.py TINY_VOCAB), so that vectors differ.
WORDS = (  # noqa: SIM905 - a word list reads better as text
    "alice bob carol drinks likes prefers green black tea coffee water lives paris lyon berlin "
    "moved deadline project friday monday zebra stripes savanna quiet note fact"
).split()
SCOPES = ["user:alice", "user:bob"]
QUERIES = [
    "zebra",
    "alice tea",
    "drinks coffee",
    "lives in paris",
    "project deadline friday",
    "zebra",
]
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=5).map(" ".join)
scope_sets = st.lists(st.sampled_from(SCOPES), min_size=1, max_size=2, unique=True)
writer = st.integers(0, 1)
pick = st.integers(0, 10_000)
operation = st.one_of(
    st.tuples(st.just("add"), writer, texts, scope_sets),
    st.tuples(st.just("supersede"), writer, pick, texts),
    st.tuples(st.just("retire"), writer, pick),
    st.tuples(st.just("restore"), writer, pick),
    st.tuples(st.just("expiring"), writer, texts, scope_sets),
    st.tuples(st.just("tick"), st.integers(1, 90)),
    # Imported items may carry a creation time older than facts already indexed: the index
    # learns of facts in another order than their age.
    st.tuples(
        st.just("import"),
        writer,
        st.lists(st.tuples(texts, scope_sets, st.integers(0, 3)), max_size=6),
    ),
    st.tuples(st.just("read"), writer),
)


def line(text: str, scopes: list[str], age: int) -> dict[str, Any]:
    """An import line; with `age`, created that many hours before the test's start (all at
    one moment, so that ties in score fall back to the record id)."""
    item: dict[str, Any] = {"text": text, "scopes": scopes}
    if age:
        item["createdAt"] = (START - timedelta(hours=age)).isoformat()
    return item


class Client:
    """The façade of one engine, with a test caller."""

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine
        self.memory = MemoryService(engine)

    def remember(self, text: str, scopes: list[str] | None, **fields: Any) -> RememberResult:
        fields.setdefault("decision", "add")
        request = RememberRequest(
            text=text, scopes=scopes, caller="test:agent", session="test", **fields
        )
        return self.memory.remember(request)

    def add(self, text: str, scope: str) -> RememberResult:
        result = self.remember(text, [scope])
        assert result["outcome"] == "added", result
        return result


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        self.now += timedelta(milliseconds=7)  # every write at its own moment, as in life
        return self.now


@pytest.fixture(params=["semantic", "lexical"])
def embedder_status(request: pytest.FixtureRequest, tiny_embedder: StaticModelEmbedder) -> Any:
    if request.param == "semantic":
        return EmbedderStatus(tiny_embedder)
    return EmbedderStatus(None, "no model in this test (lexical mode)")


@pytest.fixture
def opened(embedder_status: EmbedderStatus) -> Iterator[list[MemoryEngine]]:
    engines: list[MemoryEngine] = []
    yield engines
    for engine in engines:
        engine.db.dispose()


def everything_asked(index: RetrievalIndex, now: datetime, texts_seen: list[str]) -> Any:
    """What the seam answers, as plain data (record ids, scores to six decimals)."""
    answers: list[Any] = []
    for scopes in ([SCOPES[0]], [SCOPES[1]], SCOPES, None):
        visibility = Visibility(scopes=scopes, collections=None, now=now)
        for query in QUERIES + texts_seen[-3:]:
            ranking = index.rank(query, visibility)
            answers.append(
                (
                    "rank",
                    ranking.mode,
                    [
                        (m.fact.record_id, round(m.score, 6), round(m.parts.lexical, 6))
                        for m in ranking.matches
                    ],
                )
            )
            answers.append(
                (
                    "candidates",
                    [
                        (c.fact.record_id, c.similarity, c.tier)
                        for c in index.candidates(query, visibility)
                    ],
                )
            )
        asked = QUERIES + texts_seen[-3:]
        # An import's batch (vectors given, as the import gives them), at either floor.
        embedder = getattr(index, "_embedder", None)
        vectors = np.asarray(embedder.embed(asked), np.float32) if embedder else None
        for least in ("weak", "likely"):
            batch = candidates_for(index, asked, [visibility] * len(asked), vectors, least=least)
            answers.append(
                ("batch", least, [[(c.fact.record_id, c.similarity, c.tier) for c in found]
                                  for found in batch])
            )  # fmt: skip
        for text in texts_seen[-3:]:
            found = index.exact_duplicate(content_hash(text), visibility)
            answers.append(("exact", found.record_id if found else None))
        answers.append(
            (
                "pairs",
                [
                    (p.left.record_id, p.right.record_id, p.similarity, p.tier)
                    for p in index.duplicate_pairs(visibility)
                ],
            )
        )
    return answers


class Writes:
    """Two writers on one home, and what they wrote: records as remember returned them, and
    every text written (the last few are asked again)."""

    def __init__(self, writers: list[Client], clock: Clock, home: Path) -> None:
        self.writers, self.clock, self.home = writers, clock, home
        self.written: list[dict[str, Any]] = []
        self.seen: list[str] = []


def apply_operation(op: tuple[Any, ...], step: int, writes: Writes) -> None:
    """One drawn operation; a refusal the contract allows (superseding a superseded fact)
    is an answer, an internal error is not."""
    try:
        _apply(op, step, writes)
    except MemoryFailure as refused:
        assert refused.code.startswith("MEMORY_") and refused.code != "MEMORY_INTERNAL"


def _apply(op: tuple[Any, ...], step: int, writes: Writes) -> None:
    clock, written, seen, home = writes.clock, writes.written, writes.seen, writes.home
    kind = op[0]
    if kind == "tick":
        clock.now += timedelta(minutes=op[1])
        return
    client = writes.writers[op[1]]
    if kind in ("add", "expiring"):
        workbench = (
            {"expiresAt": (clock.now + timedelta(minutes=30)).isoformat()}
            if kind == "expiring"
            else {}
        )
        result = client.remember(op[2], list(op[3]), workbench=workbench)
        seen.append(op[2])
        if result["outcome"] == "added":
            written.append(result["record"])
    elif kind == "supersede" and written:
        old = written[op[2] % len(written)]
        result = client.remember(
            op[3],
            None,
            decision="supersede",
            predecessor=old["uri"],
            predecessor_hash=old["contentHash"],
        )
        seen.append(op[3])
        if result["outcome"] in ("added", "superseded"):
            written.append(result["record"])
    elif kind in ("retire", "restore") and written:
        target = written[op[2] % len(written)]["uri"]
        action = CurationAction.RETIRE if kind == "retire" else CurationAction.RESTORE
        client.memory.curation.curate(Curation(action, target, actor="person", reason="x"))
    elif kind == "import" and op[2]:
        path = home.parent / f"import-{step}.jsonl"
        path.write_text(
            "".join(json.dumps(line(*item)) + "\n" for item in op[2]),
            encoding="utf-8",
        )
        client.memory.interop.import_file(ImportRequest(path=path, caller="import"))
        seen.extend(item[0] for item in op[2])
    elif kind == "read":
        client.engine.retrieval().rank("alice", Visibility(SCOPES, None, clock.now))


@settings(
    max_examples=50,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operations=st.lists(operation, min_size=1, max_size=18))
# Equal BM25 for "zebra", the older fact learnt of last: a tie broken by position would differ.
@example(
    operations=[
        ("add", 0, "zebra tea", ["user:alice"]),
        ("import", 1, [("zebra coffee", ["user:alice"], 2)]),
    ]
)
def test_the_incremental_index_ranks_as_a_rebuild_does(
    operations: list[tuple[Any, ...]],
    embedder_status: EmbedderStatus,
    opened: list[MemoryEngine],
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    home = tmp_path_factory.mktemp("incremental") / "home"
    clock = Clock()

    def open_one() -> MemoryEngine:
        engine = open_engine(home=home, embedder_status=embedder_status, clock=clock)
        opened.append(engine)
        return engine

    try:
        writers = [Client(open_one()), Client(open_one())]
        for client in writers:
            client.engine.retrieval()  # an index to keep current from now on
        writes = Writes(writers, clock, home)
        for step, op in enumerate(operations):
            apply_operation(op, step, writes)

        now = clock.now
        fresh = open_one()
        expected = everything_asked(fresh.retrieval(), now, writes.seen)
        for client in writers:
            got = everything_asked(client.engine.retrieval(), now, writes.seen)
            assert got == expected
            # Kept current by the change log: built once, at the start.
            assert client.engine._snapshots.rebuilds == 1
    finally:  # one example's engines closed before the next (a server's connections)
        for engine in opened:
            engine.db.dispose()
        opened.clear()


def test_a_reader_applies_another_writers_changes_without_a_rebuild(
    tmp_path: Path, tiny_embedder: StaticModelEmbedder
) -> None:
    """The cost a write puts on a reader: the facts it touched, not the store."""
    home = tmp_path / "home"
    status = EmbedderStatus(tiny_embedder)
    reader = open_engine(home=home, embedder_status=status)
    writer = Client(open_engine(home=home, embedder_status=status))
    for n in range(30):
        writer.add(f"alice likes tea {n}", "user:alice")
    reader.retrieval()
    before = reader._snapshots.rebuilds
    added = writer.add("bob drinks coffee in lyon", "user:bob")
    ranking = reader.retrieval().rank("coffee lyon", Visibility(["user:bob"], None, reader.now()))
    assert [m.fact.record_id for m in ranking.matches][:1] == [added["record"]["recordId"]]
    writer.memory.curation.curate(
        Curation(CurationAction.RETIRE, added["record"]["uri"], actor="person", reason="wrong")
    )
    ranking = reader.retrieval().rank("coffee lyon", Visibility(["user:bob"], None, reader.now()))
    assert list(ranking.matches) == []
    assert reader._snapshots.rebuilds == before
    reader.db.dispose()
    writer.engine.db.dispose()


@pytest.mark.embedded_mode
def test_a_process_opens_the_index_kept_on_disk_and_catches_up(
    tmp_path: Path, tiny_embedder: StaticModelEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The next process reads the index a previous one wrote instead of building it, applies
    the changes made since, and answers exactly as a fresh build; a damaged file or one from
    another store is ignored (one rebuild)."""
    from engine.retrieval import persisted

    monkeypatch.setattr(persisted, "PERSIST_MIN_FACTS", 3)
    home = tmp_path / "home"
    status = EmbedderStatus(tiny_embedder)
    opened: list[MemoryEngine] = []

    def open_one(where: Path = home) -> MemoryEngine:
        engine = open_engine(home=where, embedder_status=status)
        opened.append(engine)
        return engine

    writer = Client(open_one())
    pairs = [("alice", "tea"), ("bob", "coffee"), ("carol", "water"), ("alice", "paris")]
    facts = [writer.add(f"{who} likes {what}", "user:alice") for who, what in pairs]
    first = open_one()
    first.retrieval()
    assert first._snapshots.saving is not None
    first._snapshots.saving.join()
    kept = persisted.index_file(home, tiny_embedder.model_id)
    assert kept.is_file()
    writer.add("bob lives in lyon", "user:bob")
    writer.remember(
        "carol moved to berlin",
        None,
        decision="supersede",
        predecessor=facts[2]["record"]["uri"],
        predecessor_hash=facts[2]["record"]["contentHash"],
    )
    writer.memory.curation.curate(
        Curation(CurationAction.RETIRE, facts[1]["record"]["uri"], actor="person", reason="old")
    )
    now = writer.engine.now() + timedelta(seconds=1)
    seen = ["alice likes tea", "carol moved to berlin", "bob lives in lyon"]

    loaded = open_one()
    answers = everything_asked(loaded.retrieval(), now, seen)
    assert loaded._snapshots.rebuilds == 0  # read from the file, then caught up

    kept.unlink()
    fresh = open_one()
    assert everything_asked(fresh.retrieval(), now, seen) == answers
    assert fresh._snapshots.rebuilds == 1

    assert fresh._snapshots.saving is not None
    fresh._snapshots.saving.join()
    kept.write_bytes(kept.read_bytes()[: kept.stat().st_size // 2])  # a torn copy
    damaged = open_one()
    assert everything_asked(damaged.retrieval(), now, seen) == answers
    assert damaged._snapshots.rebuilds == 1

    other = tmp_path / "other"
    Client(open_one(other)).add("zebra stripes savanna", "user:alice")
    persisted.index_file(other, tiny_embedder.model_id).parent.mkdir(parents=True, exist_ok=True)
    persisted.index_file(other, tiny_embedder.model_id).write_bytes(
        persisted.index_file(home, tiny_embedder.model_id).read_bytes()
    )
    elsewhere = open_one(other)
    ranking = elsewhere.retrieval().rank("alice", Visibility(["user:alice"], None, now))
    assert elsewhere._snapshots.rebuilds == 1  # another store's index is not used
    assert all(m.fact.text == "zebra stripes savanna" for m in ranking.matches)
    for engine in opened:
        engine.db.dispose()
