"""The approximate-neighbour index (engine/retrieval/ann_index.py): on a graph small enough
that HNSW is exact in practice (the search expansion covers every row) it answers what the
exact int8 scan answers, the same ids and the same score bits, through adds, removes, a save
and a mapped reopen; a filter is never crossed; a torn, overwritten or stale file is refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import engine.retrieval.ann_index as ann_index
from engine.retrieval.ann_file import DamagedIndexFile, IndexFileRefused, StaleIndexFile
from engine.retrieval.ann_index import AnnIndex, prefer_exact, row_scales
from engine.retrieval.quantized import QuantizedBlock, cosines, quantize

DIMS = 16
ALL = 10_000  # an expansion past every row: the graph search visits them all


def unit_rows(seeds: list[int]) -> np.ndarray:
    """A unit vector per seed (the same seed, the same vector: duplicates make ties)."""
    rows = np.vstack([np.random.default_rng(seed).standard_normal(DIMS) for seed in seeds])
    unit: np.ndarray = (rows / np.linalg.norm(rows, axis=1, keepdims=True)).astype(np.float32)
    return unit


def exact(
    rows: dict[int, np.ndarray], query: np.ndarray, k: int, allowed: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The exact scan over the current rows: best first, ties by id."""
    ids = np.array(sorted(key for key in rows if allowed is None or allowed[key]), np.int64)
    if not len(ids):
        return ids, np.zeros(0, np.float32)
    scores = cosines(quantize(np.vstack([rows[key] for key in ids.tolist()])), query)
    order = np.lexsort((ids, -scores))[:k]
    return ids[order], scores[order]


def assert_same(
    found: tuple[np.ndarray, np.ndarray], expected: tuple[np.ndarray, np.ndarray]
) -> None:
    assert found[0].tolist() == expected[0].tolist()
    assert found[1].tobytes() == expected[1].tobytes()  # the exact path's bits


# One step: add these (id, seed) pairs, or remove these ids; ids 0..59, seeds 0..39.
steps = st.lists(
    st.one_of(
        st.tuples(
            st.just("add"),
            st.lists(
                st.tuples(st.integers(0, 59), st.integers(0, 39)),
                min_size=1,
                max_size=12,
                unique_by=lambda pair: pair[0],
            ),
        ),
        st.tuples(st.just("remove"), st.lists(st.integers(0, 59), max_size=8)),
    ),
    min_size=1,
    max_size=12,
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    steps=steps, mapped_after=st.integers(0, 12), seed=st.integers(0, 10**6), k=st.integers(1, 20)
)
def test_search_answers_as_the_exact_scan_after_adds_and_removes(
    tmp_path: Path, steps: list[tuple[str, list[Any]]], mapped_after: int, seed: int, k: int
) -> None:
    """Changes before `mapped_after` go into the graph itself; then it is saved and reopened
    mapped, and the rest are kept beside the mapped graph."""
    index, rows = AnnIndex(DIMS), dict[int, np.ndarray]()
    path = tmp_path / f"{seed}-{mapped_after}.ann"
    for number, (kind, items) in enumerate(steps):
        if number == mapped_after:
            index.save(path, generation=number)
            index = AnnIndex.open(path, dims=DIMS, generation=number)
            assert index.mapped
        if kind == "add":
            ids = [key for key, _ in items]
            vectors = unit_rows([row_seed for _, row_seed in items])
            index.add(np.array(ids), vectors)
            rows.update(zip(ids, vectors, strict=True))
        else:
            index.remove(np.array(items, dtype=np.int64))
            for key in items:
                rows.pop(key, None)
        assert len(index) == len(rows)
    for query in unit_rows([seed, seed + 1]):
        assert_same(index.search(query, k, expansion=ALL), exact(rows, query, k))
    index.close()


