"""The read path of a cold CLI call (engine/storage/embedded/sqlite_reader.py: sqlite3, no ORM)
answers recall and propose exactly as the full engine does on the same store.

A writer adds, supersedes, retires, restores, imports and lets facts expire (and, with a
model, a second writer without one leaves facts with no vector, for the readers to embed);
between its writes the same random recall and propose requests go to three readers: the
full engine (MemoryService, the ORM), a sqlite3 store kept open (it catches up from the
change log as the engine does) and a sqlite3 store opened fresh for the request (it reads
the index copy on disk, then catches up). Every answer must be equal: the results whole
(scores, receipts, lineage, budgets), or the same refusal with the same message. The clock
stands still during a request, so the three receipts are the same receipt."""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from engine.contract.errors import MemoryFailure
from engine.facade.curation import Curation, CurationAction
from engine.facade.factory import open_engine, open_recall_store
from engine.facade.interop import ImportRequest
from engine.facade.service import MemoryService, RecallService
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest
from engine.retrieval import index_cache, persisted
from engine.retrieval.embeddings import EmbedderStatus, StaticModelEmbedder
from engine.storage.embedded.sqlite_reader import SqliteRecallStore
from engine.storage.store import MemoryEngine

pytestmark = pytest.mark.sqlite_only  # the read path is the embedded SQLite index's

WORDS = (  # noqa: SIM905 - a word list reads better as text
    "alice bob carol drinks likes prefers green black tea coffee water lives paris lyon berlin "
    "moved deadline project friday monday zebra stripes savanna quiet note fact"
).split()
SCOPES = ["user:alice", "user:bob", "project:x"]
START = datetime(2026, 3, 1, 9, 0, tzinfo=UTC)


class StillClock:
    """Moves only when told: a request sees one moment on every path."""

    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> datetime:
        return self.now


def outcome(call: Callable[[Any], Mapping[str, Any]], service: Any) -> Any:
    try:
        return ("result", call(service))
    except MemoryFailure as refused:
        return ("refused", refused.code, refused.message)


class Run:
    """One random history on one home, with its writer and its three readers."""

    def __init__(self, home: Path, status: EmbedderStatus, seed: int) -> None:
        self.home, self.status, self.rng = home, status, random.Random(seed)
        self.clock = StillClock()
        self.opened: list[MemoryEngine] = []
        self.writer = MemoryService(self._engine(status))
        self.writer.add_collection("work", policy="lan")
        # Without the model: its facts have no vector, so the readers embed them themselves.
        self.plain = MemoryService(self._engine(EmbedderStatus(None, "no model here")))
        self.full = MemoryService(self._engine(status))
        self.kept = self._light()
        self.written: list[Mapping[str, Any]] = []
        self.receipts: list[dict[str, Any]] = []
        self.compared = 0

    def _engine(self, status: EmbedderStatus) -> MemoryEngine:
        engine = open_engine(home=self.home, embedder_status=status, clock=self.clock)
        self.opened.append(engine)
        return engine

    def _light(self) -> RecallService:
        store = open_recall_store(home=self.home, embedder_status=self.status, clock=self.clock)
        assert isinstance(store, SqliteRecallStore), "a sound SQLite home takes the read path"
        return RecallService(store)

    def close(self) -> None:
        self.kept.close()
        for engine in self.opened:
            engine.db.dispose()

    def text(self) -> str:
        return " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(1, 5)))

    def scopes(self) -> list[str]:
        return self.rng.sample(SCOPES, self.rng.randint(1, 2))

    # -- writes -----------------------------------------------------------------------------

    def write(self) -> None:
        kind = self.rng.choice(["add", "add", "expiring", "supersede", "retire", "restore"])
        kind = self.rng.choice([kind, "import", "plain", "tick"])
        if kind == "tick":
            self.clock.now += timedelta(minutes=self.rng.randint(1, 90))
        elif kind in ("add", "expiring", "plain"):
            workbench = (
                {"expiresAt": (self.clock.now + timedelta(minutes=30)).isoformat()}
                if kind == "expiring"
                else {}
            )
            service = self.plain if kind == "plain" else self.writer
            self._add(service, self.text(), self.scopes(), workbench=workbench)
        elif kind == "import":
            lines = [
                {"text": self.text(), "scopes": self.scopes()}
                for _ in range(self.rng.randint(1, 6))
            ]
            path = self.home.parent / f"import-{self.rng.random()}.jsonl"
            path.write_text("".join(json.dumps(line) + "\n" for line in lines), "utf-8")
            self.writer.interop.import_file(ImportRequest(path=path, caller="import"))
        elif self.written:
            target = self.rng.choice(self.written)
            if kind == "supersede":
                self._add(
                    self.writer,
                    self.text(),
                    None,
                    decision="supersede",
                    predecessor=target["uri"],
                    predecessor_hash=target["contentHash"],
                )
            else:
                action = CurationAction.RETIRE if kind == "retire" else CurationAction.RESTORE
                curation = Curation(action, target["uri"], actor="person", reason="test")
                with contextlib.suppress(MemoryFailure):  # e.g. restoring a current fact
                    self.writer.curation.curate(curation)

    def _add(self, service: MemoryService, text: str, scopes: Any, **fields: Any) -> None:
        fields.setdefault("decision", "add")
        fields.setdefault("collection", self.rng.choice(["memory", "memory", "work"]))
        if fields["decision"] == "supersede":
            fields.pop("collection")
        request = RememberRequest(text=text, scopes=scopes, caller="w", session="s", **fields)
        try:
            result = service.remember(request)
        except MemoryFailure:
            return  # a supersede of a fact someone moved first: refused alike everywhere
        if result["outcome"] in ("added", "superseded"):
            self.written.append(result["record"])

    # -- the requests both paths answer -----------------------------------------------------

    def ask(self) -> None:
        if self.rng.random() < 0.5:
            known = self.rng.choice(self.written) if self.written else None
            hit = known is not None and self.rng.random() < 0.6  # ask about a written fact
            request: Any = RecallRequest(
                query=" ".join(known["text"].split()[:2]) if hit and known else self.text(),
                scopes=known["scopes"] if hit and known else self.scopes(),
                caller="agent",
                session=f"s{self.rng.randint(0, 2)}",
                max_facts=self.rng.choice([1, 3, 8]),
                max_tokens=self.rng.choice([8, 64, 512]),
                collection=self.rng.choice([None, None, None, "work", "nowhere"]),
                egress=self.rng.choice([None, None, "lan", "remote"]),
            )
            answers = self._answers(lambda service: service.recall(request))
            if answers[0][0] == "result":
                self.receipts.append(answers[0][1])
        else:
            request = self._proposal()
            answers = self._answers(
                lambda service: (
                    service.remember(request)
                    if isinstance(service, MemoryService)
                    else service.propose(request)
                )
            )
        assert answers[1] == answers[0], "the sqlite3 store kept open answers otherwise"
        assert answers[2] == answers[0], "a fresh sqlite3 store answers otherwise"
        self.compared += 1

    def _proposal(self) -> RememberRequest:
        text = self.text()
        receipt = None
        if self.receipts and self.rng.random() < 0.5:
            recalled = self.rng.choice(self.receipts)
            receipt = dict(recalled["receipt"])
            if recalled["facts"] and self.rng.random() < 0.6:
                text = self.rng.choice(recalled["facts"])["text"].upper()  # a replay
            if self.rng.random() < 0.15:
                receipt["session"] = "forged"  # no longer matches its digest
        elif self.written and self.rng.random() < 0.4:
            text = self.rng.choice(self.written)["text"]  # maybe an exact duplicate
        return RememberRequest(
            text=text,
            scopes=self.scopes(),
            caller="agent",
            session="s",
            collection=self.rng.choice([None, None, "work", "nowhere"]),
            receipt=receipt,
        )

    def _answers(self, call: Callable[[Any], Mapping[str, Any]]) -> list[Any]:
        fresh = self._light()
        try:
            return [outcome(call, service) for service in (self.full, self.kept, fresh)]
        finally:
            fresh.close()


