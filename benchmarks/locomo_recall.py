"""LoCoMo recall@k: lexical-only vs hybrid, over turns and over observations, with SQLite FTS5
BM25 (terms ORed) on the same rows as the baseline measured in the same run.

Each conversation is its own store: every turn (or observation) is remembered in one scope
through the engine's own remember path, then each question of categories 1-4 is recalled.
recall@k = |gold ∩ top k| / |gold|, averaged over questions.

    python benchmarks/locomo_recall.py [path/to/locomo.json ...] [--model DIR] [--limit N]
        [--backend memory|postgres|both] [--db postgresql://...]

--backend postgres runs the same engine on PostgreSQL with pgvector, ranking inside the
database (engine/retrieval/postgres.py): on --db's server, else on a throwaway pgserver
(the test extra), one database per conversation.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import DATA, machine, postgres_server, write_report
from benchmarks.common import fresh_database as common_fresh_database
from engine.facade.service import open_service
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest
from engine.retrieval.embeddings import EmbedderStatus, load_embedder
from engine.retrieval.lexical import tokenize

KS = (1, 5, 10, 20)
_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")


def evidence_ids(raw: list[str]) -> set[str]:
    """Normalise the malformed ids of the data README ("D8:6; D9:17", "D:11:26", "D30:05")."""
    ids = set()
    for item in raw:
        for session, turn in _EVIDENCE.findall(item):
            ids.add(f"D{int(session)}:{int(turn)}")
    return ids


def units(conversation: dict, kind: str) -> list[tuple[str, str]]:
    """(text, dia_id) pairs: turns prefixed with their speaker, or generated observations."""
    out: list[tuple[str, str]] = []
    if kind == "turns":
        conv = conversation["conversation"]
        for key, turns in conv.items():
            if not key.startswith("session_") or key.endswith("date_time"):
                continue
            for turn in turns:
                text = f"{turn['speaker']}: {turn['text']}"
                if turn.get("blip_caption"):
                    text += f" [shares a photo of {turn['blip_caption']}]"
                out.append((text, turn["dia_id"]))
    else:
        for per_session in conversation.get("observation", {}).values():
            for facts in per_session.values():
                for fact, dia in facts:
                    for dia_id in evidence_ids([dia] if isinstance(dia, str) else dia):
                        out.append((fact, dia_id))
    return out


def questions(conversation: dict) -> list[tuple[str, set[str]]]:
    return [
        (qa["question"], evidence_ids(qa.get("evidence", [])))
        for qa in conversation["qa"]
        if qa.get("category") in (1, 2, 3, 4) and qa.get("evidence")
    ]


def score(ranked: list[set[str]], gold: set[str], totals: dict[int, list[float]]) -> None:
    for k in KS:
        found = set().union(*ranked[:k]) if ranked[:k] else set()
        totals[k].append(len(found & gold) / len(gold))


def run_engine(
    conversation: dict, kind: str, status: EmbedderStatus, server: str | None = None
) -> dict:
    """On the embedded store, or with `server` (a PostgreSQL URL) on a fresh database there."""
    totals: dict[int, list[float]] = {k: [] for k in KS}
    latencies: list[float] = []
    with tempfile.TemporaryDirectory() as home, fresh_database(server) as db_url:
        memory = open_service(home=home, db_url=db_url, embedder_status=status)
        if server is not None:
            assert memory.engine.retrieval_backend == "postgres"
        dia_of: dict[str, set[str]] = {}
        for text, dia_id in units(conversation, kind):
            result = memory.remember(
                RememberRequest(
                    text=text, scopes=["conv"], caller="bench", session="locomo", decision="add"
                )
            )
            dia_of.setdefault(result["record"]["recordId"], set()).add(dia_id)
        for question, gold in questions(conversation):
            start = time.perf_counter()
            result = memory.recall(
                RecallRequest(
                    query=question,
                    scopes=["conv"],
                    caller="bench",
                    session="locomo",
                    max_facts=max(KS),
                    max_tokens=65_536,
                )
            )
            latencies.append(time.perf_counter() - start)
            score([dia_of[f["recordId"]] for f in result["facts"]], gold, totals)
        memory.close()
    return {"totals": totals, "latencies": latencies}


@contextlib.contextmanager
def fresh_database(server: str | None) -> Iterator[str | None]:
    """None for the embedded store, else a fresh database on `server`."""
    if server is None:
        yield None
        return
    with common_fresh_database(server, prefix="locomo_") as url:
        yield url


def run_fts5(conversation: dict, kind: str) -> dict:
    """Baseline: SQLite FTS5 bm25 over the same rows, query words ORed (no stemming)."""
    totals: dict[int, list[float]] = {k: [] for k in KS}
    latencies: list[float] = []
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE t USING fts5(text, dia UNINDEXED)")
    db.executemany("INSERT INTO t VALUES (?, ?)", units(conversation, kind))
    for question, gold in questions(conversation):
        words = [w for w in re.findall(r"\w+", question.lower()) if w]
        match = " OR ".join(f'"{w}"' for w in words)
        start = time.perf_counter()
        rows = (
            db.execute(
                "SELECT dia FROM t WHERE t MATCH ? ORDER BY bm25(t) LIMIT ?", (match, max(KS))
            ).fetchall()
            if words
            else []
        )
        latencies.append(time.perf_counter() - start)
        score([{dia} for (dia,) in rows], gold, totals)
    return {"totals": totals, "latencies": latencies}


def with_graph(conversation: dict, kind: str, status: EmbedderStatus) -> dict:
    """run_engine with every store keeping and asking its approximate-neighbour graph, far
    below the size at which the engine would (GRAPH_MIN_FACTS, prefer_exact)."""
    from engine.retrieval import ann_index, semantic_graph

    saved = (
        semantic_graph.GRAPH_MIN_FACTS,
        ann_index.EXACT_BELOW_VISIBLE,
        ann_index.EXACT_BELOW_SHARE,
    )
    semantic_graph.GRAPH_MIN_FACTS = 0
    ann_index.EXACT_BELOW_VISIBLE, ann_index.EXACT_BELOW_SHARE = 0, 0.0
    try:
        return run_engine(conversation, kind, status, None)
    finally:
        (
            semantic_graph.GRAPH_MIN_FACTS,
            ann_index.EXACT_BELOW_VISIBLE,
            ann_index.EXACT_BELOW_SHARE,
        ) = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", default=[str(DATA / "locomo" / "locomo-dev.json")])
    parser.add_argument("--model", help="model2vec folder (default: the bundled model)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N conversations")
    parser.add_argument("--kinds", default="turns,observations")
    parser.add_argument("--backend", choices=("memory", "postgres", "both"), default="memory")
    parser.add_argument("--db", help="a PostgreSQL server URL (default: a throwaway pgserver)")
    parser.add_argument(
        "--graph",
        action="store_true",
        help="hybrid with the exact scan against hybrid with the approximate-neighbour graph "
        "forced on every store (engine/retrieval/semantic_graph.py), in-process only",
    )
    args = parser.parse_args()
    with contextlib.ExitStack() as stack:
        server = (
            stack.enter_context(postgres_server(args.db, prefix="locomo-pgserver-"))
            if args.backend != "memory"
            else None
        )
        run(args, server)


def run(args: argparse.Namespace, server: str | None) -> None:
    conversations = [c for f in args.files for c in json.loads(Path(f).read_text())]
    if args.limit:
        conversations = conversations[: args.limit]
    semantic = load_embedder(args.model)
    lexical = EmbedderStatus(None, "benchmark: lexical-only run")
    rows = []
    for kind in args.kinds.split(","):
        systems: list[tuple[str, Callable[[dict], dict]]] = [
            ("SQLite FTS5 bm25 (baseline)", lambda c, k=kind: run_fts5(c, k))
        ]
        where = []
        if args.backend in ("memory", "both"):
            where.append(("", None))
        if args.backend in ("postgres", "both"):
            where.append((" (PostgreSQL)", server))
        for suffix, db in where:
            systems.append(
                (f"gno-tui lexical{suffix}", lambda c, k=kind, d=db: run_engine(c, k, lexical, d))
            )
            if semantic.embedder is not None:
                systems.append(
                    (
                        f"gno-tui hybrid{suffix}",
                        lambda c, k=kind, d=db: run_engine(c, k, semantic, d),
                    )
                )
        if args.graph and semantic.embedder is not None:
            systems = [
                ("gno-tui hybrid, exact scan", lambda c, k=kind: run_engine(c, k, semantic, None)),
                ("gno-tui hybrid, graph forced", lambda c, k=kind: with_graph(c, k, semantic)),
            ]
        if semantic.embedder is None:
            print(f"no semantic run: {semantic.unavailable_reason}", file=sys.stderr)
        for name, run in systems:
            totals: dict[int, list[float]] = {k: [] for k in KS}
            latencies: list[float] = []
            for conversation in conversations:
                out = run(conversation)
                for k in KS:
                    totals[k].extend(out["totals"][k])
                latencies.extend(out["latencies"])
            rows.append(
                [kind, name, len(totals[1])]
                + [f"{statistics.mean(totals[k]):.3f}" for k in KS]
                + [f"{statistics.median(latencies) * 1000:.2f}"]
            )
            print(rows[-1], file=sys.stderr)
    header = ["units", "system", "questions"] + [f"R@{k}" for k in KS] + ["p50 ms"]
    write_report(
        "locomo_recall_graph" if args.graph else "locomo_recall",
        header,
        rows,
        notes=[
            f"data: {', '.join(args.files)}",
            f"backend: {args.backend} (PostgreSQL rows: PostgreSQL 16 + pgvector, ranking in "
            "the database, engine/retrieval/postgres.py)",
            f"machine: {machine()}",
            f"tokenizer sample: {tokenize('What did Caroline research?')}",
        ],
    )


if __name__ == "__main__":
    main()
