"""Which approximate-neighbour library the index should keep (issue 38), chosen by measurement:
usearch, hnswlib and faiss (HNSW each, with the quantized variants each offers), against the
exact int8 scan the engine does today (engine/retrieval/quantized.py), in the same run.

    python benchmarks/ann_choice.py [--sizes 100000,1000000] [--cache DIR] [--variants ...]

The store is benchmarks/speed.py's corpus (MSC persona facts: each once in each of 8 scopes,
then joined three to a sentence), embedded by the bundled model as the engine embeds facts
(embeddings.embed_facts: a row per text and per sentence), quantized as the index keeps it.
Queries: 2,000 recalls (every LoCoMo question, then MSC persona facts) and 2,000 proposes (the
next texts the corpus would make). Each variant runs in a process of its own and is reopened
from its file in another (cold start). Every answer is scored again with the engine's int8
cosine, so "agree" means the exact scan would have put a row of that score at that place.
Times are wall and CPU (this process's): on a shared machine the CPU time is what compares.
Vectors and exact answers are cached under --cache (outside the repository). Results go to
benchmarks/results/<--name>.md."""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# simsimd (in quantized) before any library: usearch loads numkong with RTLD_GLOBAL, whose
# parse_tensor then shadows simsimd's and breaks every simsimd product (docs/retrieval.md).
from engine.retrieval.quantized import QuantizedBlock, cosines, quantize  # isort: skip
from benchmarks.common import DATA, RESULTS, machine
from benchmarks.speed import corpus, persona_facts

QUERIES, FILTERED_QUERIES = 2_000, 200
FILTERED_SECONDS = 60.0  # a filtered cell stops after this long (hnswlib calls Python per node)
KS = (10, 64, 256)  # recall's top 10, a candidate pool, and MATCH_WINDOW (ranking.py)
EF = {10: (128, 512, 2048), 64: (256, 1024), 256: (512, 2048)}  # expansions tried per k
PROPOSE_K, PROPOSE_EF, LIKELY, PLACES = 32, 128, 0.86, 8  # matching.py: 4 x 8 looked at
CONNECTIVITY, EF_ADD, BUILD_THREADS = 16, 128, 2  # the same graph for every library
ADDS, UPDATES = 2_000, 1_000  # rows added one by one after the bulk build; rows replaced
TIE = 1e-6
VARIANTS = ("usearch-i8", "usearch-f16", "hnswlib-f32", "faiss-f32", "faiss-sq8", "module")


def rss_mib(field: str = "VmRSS") -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] * 1000 if ordered else 0.0


def spread(walls: list[float], cpus: list[float]) -> dict[str, str]:
    return {
        "wall p50 / p95 ms": f"{pct(walls, 0.5):.2f} / {pct(walls, 0.95):.2f}",
        "cpu p50 / p95 ms": f"{pct(cpus, 0.5):.2f} / {pct(cpus, 0.95):.2f}",
    }


class Clock:
    """Wall and CPU seconds of a block (CPU: every thread of this process)."""

    def __enter__(self) -> Clock:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *_: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


def top(scores: np.ndarray, k: int) -> np.ndarray:
    """The k best scores, best first."""
    return np.sort(np.partition(scores, len(scores) - min(k, len(scores)))[-k:])[::-1]


