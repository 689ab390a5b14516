"""An import's dedup against a grown store, alone: the store's candidates for batches of
held-out items, asked as the import asks them, by the exact scan and through the graph, at the
weak tier (what the import asked before) and at the likely tier (what it decides by).

    python benchmarks/import_dedup.py --home DIR --first N [--items 8192] [--name import_dedup]

`DIR` is a home grown by `benchmarks/scale.py --grow --keep DIR`; the items are the corpus's
from `--first` on (past every item grown into it and its held-out ones), in their scopes, into
the default collection, in batches of the import's size (512) embedded beforehand. Each way
is run twice over the same items and the second run timed (the first warms the mapped files).
Agreement: of the likely-tier candidates the exact scan finds (the import's decision), how
many each way finds; each miss is listed with its similarity."""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import engine.retrieval.snapshot as snapshot_module
from benchmarks.common import DATA, machine, write_report
from benchmarks.speed import corpus, persona_facts
from engine.facade.factory import open_engine
from engine.interop.import_run import IMPORT_BATCH
from engine.retrieval.embeddings import embed_facts
from engine.retrieval.matching import SEMANTIC_TIERS
from engine.retrieval.seam import RetrievalIndex, Visibility, candidates_for

WAYS = [  # (label, graph used, the lowest tier asked for)
    ("exact scan, weak tier", False, "weak"),
    ("exact scan, likely tier", False, "likely"),
    ("graph, weak tier", True, "weak"),
    ("graph, likely tier", True, "likely"),
]


@contextmanager
def graph_used(used: bool) -> Iterator[None]:
    """Every query through the graph, or none, whatever the visible share."""
    chosen = snapshot_module.graph_pays
    snapshot_module.graph_pays = lambda visible, total, batch=False: used
    try:
        yield
    finally:
        snapshot_module.graph_pays = chosen


def likely_sets(found: list[list]) -> list[dict[str, float]]:
    return [
        {c.fact.record_id: c.similarity for c in row if c.similarity >= SEMANTIC_TIERS.likely}
        for row in found
    ]


def run_way(
    ask: Callable[[int, str], list[list]], items: int, least: str
) -> tuple[float, list[list]]:
    """Seconds of the second pass over every batch, and its answers."""
    found: list[list] = []
    took = 0.0
    for _ in range(2):
        found, took = [], 0.0
        for start in range(0, items, IMPORT_BATCH):
            begun = time.perf_counter()
            found += ask(start, least)
            took += time.perf_counter() - begun
    return took, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", required=True)
    parser.add_argument("--first", type=int, required=True, help="the first corpus item asked")
    parser.add_argument("--items", type=int, default=8192)
    parser.add_argument("--data", default=str(DATA / "msc" / "msc_personas_all.json"))
    parser.add_argument("--name", default="import_dedup")
    args = parser.parse_args()
    rows = corpus(persona_facts(Path(args.data)), args.first + args.items)[args.first :]
    engine = open_engine(home=Path(args.home), reading=True)
    index: RetrievalIndex = engine.retrieval()
    building = engine._snapshots.building
    if building is not None:  # no graph file to map (e.g. another model's index): built here
        print("building the graph first", file=sys.stderr)
        building.join()
        index = engine.retrieval()
    if index.snapshot.graph is None:  # type: ignore[attr-defined]
        raise SystemExit(f"{args.home} has no graph: grow it past GRAPH_MIN_FACTS first")
    embedder = engine.embedder_status.embedder
    assert embedder is not None, "the benchmark measures the semantic dedup"
    texts = [text for text, _ in rows]
    vectors = np.vstack([embed_facts(embedder, [text])[0][0] for text in texts])
    now = engine.now()
    visibilities = [Visibility([scope], ["memory"], now) for _, scope in rows]
    facts = len(index.snapshot.facts)  # type: ignore[attr-defined]
    mask = index._mask(visibilities[0])  # type: ignore[attr-defined]

    def ask(start: int, least: str) -> list[list]:
        end = start + IMPORT_BATCH
        return candidates_for(
            index, texts[start:end], visibilities[start:end], vectors[start:end], least=least
        )

    results = {}
    for label, used, least in WAYS:
        with graph_used(used):
            results[label] = run_way(ask, len(texts), least)
    reference = likely_sets(results["exact scan, likely tier"][1])
    wanted = sum(len(found) for found in reference)
    table, misses = [], []
    for label, _, _ in WAYS:
        took, found = results[label]
        got = likely_sets(found)
        agreed = sum(
            len(ref.keys() & mine.keys()) for ref, mine in zip(reference, got, strict=True)
        )
        table.append([label, f"{took:.2f}", f"{len(texts) / took:,.0f}", f"{agreed} / {wanted}"])
        for item, (ref, mine) in enumerate(zip(reference, got, strict=True)):
            misses += [f"{label}: item {item}, {ref[m]:.4f}" for m in ref.keys() - mine.keys()]
    notes = [
        f"machine: {machine()}",
        f"home: {args.home}, {facts:,} facts; items: corpus {args.first:,} to "
        f"{args.first + len(texts):,} (scope persona:N), in batches of {IMPORT_BATCH}",
        f"the first item's scope sees {int(np.count_nonzero(mask)):,} facts",
        "misses (the exact scan's likely-tier candidates a way did not find): "
        + ("; ".join(misses) if misses else "none"),
    ]
    header = ["way", "s", "items/s", "likely-tier candidates found (of the exact scan's)"]
    write_report(args.name, header, table, notes)


if __name__ == "__main__":
    main()