@settings(max_examples=60, deadline=None)
@given(
    count=st.integers(1, 80),
    visible=st.lists(st.booleans(), min_size=1, max_size=100),
    k=st.integers(1, 30),
    seed=st.integers(0, 10**6),
)
def test_a_filtered_search_never_returns_a_filtered_out_id(
    count: int, visible: list[bool], k: int, seed: int
) -> None:
    """Masks from none to all visible (and shorter than the ids: an id past the mask's end is
    not visible), and the same filter as a function: only visible ids, and the exact scan's
    answer over the visible rows."""
    vectors = unit_rows([seed + n for n in range(count)])
    index = AnnIndex(DIMS)
    index.add(np.arange(count), vectors)
    rows = dict(enumerate(vectors))
    mask = np.zeros(count, dtype=bool)
    mask[: min(count, len(visible))] = visible[:count]
    query = unit_rows([seed + 10**7])[0]
    expected = exact(rows, query, k, mask)
    for allowed in (np.asarray(visible, dtype=bool), lambda ids: mask[ids]):
        found = index.search(query, k, allowed=allowed, expansion=ALL)
        assert mask[found[0]].all()
        assert_same(found, expected)


@settings(max_examples=40, deadline=None)
@given(
    count=st.integers(1, 300),
    removed=st.integers(0, 40),
    visible=st.floats(0.05, 1.0),
    k=st.integers(1, 30),
    seed=st.integers(0, 10**6),
    mapped=st.booleans(),
)
def test_a_batch_search_answers_as_each_search_alone(
    tmp_path_factory: pytest.TempPathFactory,
    count: int,
    removed: int,
    visible: float,
    k: int,
    seed: int,
    mapped: bool,
) -> None:
    """search_many walks the graph for all queries at once (an import's dedup); each answer
    is the one `search` gives for that query, filter, hidden and pending rows included."""
    vectors = unit_rows([seed + n for n in range(count)])
    index = AnnIndex(DIMS)
    index.add(np.arange(count), vectors)
    if mapped:
        path = tmp_path_factory.mktemp("batch") / "graph.ann"
        index.save(path, generation=1)
        index = AnnIndex.open(path, dims=DIMS, generation=1)
        index.add(np.arange(count, count + 5), unit_rows([seed + 2 * 10**7 + n for n in range(5)]))
    index.remove(np.arange(0, count, max(1, count // max(removed, 1)))[:removed])
    mask = np.random.default_rng(seed).random(count + 5) < visible
    queries = unit_rows([seed + 10**7 + n for n in range(7)])
    for allowed in (None, mask):
        share = float(mask.mean()) if allowed is not None else 1.0
        batch = index.search_many(queries, k, allowed=allowed, share=share, expansion=ALL)
        for query, found in zip(queries, batch, strict=True):
            alone = index.search(query, k, allowed=allowed, share=share, expansion=ALL)
            assert_same(found, alone)
    index.close()


class CountedWalks:
    """The index's graph, its searches counted (a walk is what a search costs)."""

    def __init__(self, graph: Any) -> None:
        self._graph, self.walks = graph, 0

    def search(self, *args: Any, **kwargs: Any) -> Any:
        self.walks += 1
        return self._graph.search(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._graph, name)

    def __len__(self) -> int:
        return len(self._graph)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in ("_graph", "walks"):
            object.__setattr__(self, name, value)
        else:
            setattr(self._graph, name, value)


@pytest.mark.parametrize("batch", [False, True])
def test_a_floor_ends_the_search_once_the_walk_reaches_below_it(batch: bool) -> None:
    """A caller that keeps no row under a cosine (dedup's weak tier) is answered from one
    walk when its filter lets few rows through, as long as that walk reached rows under the
    floor: the rows at or above the floor are the exact scan's, and the rest are not asked
    for (without the floor the graph is walked again and again, doubling)."""
    count, k, floor = 3_000, 10, 0.5
    vectors = unit_rows(list(range(count)))
    index = AnnIndex(DIMS)
    index.add(np.arange(count), vectors)
    rows = dict(enumerate(vectors))
    # The caller's share is an estimate (Snapshot.text_share: at most the visible positions'),
    # here ten times too high, so the first walk comes back with too few allowed rows.
    allowed = np.arange(count) % 200 == 0
    queries = unit_rows([10**6 + n for n in range(6)])
    for floored in (None, floor):
        counted = CountedWalks(index._graph)
        index._graph = counted  # type: ignore[assignment]
        if batch:
            answers = index.search_many(queries, k, allowed=allowed, share=0.05, floor=floored)
        else:
            answers = [
                index.search(q, k, allowed=allowed, share=0.05, floor=floored) for q in queries
            ]
        index._graph = counted._graph
        for query, (ids, scores) in zip(queries, answers, strict=True):
            best = exact(rows, query, k, allowed)
            if floored is None:
                assert_same((ids, scores), best)
                continue
            above = best[1] >= floor
            assert ids[: int(above.sum())].tolist() == best[0][above].tolist()
            assert scores[: int(above.sum())].tobytes() == best[1][above].tobytes()
        if floored is None:
            unfloored_walks = counted.walks
        else:
            assert counted.walks == (1 if batch else len(queries)) < unfloored_walks
    index.close()


def test_a_batch_walks_its_short_queries_again_together() -> None:
    """A batch whose walks let too few rows through (the caller's share, an estimate, ten
    times too high) is walked again, wider, for those queries together: a few walks for the
    whole batch, not one search per query, and each answer is still the exact scan's."""
    count, k = 3_000, 10
    vectors = unit_rows(list(range(count)))
    index = AnnIndex(DIMS)
    index.add(np.arange(count), vectors)
    rows = dict(enumerate(vectors))
    allowed = np.arange(count) % 200 == 0
    queries = unit_rows([2 * 10**6 + n for n in range(6)])
    counted = CountedWalks(index._graph)
    index._graph = counted  # type: ignore[assignment]
    answers = index.search_many(queries, k, allowed=allowed, share=0.05)
    index._graph = counted._graph
    for query, found in zip(queries, answers, strict=True):
        assert_same(found, exact(rows, query, k, allowed))
    assert 1 < counted.walks <= 3  # 1,040 rows, then 2,080, then every row
    index.close()


def test_a_reopened_index_answers_as_the_one_in_memory(tmp_path: Path) -> None:
    vectors = unit_rows(list(range(300)))
    index = AnnIndex(DIMS)
    index.add(np.arange(300), vectors)
    index.remove(np.arange(0, 300, 7))
    index.save(tmp_path / "graph.ann", generation=12)
    reopened = AnnIndex.open(tmp_path / "graph.ann", dims=DIMS, generation=12)
    assert reopened.mapped and reopened.generation == 12 and len(reopened) == len(index)
    mask = np.arange(300) % 3 == 0
    for query in unit_rows([1000, 1001, 1002, 5]):
        for allowed in (None, mask):
            assert_same(
                reopened.search(query, 10, allowed=allowed),
                index.search(query, 10, allowed=allowed),
            )


def test_a_mapped_index_with_many_changes_is_loaded_and_answers_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past PENDING_LIMIT changes the mapped graph is copied into memory, the changes applied."""
    monkeypatch.setattr(ann_index, "PENDING_LIMIT", 10)
    index = AnnIndex(DIMS)
    index.add(np.arange(50), unit_rows(list(range(50))))
    index.save(tmp_path / "graph.ann", generation=1)
    index = AnnIndex.open(tmp_path / "graph.ann", dims=DIMS)
    rows = dict(enumerate(unit_rows(list(range(50)))))
    index.remove(np.array([3, 4]))
    index.add(np.array([60, 5]), unit_rows([600, 500]))  # 5 replaced
    assert index.mapped
    for key in (3, 4):
        rows.pop(key)
    rows.update({60: unit_rows([600])[0], 5: unit_rows([500])[0]})
    more = list(range(70, 82))
    index.add(np.array(more), unit_rows(more))
    rows.update(zip(more, unit_rows(more), strict=True))
    assert not index.mapped and len(index) == len(rows)
    for query in unit_rows([7, 8000]):
        assert_same(index.search(query, 15, expansion=ALL), exact(rows, query, 15))


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    index = AnnIndex(DIMS)
    index.add(np.arange(200), unit_rows(list(range(200))))
    index.save(tmp_path / "graph.ann", generation=5)
    return tmp_path / "graph.ann"


@pytest.mark.parametrize("cut", [1, 20, 4096, -1])
def test_a_truncated_file_is_refused(saved: Path, cut: int) -> None:
    data = saved.read_bytes()
    saved.write_bytes(data[:cut] if cut > 0 else data[: len(data) // 2])
    with pytest.raises(DamagedIndexFile):
        AnnIndex.open(saved, dims=DIMS)


def test_an_overwritten_byte_in_the_graph_is_refused(saved: Path) -> None:
    data = bytearray(saved.read_bytes())
    data[len(data) // 3] ^= 0x5A
    saved.write_bytes(bytes(data))
    with pytest.raises(DamagedIndexFile, match="checksum"):
        AnnIndex.open(saved, dims=DIMS)


def test_an_empty_or_foreign_file_is_refused(tmp_path: Path) -> None:
    for content in (b"", b"not an index at all, just text" * 10):
        (tmp_path / "graph.ann").write_bytes(content)
        with pytest.raises(DamagedIndexFile):
            AnnIndex.open(tmp_path / "graph.ann", dims=DIMS)


def test_a_stale_file_is_refused_and_a_current_one_opens(saved: Path) -> None:
    with pytest.raises(StaleIndexFile, match="generation 5, expected 6"):
        AnnIndex.open(saved, dims=DIMS, generation=6)
    with pytest.raises(StaleIndexFile, match="dims"):
        AnnIndex.open(saved, dims=DIMS * 2, generation=5)
    assert issubclass(StaleIndexFile, IndexFileRefused)
    assert len(AnnIndex.open(saved, dims=DIMS, generation=5)) == 200


def test_a_save_replaces_the_file_whole(saved: Path) -> None:
    index = AnnIndex.open(saved, dims=DIMS)
    index.add(np.array([500]), unit_rows([500]))
    index.save(saved, generation=6)
    assert len(AnnIndex.open(saved, dims=DIMS, generation=6)) == 201
    assert [p.name for p in saved.parent.iterdir()] == [saved.name]  # no temp file left


@given(seeds=st.lists(st.integers(0, 10**6), min_size=1, max_size=20))
def test_row_scales_are_quantize_s_bits(seeds: list[int]) -> None:
    block = quantize(unit_rows(seeds))
    assert row_scales(block.values).tobytes() == block.scales.tobytes()


def test_prefer_exact_for_small_stores_and_narrow_filters() -> None:
    assert prefer_exact(1_000, 1_000)  # a small store
    assert prefer_exact(99_999, 1_000_000)  # few visible
    assert prefer_exact(400_000, 10_000_000)  # under a twentieth visible
    assert not prefer_exact(100_000, 1_000_000)
    assert not prefer_exact(500_000, 1_000_000)
    assert not prefer_exact(1_000_000, 1_000_000)


def test_the_exact_scan_still_works_when_the_index_module_is_imported_first() -> None:
    """usearch loads numkong with RTLD_GLOBAL; a simsimd loaded after it is broken
    (ann_index imports quantized first for this). A fresh interpreter, ann_index first."""
    script = (
        "import engine.retrieval.ann_index, numpy as np\n"
        "from engine.retrieval.quantized import cosines, quantize\n"
        "rows = quantize(np.eye(4, dtype=np.float32))\n"
        "print(cosines(rows, np.eye(4, dtype=np.float32)[1]).tolist())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0.0, 1.0, 0.0, 0.0]"


def test_scores_are_the_exact_scan_s_for_the_same_rows_given_as_int8() -> None:
    vectors = unit_rows(list(range(40)))
    block = quantize(vectors)
    index = AnnIndex(DIMS)
    index.add(np.arange(40), QuantizedBlock(block.values, block.scales))
    ids, scores = index.search(vectors[3], 40, expansion=ALL)
    assert scores.tobytes() == cosines(block, vectors[3])[ids].tobytes()