def prepare(size: int, folder: Path) -> None:
    """Embed the store and the queries, and work out the exact answers, once per size."""
    if (folder / "done").exists():
        return
    from engine.retrieval.embeddings import embed_facts, load_embedder

    folder.mkdir(parents=True, exist_ok=True)
    embedder = load_embedder().embedder
    assert embedder is not None, "the bundled model did not load"
    facts = persona_facts(DATA / "msc" / "msc_personas_all.json")
    texts = [text for text, _ in corpus(facts, size + QUERIES)]
    blocks = [quantize(b) for b in embed_facts(embedder, texts[:size])]
    rows = QuantizedBlock(
        np.vstack([b.values for b in blocks]), np.concatenate([b.scales for b in blocks])
    )
    whole = np.concatenate([np.arange(len(b)) == 0 for b in blocks])
    locomo = json.loads((DATA / "locomo" / "locomo-dev.json").read_text(encoding="utf-8"))
    asked = [qa["question"] for conversation in locomo for qa in conversation["qa"]]
    asked += random.Random(7).sample(facts, QUERIES - len(asked))
    recall_q, propose_q = embedder.embed(asked[:QUERIES]), embedder.embed(texts[size:])
    ref_scores = np.vstack([top(cosines(rows, q), max(KS)) for q in recall_q])
    likely = np.full((QUERIES, PLACES), -1.0, np.float32)
    for n, q in enumerate(propose_q):  # a propose compares whole texts (row 0)
        best = top(np.where(whole, cosines(rows, q), -1.0), PLACES)
        likely[n, : int((best >= LIKELY).sum())] = best[best >= LIKELY]
    arrays = dict(values=rows.values, scales=rows.scales, whole=whole, recall_q=recall_q,
                  propose_q=propose_q, ref_scores=ref_scores, likely=likely)  # fmt: skip
    rng = np.random.default_rng(11)
    for name, share in (("narrow", 0.01), ("wide", 0.5)):
        visible = np.flatnonzero(rng.random(len(rows)) < share)
        part = QuantizedBlock(rows.values[visible], rows.scales[visible])
        arrays[f"mask_{name}"] = np.isin(np.arange(len(rows)), visible)
        arrays[f"ref_{name}"] = np.vstack([top(cosines(part, q), 64) for q in recall_q[:200]])
    for name, array in arrays.items():
        np.save(folder / f"{name}.npy", array)
    (folder / "done").write_text("ok")


# -- the candidates: build, add, remove (False: not supported), search, save, open -----------


class Usearch:
    """usearch HNSW, cosine; i8 stores the engine's own int8 rows, f16 the dequantized ones."""

    def __init__(self, dtype: str) -> None:
        self.dtype = dtype

    def build(self, keys: np.ndarray, values: np.ndarray, floats: np.ndarray) -> None:
        from usearch.index import Index

        self.index = Index(ndim=values.shape[1], metric="cos", dtype=self.dtype,
                           connectivity=CONNECTIVITY, expansion_add=EF_ADD)  # fmt: skip
        self.index.add(keys, values if self.dtype == "i8" else floats, threads=BUILD_THREADS)

    def add(self, keys: np.ndarray, values: np.ndarray, floats: np.ndarray) -> None:
        self.index.add(keys, values if self.dtype == "i8" else floats, threads=1)

    def remove(self, keys: np.ndarray) -> bool:
        self.index.remove(keys)
        return True

    def search(self, qi: np.ndarray, qf: np.ndarray, k: int, ef: int, mask: Any = None) -> Any:
        self.index.expansion_search = ef
        if mask is None:
            return self.index.search(qi if self.dtype == "i8" else qf, k, threads=1).keys
        # No predicate in usearch's Python API: ask for more and keep the allowed, doubling.
        count = min(len(mask), int(1.5 * k * len(mask) / max(1, int(mask.sum()))) + k)
        while True:
            found = self.search(qi, qf, count, ef)
            if (found := found[mask[found]]).size >= k or count >= len(mask):
                return found[:k]
            count = min(len(mask), 2 * count)

    def save(self, path: Path) -> None:
        self.index.save(str(path))

    def open(self, path: Path, mapped: bool) -> None:
        from usearch.index import Index

        self.index = Index.restore(str(path), view=mapped)


