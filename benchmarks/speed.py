"""Speed at scale, in-process: recall and remember-propose latency at 10k and 100k facts (MSC
persona facts), against SQLite FTS5 bm25 on the same rows measured in the same run; model load
time; bulk embedding throughput; peak RSS.

    python benchmarks/speed.py [msc_personas_all.json] [--sizes 10000,100000] [--model DIR]

Stores are built once with the bulk-add path and kept under benchmarks/.cache/ (delete it to
rebuild). Facts are spread over 8 scopes; every query asks for all 8 (the most a call may
name), so ranking covers the
whole store.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import DATA, ROOT, machine, peak_rss_mib, write_report
from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest
from engine.retrieval.embeddings import BUNDLED_MODEL_DIR, EmbedderStatus, load_embedder
from engine.storage.bulk import BulkFact, add_many

SCOPES = [f"persona:{i}" for i in range(8)]
QUERIES = 200
CACHE = ROOT / "benchmarks" / ".cache"


def persona_facts(path: Path) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))
    facts = [
        f
        for split in data.values()
        for dialog in split
        for speaker, items in dialog.items()
        if speaker.startswith("Speaker")
        for f in items
    ]
    return facts


def corpus(facts: list[str], size: int) -> list[tuple[str, str]]:
    """`size` distinct (text, scope) pairs: each persona fact once in each of the 8 scopes,
    then (past 8 copies) joined with two other facts into one sentence ("I cook, I have a
    dog, and my cat is old."), so that the store really holds about `size` facts. Joined as
    sentences ("I cook. I have a dog."), each part was a sentence row equal to a fact of
    the same scope, and the import's dedup queued 27% of a million items for review (the
    store held 727k facts); one sentence of three parts is a likely duplicate of one of its
    parts for about 1.5% of items."""
    unique = list(dict.fromkeys(facts))
    count = len(unique)
    rows = []
    for i in range(size):
        text, copy = unique[i % count], i // count
        if copy >= len(SCOPES):
            second = unique[(i * 7 + copy) % count]
            third = unique[(i * 13 + 3 * copy + 1) % count]
            joined = f"{_clause(second, lower=True)}, and {_clause(third, lower=True)}"
            text = f"{_clause(text)}, {joined}."
        rows.append((text, SCOPES[(i % count + copy) % len(SCOPES)]))
    return rows


def _clause(sentence: str, *, lower: bool = False) -> str:
    """A persona fact without its closing punctuation, lower-cased at its start to follow a
    comma."""
    clause = sentence.rstrip(" .!?")
    keep = not lower or clause.split(" ")[0].split("'")[0] == "I"
    return clause if keep else clause[:1].lower() + clause[1:]


def build_store(size: int, rows: list[tuple[str, str]], status: EmbedderStatus) -> Path:
    home = CACHE / f"store-{size}"
    if (home / "index.sqlite").exists():
        return home
    engine = open_engine(home=home, embedder_status=status)
    start = time.perf_counter()
    add_many(
        engine,
        [BulkFact(text=t, scopes=[s], caller="bench", session="speed") for t, s in rows],
        durable=False,
    )
    print(f"built {size} facts in {time.perf_counter() - start:.0f} s", file=sys.stderr)
    engine.db.dispose()
    return home


def fts5_baseline(rows: list[tuple[str, str]], queries: list[str]) -> list[float]:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(text, scope UNINDEXED)")
    db.executemany("INSERT INTO t VALUES (?, ?)", rows)
    timings = []
    for query in queries:
        words = [w for w in query.lower().replace(".", " ").split() if w.isalnum()]
        match = " OR ".join(f'"{w}"' for w in words) or '"x"'
        start = time.perf_counter()
        db.execute(
            "SELECT rowid FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT 8", (match,)
        ).fetchall()
        timings.append(time.perf_counter() - start)
    return timings


def time_engine(home: Path, status: EmbedderStatus, queries: list[str]) -> dict[str, float]:
    engine = open_engine(home=home, embedder_status=status)
    memory = MemoryService(engine)
    start = time.perf_counter()
    engine.snapshot()
    warm = time.perf_counter() - start
    recall, propose = [], []
    for query in queries:
        start = time.perf_counter()
        memory.recall(RecallRequest(query=query, scopes=SCOPES, caller="bench", session="q"))
        recall.append(time.perf_counter() - start)
        start = time.perf_counter()
        memory.remember(
            RememberRequest(
                text=query + " too",
                scopes=SCOPES[:1],
                caller="bench",
                session="q",
                decision="propose",
            )
        )
        propose.append(time.perf_counter() - start)
    memory.close()
    return {
        "recall_p50": statistics.median(recall) * 1000,
        "recall_p95": sorted(recall)[int(len(recall) * 0.95)] * 1000,
        "propose_p50": statistics.median(propose) * 1000,
        "snapshot_s": warm,
    }


def model_load_seconds(model: str | None, runs: int = 5) -> float:
    code = (
        # What the engine pays at start: its own loader (no model2vec, no hub client).
        "import time,sys; t=time.perf_counter(); from engine.retrieval.embeddings import "
        f"load_embedder; load_embedder({str(model or BUNDLED_MODEL_DIR)!r}); "
        "print(time.perf_counter()-t)"
    )
    times = [
        float(
            subprocess.run(
                [sys.executable, "-c", code],
                capture_output=True,
                text=True,
                check=True,
                env={"HF_HUB_OFFLINE": "1"},
            ).stdout
        )
        for _ in range(runs)
    ]
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", default=str(DATA / "msc" / "msc_personas_all.json"))
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--model")
    args = parser.parse_args()
    facts = persona_facts(Path(args.file))
    semantic = load_embedder(args.model)
    lexical = EmbedderStatus(None, "benchmark: lexical-only run")
    rng = random.Random(7)
    queries = rng.sample(facts, QUERIES)
    rows_out = []
    for size in [int(s) for s in args.sizes.split(",")]:
        rows = corpus(facts, size)
        home = build_store(size, rows, semantic if semantic.embedder else lexical)
        base = statistics.median(fts5_baseline(rows, queries)) * 1000
        systems = [("lexical", lexical)] + ([("hybrid", semantic)] if semantic.embedder else [])
        for name, status in systems:
            timing = time_engine(home, status, queries)
            rows_out.append(
                [
                    size,
                    name,
                    f"{timing['recall_p50']:.2f}",
                    f"{timing['recall_p95']:.2f}",
                    f"{timing['propose_p50']:.2f}",
                    f"{base:.2f}",
                    f"{timing['recall_p50'] / base:.2f}x",
                    f"{timing['snapshot_s']:.1f}",
                ]
            )
            print(rows_out[-1], file=sys.stderr)
    notes = [
        f"machine: {machine()}",
        f"data: {args.file}",
        f"queries: {QUERIES} persona facts sampled with seed 7, recall over all 8 scopes",
    ]
    if semantic.embedder is not None:
        embedder = semantic.embedder
        sample = facts[:20000]
        start = time.perf_counter()
        embedder.embed(sample)
        throughput = len(sample) / (time.perf_counter() - start)
        notes.append(f"bulk embedding: {throughput:,.0f} facts/s (batched, 20k facts)")
        notes.append(
            f"model load (median of 5 fresh processes): {model_load_seconds(args.model):.2f} s"
        )
    else:
        notes.append(f"no model: {semantic.unavailable_reason}")
    peak = peak_rss_mib()
    notes.append(f"peak RSS of this process: {peak:.0f} MiB")
    header = [
        "facts",
        "mode",
        "recall p50 ms",
        "recall p95 ms",
        "propose p50 ms",
        "FTS5 bm25 p50 ms (baseline)",
        "recall / baseline",
        "snapshot build s",
    ]
    write_report("speed", header, rows_out, notes)


if __name__ == "__main__":
    main()
