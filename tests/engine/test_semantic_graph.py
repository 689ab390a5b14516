"""The approximate-neighbour graph behind the in-process index (engine/retrieval/
semantic_graph.py): forced on for stores far below its real threshold, where the graph's
search is exhaustive or as good as, it must answer exactly what the exact scan answers, after
any sequence of writes by two processes; a graph kept on disk is reopened, not rebuilt, and a
torn or stale one costs one rebuild and never a wrong answer."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_incremental_index import (
    SCOPES,
    WORDS,
    Client,
    Clock,
    Writes,
    apply_operation,
    everything_asked,
    line,
    operation,
)

from engine.facade.factory import open_engine
from engine.facade.interop import ImportRequest
from engine.retrieval import persisted, semantic_graph
from engine.retrieval import snapshot as snapshot_module
from engine.retrieval.embeddings import EmbedderStatus, StaticModelEmbedder
from engine.retrieval.seam import Visibility, candidates_for
from engine.storage.store import MemoryEngine

pytestmark = pytest.mark.in_memory_index


class GraphSwitch:
    """Whether engines opened now build a graph; once built, every query that may use it does
    (the thresholds of a million-fact store, lowered to a test's few facts)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.build = True
        self.builds = 0
        monkeypatch.setattr(snapshot_module, "worth_a_graph", lambda live: self.build)
        monkeypatch.setattr(snapshot_module, "graph_pays", lambda visible, total, batch=False: True)
        original = semantic_graph.SemanticGraph.build.__func__  # type: ignore[attr-defined]

        def counted(cls: type, *args: Any) -> Any:
            self.builds += 1
            return original(cls, *args)

        monkeypatch.setattr(semantic_graph.SemanticGraph, "build", classmethod(counted))


@pytest.fixture
def switch(monkeypatch: pytest.MonkeyPatch) -> GraphSwitch:
    return GraphSwitch(monkeypatch)


@pytest.fixture
def opened() -> Iterator[list[MemoryEngine]]:
    engines: list[MemoryEngine] = []
    yield engines
    for engine in engines:
        engine.db.dispose()


def graph_of(engine: MemoryEngine) -> semantic_graph.SemanticGraph | None:
    """The engine's graph, once a build started by its index (on a thread) has ended."""
    engine._snapshots.get()
    building = engine._snapshots.building
    if building is not None:
        building.join()
    return engine._snapshots.get().graph


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operations=st.lists(operation, min_size=1, max_size=18))
def test_the_graph_answers_as_the_exact_scan_after_any_writes(
    operations: list[tuple[Any, ...]],
    tiny_embedder: StaticModelEmbedder,
    switch: GraphSwitch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    home = tmp_path_factory.mktemp("graph") / "home"
    clock = Clock()
    status = EmbedderStatus(tiny_embedder)
    opened: list[MemoryEngine] = []

    def open_one() -> MemoryEngine:
        engine = open_engine(home=home, embedder_status=status, clock=clock)
        opened.append(engine)
        return engine

    try:
        switch.build = True
        writers = [Client(open_one()), Client(open_one())]
        writes = Writes(writers, clock, home)
        for step, op in enumerate(operations):
            apply_operation(op, step, writes)
        now = clock.now
        graphs = [graph_of(client.engine) for client in writers]
        switch.build = False
        exact = open_one()
        assert graph_of(exact) is None
        expected = everything_asked(exact.retrieval(), now, writes.seen)
        for client, graph in zip(writers, graphs, strict=True):
            assert graph is not None and graph_of(client.engine) is graph  # grown, not rebuilt
            assert everything_asked(client.engine.retrieval(), now, writes.seen) == expected
    finally:
        for engine in opened:
            engine.db.dispose()


def phrases(count: int, seed: int) -> list[str]:
    """`count` distinct texts of the tiny model's words."""
    rng = np.random.default_rng(seed)
    found: dict[str, None] = {}
    while len(found) < count:
        found[" ".join(rng.choice(WORDS, size=int(rng.integers(2, 6))).tolist())] = None
    return list(found)


def test_past_the_pool_the_graph_ranks_as_the_exact_scan(
    tmp_path: Path,
    tiny_embedder: StaticModelEmbedder,
    switch: GraphSwitch,
    opened: list[MemoryEngine],
) -> None:
    """More texts than a recall asks of the graph (GRAPH_POOL), copies in both scopes: the
    facts the graph did not return are bounded by its last cosine, and those that can still
    reach the window are scored; with a graph that finds the true closest rows (a search
    wider than the store), the ranking is the exact one, scores and ties included."""
    home = tmp_path / "home"
    status = EmbedderStatus(tiny_embedder)
    texts = phrases(700, seed=3)
    path = tmp_path / "facts.jsonl"
    lines = [
        line(text, SCOPES if n % 3 == 0 else [SCOPES[n % 2]], n % 4) for n, text in enumerate(texts)
    ]
    # The same text again as a fact of the other scope alone, after its first: a query of
    # that scope reaches the text only through this copy (the graph holds the first).
    lines += [
        line(text, [SCOPES[1 - n % 2]], n % 4)
        for n, text in enumerate(texts)
        if n % 3 and n % 5 == 1
    ]
    path.write_text("".join(json.dumps(item) + "\n" for item in lines), encoding="utf-8")
    writer = Client(open_engine(home=home, embedder_status=status))
    opened.append(writer.engine)
    writer.memory.interop.import_file(ImportRequest(path=path, caller="import"))
    graph = graph_of(writer.engine)
    assert graph is not None and len(graph.index) > 256
    now = writer.engine.now() + timedelta(seconds=1)
    questions = ["alice tea", "the zebra stripes", "project", "bob moved to lyon", *texts[:6]]
    with_graph = everything_asked(writer.engine.retrieval(), now, questions)
    batch = texts[:40] + [f"{text} quiet" for text in texts[40:80]] + phrases(760, 4)[700:]
    with_graph_batch = batched_candidates(writer.engine, batch, now)
    switch.build = False
    exact = open_engine(home=home, embedder_status=status)
    opened.append(exact)
    assert graph_of(exact) is None
    assert everything_asked(exact.retrieval(), now, questions) == with_graph
    # An import's dedup asks for a batch at once (the graph walked for all of them), and
    # each text's candidates are those a propose of it finds by the exact scan, as the exact
    # batch's are.
    assert batched_candidates(exact, batch, now) == with_graph_batch
    index = exact.retrieval()
    one_by_one = [
        [(c.fact.record_id, c.similarity, c.tier) for c in index.candidates(text, seen)]
        for text, seen in zip(batch, visibilities(len(batch), now), strict=True)
    ]
    assert with_graph_batch == one_by_one


def visibilities(count: int, now: Any) -> list[Visibility]:
    """One scope or both, in turn."""
    return [Visibility(SCOPES if n % 2 else [SCOPES[n % 4 // 2]], None, now) for n in range(count)]


def batched_candidates(engine: MemoryEngine, texts: list[str], now: Any) -> list[Any]:
    """An import's dedup candidates for `texts`, as plain data."""
    embedder = engine.embedder_status.embedder
    assert embedder is not None
    found = candidates_for(
        engine.retrieval(),
        texts,
        visibilities(len(texts), now),
        np.asarray(embedder.embed(texts), dtype=np.float32),
    )
    return [[(c.fact.record_id, c.similarity, c.tier) for c in one] for one in found]


@pytest.mark.embedded_mode
def test_the_graph_is_kept_beside_the_index_and_a_bad_file_costs_one_rebuild(
    tmp_path: Path,
    tiny_embedder: StaticModelEmbedder,
    switch: GraphSwitch,
    monkeypatch: pytest.MonkeyPatch,
    opened: list[MemoryEngine],
) -> None:
    from engine.retrieval import index_cache

    monkeypatch.setattr(persisted, "PERSIST_MIN_FACTS", 3)
    # Every process that catches up writes its index (and graph) again.
    monkeypatch.setattr(index_cache, "SAVE_BEHIND_MIN", 0)
    monkeypatch.setattr(index_cache, "SAVE_BEHIND_FRACTION", 0.0)
    home = tmp_path / "home"
    status = EmbedderStatus(tiny_embedder)
    questions = ["alice tea", "zebra", "project deadline friday", "carol drinks green tea"]

    def open_one() -> MemoryEngine:
        engine = open_engine(home=home, embedder_status=status)
        opened.append(engine)
        return engine

    def saved(engine: MemoryEngine) -> None:
        assert engine._snapshots.saving is not None
        engine._snapshots.saving.join()

    def exact_answers() -> Any:
        switch.build = False
        engine = open_one()
        assert graph_of(engine) is None
        found = everything_asked(engine.retrieval(), writer.engine.now(), questions)
        engine.db.dispose()
        opened.remove(engine)
        switch.build = True
        return found

    writer = Client(open_one())
    for text in phrases(40, seed=5):
        writer.add(text, SCOPES[0])
    first = open_one()
    graph = graph_of(first)
    assert graph is not None and switch.builds == 1
    saved(first)
    kept = persisted.graph_file(persisted.index_file(home, tiny_embedder.model_id))
    assert kept.is_file()
    answers = exact_answers()
    assert everything_asked(first.retrieval(), writer.engine.now(), questions) == answers

    reopened = open_one()
    mapped = graph_of(reopened)
    assert switch.builds == 1 and mapped is not None and mapped.index.mapped
    assert len(mapped.index) == len(graph.index)
    built, read = first._snapshots.get(), reopened._snapshots.get()
    assert read.first_holders.tolist() == built.first_holders.tolist()
    assert read.distinct_texts == built.distinct_texts == 40
    for question in ("alice tea", "zebra quiet note"):
        vector = tiny_embedder.embed([question])[0]
        ids, scores = mapped.index.search(vector, 10)
        want_ids, want_scores = graph.index.search(vector, 10)
        assert ids.tolist() == want_ids.tolist() and scores.tolist() == want_scores.tolist()
    assert everything_asked(reopened.retrieval(), writer.engine.now(), questions) == answers

    # A write after the graph was saved: the next process opens the index and the graph at
    # their saved position, and both catch up.
    writer.add("carol drinks green tea in berlin", SCOPES[1])
    caught_up = open_one()
    assert graph_of(caught_up) is not None and switch.builds == 1
    saved(caught_up)
    answers = exact_answers()
    assert everything_asked(caught_up.retrieval(), writer.engine.now(), questions) == answers

    kept.write_bytes(kept.read_bytes()[: kept.stat().st_size // 2])  # torn
    torn = open_one()
    assert graph_of(torn) is not None and switch.builds == 2
    assert everything_asked(torn.retrieval(), writer.engine.now(), questions) == answers
    saved(torn)

    # The file holds fewer positions than the index grown since: it is opened and grown (the
    # later positions kept beside it), not rebuilt, and not written again while mapped.
    held = kept.read_bytes()
    writer.add("bob prefers black coffee on monday", SCOPES[0])
    newer = open_one()
    grown = graph_of(newer)
    assert grown is not None and grown.index.mapped and switch.builds == 2
    assert grown.positions == newer._snapshots.get().live_count == 42
    saved(newer)
    assert kept.read_bytes() == held
    answers = exact_answers()
    assert everything_asked(newer.retrieval(), writer.engine.now(), questions) == answers

    # A sound graph file of other positions (another store's, as a rebuilt index's would
    # be): refused, and built again.
    other = tmp_path / "other"
    elsewhere = Client(open_engine(home=other, embedder_status=status))
    opened.append(elsewhere.engine)
    for text in phrases(30, seed=6):  # fewer: only the fingerprint tells the files apart
        elsewhere.add(text, SCOPES[0])
    foreign = open_engine(home=other, embedder_status=status)
    opened.append(foreign)
    assert graph_of(foreign) is not None and switch.builds == 3
    saved(foreign)
    kept.write_bytes((other / ".index" / kept.name).read_bytes())
    again = open_one()
    assert graph_of(again) is not None and switch.builds == 4
    assert everything_asked(again.retrieval(), writer.engine.now(), questions) == answers


def write_lines(path: Path, texts: list[str], scope: str, day: int) -> None:
    """An import file: one line per text, in one scope, of one day."""
    path.write_text(
        "".join(json.dumps(line(text, [scope], day)) + "\n" for text in texts), encoding="utf-8"
    )


@pytest.mark.embedded_mode
def test_an_import_leaves_its_index_and_graph_for_the_next_process(
    tmp_path: Path,
    tiny_embedder: StaticModelEmbedder,
    switch: GraphSwitch,
    monkeypatch: pytest.MonkeyPatch,
    opened: list[MemoryEngine],
) -> None:
    """An import far larger than a reader would catch up on (it would rebuild) is applied
    to the importing process's own index, which is written with its graph: the next process
    reads both instead of building them."""
    from engine.retrieval import index_cache

    monkeypatch.setattr(persisted, "PERSIST_MIN_FACTS", 3)
    monkeypatch.setattr(index_cache, "REBUILD_MIN_CHANGES", 100)  # a reader rebuilds past it
    home = tmp_path / "home"
    status = EmbedderStatus(tiny_embedder)
    importer = Client(open_engine(home=home, embedder_status=status))
    opened.append(importer.engine)
    for text in phrases(10, seed=7):
        importer.add(text, SCOPES[0])
    path = tmp_path / "more.jsonl"
    texts = phrases(600, seed=8)[10:]
    write_lines(path, texts, SCOPES[1], 0)
    importer.memory.interop.import_file(ImportRequest(path=path, caller="import"))
    cache = importer.engine._snapshots
    assert cache.rebuilds == 1 and switch.builds == 1  # the import's facts applied, not rebuilt
    assert cache.saving is not None
    cache.saving.join()

    reader = open_engine(home=home, embedder_status=status)
    opened.append(reader)
    graph = graph_of(reader)
    assert reader._snapshots.rebuilds == 0 and graph is not None and graph.index.mapped
    assert switch.builds == 1 and graph.index.changes_beside == 0

    # A second import, into a process whose graph is mapped from that file: its rows are
    # written into the graph's file, not left beside it for every later query to scan.
    monkeypatch.setattr(index_cache, "SETTLE_AFTER_IMPORT", 50)
    second = Client(open_engine(home=home, embedder_status=status))
    opened.append(second.engine)
    assert graph_of(second.engine) is not None
    later = phrases(800, seed=8)[600:]
    write_lines(path, later, SCOPES[0], 1)
    second.memory.interop.import_file(ImportRequest(path=path, caller="import"))
    saving = second.engine._snapshots.saving
    assert saving is not None
    saving.join()
    reader = open_engine(home=home, embedder_status=status)
    opened.append(reader)
    graph = graph_of(reader)
    assert reader._snapshots.rebuilds == 0 and graph is not None and graph.index.mapped
    assert graph.index.changes_beside == 0 and switch.builds == 1
    texts += later
    switch.build = False
    exact = open_engine(home=home, embedder_status=status)
    opened.append(exact)
    now = reader.now()
    questions = texts[-3:]
    assert everything_asked(reader.retrieval(), now, questions) == everything_asked(
        exact.retrieval(), now, questions
    )


def builds_held(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Graph builds made to wait until the event returned is set (a build on a thread of its
    own stays running meanwhile)."""
    release = threading.Event()
    build = semantic_graph.SemanticGraph.build

    def held(*args: Any) -> Any:
        release.wait()
        return build(*args)

    monkeypatch.setattr(semantic_graph.SemanticGraph, "build", held)
    return release


def test_queries_are_answered_exactly_while_the_graph_is_built(
    tmp_path: Path,
    tiny_embedder: StaticModelEmbedder,
    switch: GraphSwitch,
    monkeypatch: pytest.MonkeyPatch,
    opened: list[MemoryEngine],
) -> None:
    """The graph is built on a thread of its own: until it is adopted, recall and propose
    scan, and a write made meanwhile is in the graph once it is."""
    release = builds_held(monkeypatch)
    home = tmp_path / "home"
    status = EmbedderStatus(tiny_embedder)
    writer = Client(open_engine(home=home, embedder_status=status))
    opened.append(writer.engine)
    for text in phrases(30, seed=9):
        writer.add(text, SCOPES[0])
    reader = open_engine(home=home, embedder_status=status)
    opened.append(reader)
    questions = ["alice tea", "zebra", "carol drinks green tea"]
    answers = everything_asked(reader.retrieval(), reader.now(), questions)
    building = reader._snapshots.building
    assert building is not None and building.is_alive()
    assert reader._snapshots.get().graph is None
    writer.add("carol drinks green tea in berlin", SCOPES[1])
    answers_after = everything_asked(reader.retrieval(), writer.engine.now(), questions)
    assert answers_after != answers  # the write is seen while the graph is still building
    release.set()
    graph = graph_of(reader)
    assert graph is not None and graph.positions == reader._snapshots.get().live_count
    assert everything_asked(reader.retrieval(), writer.engine.now(), questions) == answers_after


def test_an_import_waits_for_the_graph_being_built_instead_of_building_another(
    tmp_path: Path,
    tiny_embedder: StaticModelEmbedder,
    switch: GraphSwitch,
    monkeypatch: pytest.MonkeyPatch,
    opened: list[MemoryEngine],
) -> None:
    """A process that began building its graph (the file missing or refused) and then
    imports adopts that graph once built, grown by the import's facts: one build, not a
    second one beside it (each is minutes of CPU at a million facts)."""
    from engine.retrieval import index_cache

    release, reached = builds_held(monkeypatch), threading.Event()
    get = index_cache.SnapshotCache.get

    def signalled(self: Any, *, after_bulk: bool = False) -> Any:
        if after_bulk:
            reached.set()  # the import is written and about to apply its facts
        return get(self, after_bulk=after_bulk)

    monkeypatch.setattr(index_cache.SnapshotCache, "get", signalled)
    home = tmp_path / "home"
    status = EmbedderStatus(tiny_embedder)
    importer = Client(open_engine(home=home, embedder_status=status))
    opened.append(importer.engine)
    for text in phrases(30, seed=11):
        importer.add(text, SCOPES[0])
    importer.engine.retrieval()  # the index read, its graph begun on a thread
    building = importer.engine._snapshots.building
    assert building is not None and building.is_alive()
    path = tmp_path / "more.jsonl"
    texts = phrases(60, seed=12)[30:]
    write_lines(path, texts, SCOPES[1], 0)
    failed: list[Exception] = []

    def run_import() -> None:
        try:
            importer.memory.interop.import_file(ImportRequest(path=path, caller="import"))
        except Exception as exc:  # noqa: BLE001 (reported below, in the test's thread)
            failed.append(exc)
            reached.set()

    worker = threading.Thread(target=run_import)
    worker.start()
    reached.wait()
    release.set()
    worker.join()
    assert not failed
    graph = graph_of(importer.engine)
    assert switch.builds == 1  # the graph begun before the import, adopted
    assert graph is not None and graph.positions == importer.engine._snapshots.get().live_count