class Hnswlib:
    def build(self, keys: np.ndarray, values: np.ndarray, floats: np.ndarray) -> None:
        import hnswlib

        self.index, self.lists = hnswlib.Index(space="ip", dim=floats.shape[1]), {}
        self.index.init_index(len(keys) + ADDS, M=CONNECTIVITY, ef_construction=EF_ADD)
        self.index.add_items(floats, keys, num_threads=BUILD_THREADS)

    def add(self, keys: np.ndarray, values: np.ndarray, floats: np.ndarray) -> None:
        self.index.add_items(floats, keys, num_threads=1)  # an existing label: replaced

    def remove(self, keys: np.ndarray) -> bool:
        for key in keys.tolist():
            self.index.mark_deleted(key)
        return True

    def search(self, qi: np.ndarray, qf: np.ndarray, k: int, ef: int, mask: Any = None) -> Any:
        self.index.set_ef(ef)
        # The filter is a Python function called per node; the mask as a list, made once.
        allowed = None if mask is None else self.lists.setdefault(id(mask), mask.tolist())
        found = self.index.knn_query(qf, k, num_threads=1, filter=allowed and allowed.__getitem__)
        return found[0][0]

    def save(self, path: Path) -> None:
        self.index.save_index(str(path))

    def open(self, path: Path, mapped: bool) -> None:
        import hnswlib

        self.index = hnswlib.Index(space="ip", dim=256)
        self.index.load_index(str(path))


class Faiss:
    """faiss HNSW over float32 rows, or over its own 8-bit scalar quantizer (trained)."""

    def __init__(self, quantized: bool) -> None:
        self.quantized = quantized

    def build(self, keys: np.ndarray, values: np.ndarray, floats: np.ndarray) -> None:
        import faiss

        faiss.omp_set_num_threads(BUILD_THREADS)
        dims, ip = floats.shape[1], faiss.METRIC_INNER_PRODUCT
        if self.quantized:
            self.index = faiss.IndexHNSWSQ(dims, faiss.ScalarQuantizer.QT_8bit, CONNECTIVITY, ip)
            self.index.train(floats[:100_000])
        else:
            self.index = faiss.IndexHNSWFlat(dims, CONNECTIVITY, ip)
        self.index.hnsw.efConstruction = EF_ADD
        self.index.add(floats)  # ids are the rows' order: faiss HNSW takes no ids of its own
        faiss.omp_set_num_threads(1)

    def add(self, keys: np.ndarray, values: np.ndarray, floats: np.ndarray) -> None:
        assert int(keys[0]) == self.index.ntotal
        self.index.add(floats)

    def remove(self, keys: np.ndarray) -> bool:
        return False  # IndexHNSW::remove_ids raises "not implemented"

    def search(self, qi: np.ndarray, qf: np.ndarray, k: int, ef: int, mask: Any = None) -> Any:
        import faiss

        selector = None
        if mask is not None:
            self.bits = np.packbits(mask, bitorder="little")  # alive while the selector reads
            selector = faiss.IDSelectorBitmap(len(mask), faiss.swig_ptr(self.bits))
        params = faiss.SearchParametersHNSW(efSearch=ef, sel=selector)
        found = self.index.search(qf[None, :], k, params=params)[1][0]
        return found[found >= 0]

    def save(self, path: Path) -> None:
        import faiss

        faiss.write_index(self.index, str(path))

    def open(self, path: Path, mapped: bool) -> None:
        import faiss

        faiss.omp_set_num_threads(1)
        self.index = faiss.read_index(str(path), faiss.IO_FLAG_MMAP if mapped else 0)