@pytest.fixture
def small_copies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Index copies kept on disk from a few facts on, and written again after a few changes,
    so that fresh stores read one and catch up from it."""
    monkeypatch.setattr(persisted, "PERSIST_MIN_FACTS", 4)
    monkeypatch.setattr(index_cache, "SAVE_BEHIND_MIN", 5)


@pytest.fixture
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Run]]:
    made: list[Run] = []
    yield made
    for run in made:
        run.close()


@pytest.mark.usefixtures("small_copies")
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("semantic", [True, False], ids=["semantic", "lexical"])
def test_the_read_path_answers_as_the_engine(
    seed: int,
    semantic: bool,
    tiny_embedder: StaticModelEmbedder,
    tmp_path_factory: pytest.TempPathFactory,
    runs: list[Run],
) -> None:
    status = EmbedderStatus(tiny_embedder) if semantic else EmbedderStatus(None, "lexical run")
    home = tmp_path_factory.mktemp(f"read-path-{seed}") / "home"
    run = Run(home, status, seed)
    runs.append(run)
    for _ in range(6):
        run._add(run.writer, run.text(), run.scopes())
    for _ in range(40):
        if run.rng.random() < 0.45:
            run.write()
        else:
            run.ask()
    assert run.compared >= 10
    # The history exercised what it is about: recalls that returned facts.
    assert any(receipt["facts"] for receipt in run.receipts)
    assert (home / ".index").is_dir(), "fresh stores read an index copy from disk"


def test_both_paths_store_one_receipt_and_fence_with_it(
    tmp_path: Path, tiny_embedder: StaticModelEmbedder
) -> None:
    """A receipt the read path issued fences a replay on the full engine, and the other way
    round: both write the receipt row the other reads."""
    clock = StillClock()
    status = EmbedderStatus(tiny_embedder)
    home = tmp_path / "home"
    full = MemoryService(open_engine(home=home, embedder_status=status, clock=clock))
    request = RememberRequest("alice likes green tea", ["user:alice"], "w", "s", decision="add")
    full.remember(request)
    light = RecallService(open_recall_store(home=home, embedder_status=status, clock=clock))
    ask = RecallRequest("tea", ["user:alice"], "agent", "s1")
    issued = light.recall(ask)
    assert [fact["text"] for fact in issued["facts"]] == ["alice likes green tea"]
    replay = RememberRequest("Alice likes green tea!", ["user:alice"], "agent", "s1")
    replay.receipt = issued
    for attempt in (lambda: full.remember(replay), lambda: light.propose(replay)):
        with pytest.raises(MemoryFailure) as refused:
            attempt()
        assert refused.value.code == "MEMORY_FENCED_REPLAY"
    clock.now += timedelta(seconds=1)
    replay.receipt = full.recall(RecallRequest("tea", ["user:alice"], "agent", "s2"))
    with pytest.raises(MemoryFailure) as refused:
        light.propose(replay)
    assert refused.value.code == "MEMORY_FENCED_REPLAY"
    assert len(full.receipts.recent()) == 2
    light.close()
    full.close()
