"""A process that keeps its index current while other processes write holds what a process
opening the same store afresh holds, not more (issue 39, item 12).

In the soak (benchmarks/soak.py) the reader that lived through 30 minutes of writes ended at
458 MiB, a reader started afterwards on the same store at 257. Measured, most of it was the
word vectors: the index keeps each word's vector in its word alignment's matrix, and the
process kept a second copy of every word it had seen arrive (engine/retrieval/
word_alignment.py, WordVectors). The rest was the allocator: each thread that wrote the
index copy to disk kept its temporaries in a malloc arena of its own (engine/retrieval/
heap.py). Both are counted here without timing or RSS: the bytes of the arrays the index
holds, and the arenas a process allocates from."""

from __future__ import annotations

import ctypes
import random
import re
import subprocess
import sys
import textwrap
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engine.facade import RememberResult
from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest
from engine.retrieval import index_cache, persisted
from engine.retrieval.embeddings import EmbedderStatus, StaticModelEmbedder, load_embedder
from engine.retrieval.growing import GrowingArray, GrowingRows
from engine.retrieval.snapshot import Snapshot
from engine.storage.store import MemoryEngine

pytestmark = pytest.mark.in_memory_index

LETTERS = "abcdefghijklmnopqrstuvwxyz"
SCOPES = ["soak", "chain"]


@pytest.fixture(scope="module")
def model() -> EmbedderStatus:
    status = load_embedder()  # the bundled model: every new word has a vector of its own
    assert status.embedder is not None, status.unavailable_reason
    return status


def held_bytes(snapshot: Snapshot) -> int:
    """The bytes of numbers and text the index holds: every array reachable from it (a
    growing one by its filled part, a view by its own extent) and every bytearray. The model
    it embeds with is not the index's, and is the same in every process."""
    seen: set[int] = set()
    stack: list[Any] = [snapshot]
    total = 0
    while stack:
        item = stack.pop()
        if id(item) in seen or isinstance(item, str | bytes | int | float | StaticModelEmbedder):
            continue
        seen.add(id(item))
        if isinstance(item, GrowingArray | GrowingRows):
            total += item.view().nbytes
        elif isinstance(item, np.ndarray):
            total += item.nbytes
        elif isinstance(item, bytearray):
            total += len(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple | set | frozenset):
            stack.extend(item)
        else:
            stack.extend(vars(item).values() if hasattr(item, "__dict__") else ())
            for name in getattr(type(item), "__slots__", ()):
                stack.append(getattr(item, name, None))
    return total


def words(pick: random.Random, count: int) -> str:
    """Made-up words, as the soak's writers write: each fact brings new vocabulary."""
    return " ".join("".join(pick.choice(LETTERS) for _ in range(7)) for _ in range(count))


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[list[MemoryEngine]]:
    engines: list[MemoryEngine] = []
    yield engines
    for engine in engines:
        engine.db.dispose()