class Module:
    """engine/retrieval/ann_index.py as the engine would keep it: a node per distinct int8 row
    (keyed by its first row; the engine would key one per content hash), standing for every
    present row that holds it. Copies of one row are what HNSW's neighbour pruning leaves
    unreachable (docs/retrieval.md); the store has each persona fact in up to 8 scopes."""

    def __init__(self, values: np.ndarray | None) -> None:
        self.values = values
        if values is not None:
            rows = values.view(np.dtype((np.void, values.shape[1]))).reshape(-1)
            _, self.first, group = np.unique(rows, return_index=True, return_inverse=True)
            self.group = group.reshape(-1)  # row -> its distinct row
            self.order = np.argsort(self.group, kind="stable")
            self.starts = np.concatenate([[0], np.cumsum(np.bincount(self.group))])
            self.present = np.zeros(len(values), bool)

    def members(self, nodes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The rows of these nodes, node by node, and the index of each one's node."""
        groups = self.group[nodes]
        lengths = self.starts[groups + 1] - self.starts[groups]
        owner = np.repeat(np.arange(len(nodes)), lengths)
        offsets = np.arange(lengths.sum()) - np.repeat(np.cumsum(lengths) - lengths, lengths)
        return self.order[np.repeat(self.starts[groups], lengths) + offsets], owner

    def build(self, keys: np.ndarray, values: np.ndarray, floats: np.ndarray) -> None:
        from engine.retrieval.ann_index import AnnIndex

        self.index = AnnIndex(values.shape[1])
        self.present[keys] = True
        self.node(self.first[np.unique(self.group[keys])])

    def node(self, nodes: np.ndarray) -> None:
        rows = self.values[nodes]
        self.index.add(nodes, QuantizedBlock(rows, np.ones(len(rows), np.float32)))

    def add(self, keys: np.ndarray, values: np.ndarray, floats: np.ndarray) -> None:
        for key in keys.tolist():
            node = self.first[self.group[key : key + 1]]
            if not self.present[self.members(node)[0]].any():
                self.node(node)
            self.present[key] = True

    def remove(self, keys: np.ndarray) -> bool:
        self.present[keys.astype(np.int64)] = False
        nodes = np.unique(self.first[self.group[keys.astype(np.int64)]])
        rows, owner = self.members(nodes)
        self.index.remove(nodes[np.bincount(owner[self.present[rows]], minlength=len(nodes)) == 0])
        return True

    def search(self, qi: np.ndarray, qf: np.ndarray, k: int, ef: int, mask: Any = None) -> Any:
        if self.values is None:  # a cold process: the nodes alone
            return self.index.search(qf, k, expansion=ef)[0]
        visible = self.present if mask is None else self.present & mask

        def allowed(nodes: np.ndarray) -> np.ndarray:
            rows, owner = self.members(nodes)
            return np.bincount(owner[visible[rows]], minlength=len(nodes)) > 0

        share = None if mask is None else float(visible.mean())
        nodes = self.index.search(qf, k, allowed=allowed, share=share, expansion=ef)[0]
        rows = self.members(nodes)[0]
        return rows[visible[rows]][:k]

    def save(self, path: Path) -> None:
        self.index.save(path, generation=1)

    def open(self, path: Path, mapped: bool) -> None:
        from engine.retrieval.ann_index import AnnIndex

        self.index = AnnIndex.open(path, dims=256, generation=1)


def candidate(name: str, values: np.ndarray | None = None) -> Any:
    return {"usearch-i8": lambda: Usearch("i8"), "usearch-f16": lambda: Usearch("f16"),
            "hnswlib-f32": Hnswlib, "faiss-f32": lambda: Faiss(False),
            "faiss-sq8": lambda: Faiss(True), "module": lambda: Module(values)}[name]()  # fmt: skip


# -- measuring one candidate (in a process of its own) ----------------------------------------


class Tally:
    """Places of the exact answers (their scores, best first) where the index's answer (the
    exact scores of what it returned) has a row as good; the gap at each place missed."""

    def __init__(self) -> None:
        self.agreed, self.found, self.places = 0, 0, 0
        self.gaps, self.walls, self.cpus = list[float](), list[float](), list[float]()

    def count(self, ref: np.ndarray, got: np.ndarray, clock: Clock | None = None) -> None:
        padded = np.full(len(ref), -1.0, np.float32)
        padded[: min(len(ref), len(got))] = np.sort(got)[::-1][: len(ref)]
        missed = padded < ref - TIE
        self.agreed, self.places = self.agreed + int((~missed).sum()), self.places + len(ref)
        # recall@k: of the k returned, those the exact top k holds (ties at the k-th count in)
        self.found += int((padded >= ref[-1] - TIE).sum()) if len(ref) else 0
        self.gaps.extend((ref[missed] - padded[missed]).tolist())
        if clock is not None:
            self.walls.append(clock.wall)
            self.cpus.append(clock.cpu)

    def row(self) -> dict[str, str]:
        gaps = self.gaps or [0.0]
        found = spread(self.walls, self.cpus) if self.walls else {}
        found["recall@k %"] = f"{100 * self.found / max(1, self.places):.2f}"
        found["agree % (places)"] = (
            f"{100 * self.agreed / max(1, self.places):.2f} ({self.places:,})"
        )
        found["gap mean / max"] = f"{np.mean(gaps):.4f} / {np.max(gaps):.3f}"
        return found


def measure(name: str, folder: Path, work: Path) -> dict[str, Any]:
    data = {path.stem: np.load(path) for path in folder.glob("*.npy")}
    values, scales = data["values"], data["scales"]
    floats = QuantizedBlock(values, scales).floats()
    keys = np.arange(len(values), dtype=np.uint64)
    asked = quantize(data["recall_q"])
    qi, qf = asked.values, asked.floats()
    exact = lambda q, ids: cosines(QuantizedBlock(values[ids], scales[ids]), q)  # noqa: E731
    found: dict[str, Any] = {"load average (1 min) at start": f"{os.getloadavg()[0]:.1f}"}
    before, index, bulk = rss_mib(), candidate(name, values), len(keys) - ADDS
    with Clock() as clock:
        index.build(keys[:bulk], values[:bulk], floats[:bulk])
    found["bulk build of n-2000 rows s, wall / cpu"] = f"{clock.wall:.1f} / {clock.cpu:.1f}"
    with Clock() as clock:
        for n in range(bulk, len(keys)):
            index.add(keys[n : n + 1], values[n : n + 1], floats[n : n + 1])
    found["single adds ms each, wall / cpu"] = (
        f"{clock.wall / ADDS * 1e3:.2f} / {clock.cpu / ADDS * 1e3:.2f}"
    )
    changed = np.random.default_rng(5).choice(len(keys), UPDATES, replace=False).astype(np.uint64)
    with Clock() as clock:
        removable = index.remove(changed)
    found["remove ms each (cpu)"] = f"{clock.cpu / UPDATES * 1e3:.3f}" if removable else "no"
    if removable:
        with Clock() as clock:
            for key in changed.tolist():  # back, as an update would bring them
                index.add(np.array([key], np.uint64), values[key : key + 1], floats[key : key + 1])
        found["re-add after remove ms each (cpu)"] = f"{clock.cpu / UPDATES * 1e3:.2f}"
    found["index memory MiB (rss after - before)"] = round(rss_mib() - before)
    for k in KS:
        for ef in EF[k]:
            tally = Tally()
            for n in range(QUERIES):
                with Clock() as clock:
                    ids = index.search(qi[n], qf[n], k, ef).astype(np.int64)
                tally.count(data["ref_scores"][n, :k], exact(data["recall_q"][n], ids), clock)
            found[f"recall k={k} ef={ef}"] = tally.row()
    proposed, tally = quantize(data["propose_q"]), Tally()
    for n, (pi, pf) in enumerate(zip(proposed.values, proposed.floats(), strict=True)):
        ids = index.search(pi, pf, PROPOSE_K, PROPOSE_EF).astype(np.int64)
        ids = ids[data["whole"][ids]]  # a propose compares whole texts
        scores = exact(data["propose_q"][n], ids)
        tally.count(data["likely"][n][data["likely"][n] >= 0], scores[scores >= LIKELY])
    found[f"propose likely tier, k={PROPOSE_K} ef={PROPOSE_EF}"] = tally.row()
    for which in ("narrow", "wide"):
        mask = data[f"mask_{which}"]
        for k, ef in ((10, 512), (64, 1024)):
            tally, began = Tally(), time.perf_counter()
            for n in range(FILTERED_QUERIES):
                with Clock() as clock:
                    try:
                        ids = index.search(qi[n], qf[n], k, ef, mask).astype(np.int64)
                    except RuntimeError:  # hnswlib: fewer than k found
                        ids = np.zeros(0, np.int64)
                assert mask[ids].all(), f"{name} returned a filtered-out row"
                tally.count(data[f"ref_{which}"][n, :k], exact(data["recall_q"][n], ids), clock)
                if time.perf_counter() - began > FILTERED_SECONDS:
                    break
            found[f"filtered {which} k={k} ef={ef} ({len(tally.walls)} queries)"] = tally.row()
    path = work / f"{name}.index"
    with Clock() as clock:
        index.save(path)
    found["save s / file MiB"] = f"{clock.wall:.2f} / {path.stat().st_size / 2**20:.0f}"
    found["peak rss MiB (data included)"] = round(rss_mib("VmHWM"))
    found["load average (1 min) at end"] = f"{os.getloadavg()[0]:.1f}"
    return found


def cold(name: str, folder: Path, work: Path, mapped: bool) -> dict[str, Any]:
    """A fresh process: import the library, open the file, answer 200 recalls (k=64)."""
    asked = quantize(np.load(folder / "recall_q.npy")[:200])
    before, clocks = rss_mib(), []
    with Clock() as opening:
        index = candidate(name)
        index.open(work / f"{name}.index", mapped)
    for qi, qf in zip(asked.values, asked.floats(), strict=True):
        with Clock() as clock:
            index.search(qi, qf, 64, 1024)
        clocks.append(clock)
    return {"import + open s": f"{opening.wall:.3f}",
            "first query ms": f"{clocks[0].wall * 1e3:.1f}",
            "next 199, cpu p50 ms": f"{pct([c.cpu for c in clocks[1:]], 0.5):.2f}",
            "rss growth MiB": round(rss_mib() - before)}  # fmt: skip


# -- the exact scan, and the run --------------------------------------------------------------


def exact_baseline(folder: Path) -> dict[str, Any]:
    """The engine's scan as it runs today (quantized.cosines, its threads) and on one thread,
    then the top k; filtered as find_candidates scans (the visible rows alone when they are
    under a quarter of the store)."""
    import engine.retrieval.quantized as quantized

    rows = QuantizedBlock(np.load(folder / "values.npy"), np.load(folder / "scales.npy"))
    queries = np.load(folder / "recall_q.npy")[:300]
    found: dict[str, Any] = {"vector rows": f"{len(rows):,}"}
    for threads in (quantized.SCAN_THREADS, 1):
        engine_threads, quantized.SCAN_THREADS = quantized.SCAN_THREADS, threads
        for k in (10, 256):
            clocks = []
            for query in queries:
                with Clock() as clock:
                    top(cosines(rows, query), k)
                clocks.append(clock)
            found[f"scan + top {k}, {threads} thread(s)"] = spread(
                [c.wall for c in clocks], [c.cpu for c in clocks]
            )
        quantized.SCAN_THREADS = engine_threads
    for which in ("narrow", "wide"):
        mask, clocks = np.load(folder / f"mask_{which}.npy"), []
        for query in queries[:FILTERED_QUERIES]:
            with Clock() as clock:
                visible = np.flatnonzero(mask)
                if 4 * len(visible) < len(mask):
                    part = QuantizedBlock(rows.values[visible], rows.scales[visible])
                    top(cosines(part, query), 64)
                else:
                    top(cosines(rows, query)[visible], 64)
            clocks.append(clock)
        found[f"filtered {which} ({int(mask.sum()):,} visible) + top 64"] = spread(
            [c.wall for c in clocks], [c.cpu for c in clocks]
        )
    return found


def child(*args: str) -> dict[str, Any]:
    done = subprocess.run([sys.executable, __file__, *args], capture_output=True, text=True)
    if done.returncode != 0:
        return {"failed": (done.stderr or done.stdout)[-600:].replace("\n", " ")}
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(found: dict[str, dict[str, Any]]) -> list[str]:
    """A Markdown table: a column per variant, a row per measure (nested ones flattened)."""
    names, cells, measures = list(found), dict[tuple[str, str], str](), list[str]()
    for name, values in found.items():
        for key, value in values.items():
            for sub, cell in value.items() if isinstance(value, dict) else [("", value)]:
                measure = f"{key}: {sub}" if sub else key
                measures += [] if measure in measures else [measure]
                cells[measure, name] = f"{cell:,}" if isinstance(cell, int) else str(cell)
    lines = ["| measure | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    lines += [
        f"| {m} | " + " | ".join(cells.get((m, n), "") for n in names) + " |" for m in measures
    ]
    return [*lines, ""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100000")
    parser.add_argument("--cache", default="/tmp/gno-ann-choice")
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--name", default="ann_choice")
    parser.add_argument("--child", nargs=3, metavar=("VARIANT", "FOLDER", "WORK"))
    parser.add_argument("--cold", nargs=4, metavar=("VARIANT", "FOLDER", "WORK", "MAPPED"))
    args = parser.parse_args()
    if args.child or args.cold:
        name, folder, work, *mapped = args.child or args.cold
        run = measure(name, Path(folder), Path(work)) if args.child else None
        print(json.dumps(run or cold(name, Path(folder), Path(work), mapped == ["1"])))
        return
    lines = [
        f"# {args.name}", "",
        f"Run {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `benchmarks/ann_choice.py --sizes "
        f"{args.sizes} --variants {args.variants}`.", "",
        f"- machine: {machine()}; load average (1 min) before: {os.getloadavg()[0]:.2f}",
        f"- graphs: M={CONNECTIVITY}, ef_construction={EF_ADD} for the libraries as they come; "
        "`module` is engine/retrieval/ann_index.py (its own M and margin) over distinct rows",
        f"- {QUERIES:,} recalls (every LoCoMo question, then MSC persona facts) and {QUERIES:,} "
        f"proposes; filtered: {FILTERED_QUERIES} recalls, at most {FILTERED_SECONDS:.0f} s a "
        "cell; every query single-threaded",
        "- recall@k: share of the exact top k the index returned (ties at the k-th count); "
        "agree %: places (positions) of the exact top k where the index's answer has a row of "
        "the same exact int8 score (one row missed shifts every place after it); gap: exact "
        "minus returned score at a missed place", "",
    ]  # fmt: skip
    for size in [int(s) for s in args.sizes.split(",")]:
        folder, work = Path(args.cache) / str(size), Path(args.cache) / f"{size}-work"
        work.mkdir(parents=True, exist_ok=True)
        prepare(size, folder)
        lines += [f"## {size:,} facts", "", "The exact int8 scan (the engine's), same run:", ""]
        lines += table({"exact": exact_baseline(folder)})
        found: dict[str, dict[str, Any]] = {}
        for name in args.variants.split(","):
            found[name] = child("--child", name, str(folder), str(work))
            modes = {"hnswlib-f32": ("0",), "module": ("1",)}.get(name, ("0", "1"))
            for mapped in modes if "failed" not in found[name] else ():
                opened = child("--cold", name, str(folder), str(work), mapped)
                found[name][f"cold, {'mapped' if mapped == '1' else 'loaded'}"] = opened
            (work / f"{name}.index").unlink(missing_ok=True)
            print(f"{size} {name}: {found[name]}", file=sys.stderr)
        lines += table(found)
    lines.insert(5, f"- load average (1 min) after: {os.getloadavg()[0]:.2f}")
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{args.name}.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