@pytest.mark.embedded_mode  # the fresh process reads the index copy kept in the home
def test_a_reader_that_followed_many_writes_holds_what_a_fresh_one_holds(
    tmp_path: Path,
    model: EmbedderStatus,
    opened: list[MemoryEngine],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The soak's comparison, small: a reader open from the first write to the last against
    one that opens the store afterwards and reads the index copy another process kept."""
    monkeypatch.setattr(persisted, "PERSIST_MIN_FACTS", 1)  # a copy kept at this size too
    home = tmp_path / "home"
    writer_engine = open_engine(home=home, embedder_status=model)
    reader = open_engine(home=home, embedder_status=model)  # another process, in effect
    opened += [writer_engine, reader]
    writer = MemoryService(writer_engine)
    pick = random.Random(12)

    def remember(text: str, **fields: Any) -> RememberResult:
        request = RememberRequest(text=text, caller="w", session="w", **fields)
        return writer.remember(request)

    head = remember("chain head 0", scopes=["chain"], decision="add")["record"]
    for round_ in range(40):
        with writer.write_batch():  # a group commit, as a server's writes arrive
            for n in range(8):
                remember(f"note {round_}.{n}: {words(pick, 4)}", scopes=["soak"], decision="add")
        head = remember(  # a supersede: the head leaves the reader's index
            f"chain head {round_ + 1}: {words(pick, 2)}",
            scopes=None,
            decision="supersede",
            predecessor=head["uri"],
            predecessor_hash=head["contentHash"],
        )["record"]
        reader.retrieval()  # the reader's next recall applies the changes
    assert reader._snapshots.rebuilds == 1  # built once (empty), then kept current
    for engine in (reader, writer_engine):  # the copies they keep, written
        if engine._snapshots.saving is not None:
            engine._snapshots.saving.join()

    fresh = open_engine(home=home, embedder_status=model)
    opened.append(fresh)
    followed, loaded = reader.snapshot(), fresh.snapshot()
    assert fresh._snapshots.rebuilds == 0  # read from the copy, then caught up
    assert followed.live_count == loaded.live_count == 8 * 40 + 1
    # Before, the reader held every word vector twice (once in the index, once beside it):
    # 1.36 times what the fresh one holds (whose catch-up since the copy held its own words
    # twice too). Now 1.02: the copy's layout, and words of the catch-up's facts.
    assert held_bytes(followed) <= 1.1 * held_bytes(loaded)

    # And it answers exactly as the fresh one.
    for query in ("chain head", words(pick, 2), "note 7.3"):
        for scopes in (["soak"], ["chain"], SCOPES):
            asked = RecallRequest(query=query, scopes=scopes, caller="r", session="r")
            assert _answer(reader, asked) == _answer(fresh, asked)


def _answer(engine: MemoryEngine, request: RecallRequest) -> list[tuple[str, object]]:
    from engine.memory.recall import recall_explained

    result = recall_explained(engine, request)[0]
    return [(fact["recordId"], fact["score"]) for fact in result["facts"]]


class CountingEmbedder:
    """The tests' tiny model, noting every text it is asked to embed."""

    def __init__(self, inner: StaticModelEmbedder) -> None:
        self.model_id, self.dims, self._inner = inner.model_id, inner.dims, inner
        self.asked: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.asked.extend(texts)
        return self._inner.embed(texts)


def test_a_rebuild_still_embeds_only_the_words_the_index_did_not_hold(
    tmp_path: Path,
    tiny_embedder: StaticModelEmbedder,
    opened: list[MemoryEngine],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The process keeps no word vectors beside its index any more; a rebuild (a reader too
    far behind) takes those of the words it knew from the index it replaces."""
    counting = CountingEmbedder(tiny_embedder)
    engine = open_engine(home=tmp_path / "home", embedder_status=EmbedderStatus(counting))
    opened.append(engine)
    writer = MemoryService(engine)

    def add(text: str) -> None:
        writer.remember(RememberRequest(text, ["s"], "w", "w", decision="add"))

    add("alice drinks green tea")
    add("bob likes black coffee")
    engine.retrieval()
    monkeypatch.setattr(index_cache, "REBUILD_MIN_CHANGES", 0)
    monkeypatch.setattr(index_cache, "REBUILD_FRACTION", 0.0)  # any change: a rebuild
    counting.asked.clear()
    add("carol drinks water in paris")
    engine.retrieval()
    assert engine._snapshots.rebuilds == 2
    words_embedded = {text for text in counting.asked if " " not in text}
    assert words_embedded == {"carol", "water", "paris"}  # not drinks, nor the others


def _glibc_malloc_info() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        return hasattr(ctypes.CDLL(None), "malloc_info")
    except OSError:
        return False


# A process that opens its index, then saves the index copy again and again: how many malloc
# arenas it ends with. The saves are real ones (engine/retrieval/index_saver.py's thread,
# writing `.index/`), each after another process's writes, as the soak's reader saved one
# every 200 changes. The writer is another process: its own threads (the fsync pool) would
# count arenas here.
WRITER_SCRIPT = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from engine.facade.factory import open_engine
    from engine.facade.service import MemoryService
    from engine.memory.remember import RememberRequest
    from engine.retrieval.embeddings import EmbedderStatus

    home, round_ = Path(sys.argv[1]), int(sys.argv[2])
    writer = MemoryService(open_engine(home=home, embedder_status=EmbedderStatus(None, "lexical")))
    with writer.write_batch():
        for n in range(200):
            text = f"note {round_} {n} " + " ".join(f"w{round_}x{n}y{k}" for k in range(12))
            writer.remember(RememberRequest(text=text, scopes=["s"], caller="w",
                                            session="w", decision="add"))
    """
)
ARENAS_SCRIPT = textwrap.dedent(
    """
    import ctypes, re, subprocess, sys
    from pathlib import Path
    from engine.facade.factory import open_engine
    from engine.retrieval import index_cache, persisted
    from engine.retrieval.embeddings import EmbedderStatus

    persisted.PERSIST_MIN_FACTS = 1
    index_cache.SAVE_BEHIND_MIN = 1
    home, writer = Path(sys.argv[1]), sys.argv[3]
    reader = open_engine(home=home, embedder_status=EmbedderStatus(None, "lexical"))
    for round_ in range(6):
        subprocess.run([sys.executable, "-c", writer, str(home), str(round_)], check=True)
        reader.retrieval()  # catches up, then saves the copy from a thread
        saving = reader._snapshots.saving
        assert saving is not None
        saving.join()
    libc = ctypes.CDLL(None)
    libc.fopen.restype = ctypes.c_void_p
    libc.fopen.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
    libc.malloc_info.argtypes = [ctypes.c_int, ctypes.c_void_p]
    libc.fclose.argtypes = [ctypes.c_void_p]
    report = Path(sys.argv[2])
    out = libc.fopen(str(report).encode(), b"w")
    libc.malloc_info(0, out)
    libc.fclose(out)
    print(len(re.findall(r'<heap nr="', report.read_text())))
    """
)


@pytest.mark.sqlite_only
@pytest.mark.skipif(not _glibc_malloc_info(), reason="glibc's malloc arenas only")
def test_the_threads_that_save_the_index_keep_no_memory_of_their_own(tmp_path: Path) -> None:
    """Each thread that wrote the index copy used to take a malloc arena of its own and
    keep its temporaries there for good (glibc trims an arena's top only past the 64 MiB
    that engine/retrieval/heap.py keeps for recalls, and a thread still ending when the next
    one started made that one take another arena): six saves left 5 to 10 arenas. Now one
    thread makes every save (engine/retrieval/index_saver.py): the main arena and the
    saver's. In a fresh interpreter, so no other test's threads count."""
    report = tmp_path / "malloc.xml"
    done = subprocess.run(
        [sys.executable, "-c", ARENAS_SCRIPT, str(tmp_path / "home"), str(report), WRITER_SCRIPT],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert re.fullmatch(r"\d+\n", done.stdout), done.stdout
    assert int(done.stdout) <= 2
