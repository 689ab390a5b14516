"""The approximate-neighbour graph in a grown store, against the exact scan in the same run.

    python benchmarks/ann_scale.py --home DIR --grown 1000000 [--queries 2000] [--name ann_scale]

`DIR` is a home grown by `benchmarks/scale.py --grow --keep DIR` (its first `--grown` corpus
items imported). In one process: the cold open to the first recall, then 2,000 recalls (every
LoCoMo question, then MSC persona facts) over all 8 scopes and 2,000 proposes (corpus items
beyond the grown ones, in one scope), each asked twice of the same index: through its graph,
and with the graph set aside (the exact scan). Reported: recall and propose latency both ways
(the whole `recall` / `remember --decision propose` of the façade), and how far the graph's
answers agree with the exact ones: the places of the exact top 10 where the graph's answer
holds a fact of the same score, and the likely-tier candidates of each propose; for the
misses, the gap in score. RSS is the process's (VmRSS, VmHWM)."""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import DATA, machine, write_report
from benchmarks.speed import SCOPES, corpus, persona_facts
from engine.facade import open_service
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest
from engine.retrieval import ann_index
from engine.retrieval.seam import Visibility

TOP = 10
Ranked = list[tuple[str, float]]


def memory_mib(field: str) -> float:
    for row in Path("/proc/self/status").read_text().splitlines():
        if row.startswith(field + ":"):
            return int(row.split()[1]) / 1024
    return 0.0


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


def places(
    exact: list[tuple[str, float]], found: list[tuple[str, float]]
) -> tuple[int, list[float]]:
    """Places of the exact list where `found` has a fact of the same score; the gaps."""
    agree, gaps = 0, []
    for place, (_, score) in enumerate(exact):
        other = found[place][1] if place < len(found) else 0.0
        if round(other, 6) == round(score, 6):
            agree += 1
        else:
            gaps.append(score - other)
    return agree, gaps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", required=True)
    parser.add_argument("--grown", type=int, required=True, help="corpus items in the home")
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--data", default=str(DATA / "msc" / "msc_personas_all.json"))
    parser.add_argument("--name", default="ann_scale")
    args = parser.parse_args()

    facts = persona_facts(Path(args.data))
    locomo = json.loads((DATA / "locomo" / "locomo-dev.json").read_text(encoding="utf-8"))
    asked = [qa["question"] for conversation in locomo for qa in conversation["qa"]]
    asked = (asked + random.Random(7).sample(facts, args.queries))[: args.queries]
    proposed = [text for text, _ in corpus(facts, args.grown + args.queries)[args.grown :]]

    begun = time.perf_counter()
    service = open_service(home=Path(args.home))
    engine = service.engine
    first = service.recall(RecallRequest(query=asked[0], scopes=SCOPES, caller="b", session="b"))
    cold = time.perf_counter() - begun
    building = engine._snapshots.building  # a graph refused or missing is built (reported)
    rebuilt_graph = building is not None
    if building is not None:
        building.join()
    snapshot = engine.snapshot()
    graph = snapshot.graph
    assert graph is not None, "the store has no graph (fewer facts than GRAPH_MIN_FACTS?)"
    assert first is not None
    index = engine.retrieval()

    def timed_recalls() -> list[float]:
        spent = []
        for query in asked:
            start = time.perf_counter()
            service.recall(RecallRequest(query=query, scopes=SCOPES, caller="b", session="b"))
            spent.append(time.perf_counter() - start)
        return spent

    def timed_proposes() -> list[float]:
        spent = []
        for text in proposed:
            start = time.perf_counter()
            service.remember(
                RememberRequest(
                    text=text, scopes=SCOPES[:1], caller="b", session="b", decision="propose"
                )
            )
            spent.append(time.perf_counter() - start)
        return spent

    def answers() -> tuple[list[Ranked], list[Ranked]]:
        now = engine.now()
        ranked = [
            [
                (m.fact.record_id, m.score)
                for m in index.rank(q, Visibility(SCOPES, None, now)).matches[:TOP]
            ]
            for q in asked
        ]
        likely = [
            [
                (c.fact.record_id, c.similarity)
                for c in index.candidates(t, Visibility(SCOPES[:1], None, now))
                if c.tier in ("exact", "likely")
            ]
            for t in proposed
        ]
        return ranked, likely

    graph_times = (timed_recalls(), timed_proposes())
    graph_answers = answers()
    # The exact scan, same index: the graph kept (set aside, the index would build another)
    # but never asked (prefer_exact's threshold past the store).
    threshold = ann_index.EXACT_BELOW_VISIBLE
    ann_index.EXACT_BELOW_VISIBLE = 2**62
    exact_times = (timed_recalls(), timed_proposes())
    exact_answers = answers()
    ann_index.EXACT_BELOW_VISIBLE = threshold

    rows: list[list[object]] = []
    for label, got, base in zip(
        ("hybrid recall", "propose"), graph_times, exact_times, strict=True
    ):
        rows.append(
            [
                f"{label} p50 / p95 ms",
                f"{statistics.median(got) * 1000:.1f} / {pct(got, 0.95) * 1000:.1f}",
                f"{statistics.median(base) * 1000:.1f} / {pct(base, 0.95) * 1000:.1f}",
            ]
        )
    labels = (f"recall top {TOP}", "propose likely tier")
    for label, mine_all, theirs_all in zip(labels, graph_answers, exact_answers, strict=True):
        agree, total, gaps = 0, 0, []
        for mine, theirs in zip(mine_all, theirs_all, strict=True):
            found, missed = places(theirs, mine)
            agree += found
            total += len(theirs)
            gaps += missed
        share = 100.0 * agree / total if total else 100.0
        gap = f"{statistics.mean(gaps):.4f} / {max(gaps):.4f}" if gaps else "none"
        rows.append([f"{label}: places agreeing (of {total:,})", f"{share:.2f} %", "reference"])
        rows.append([f"{label}: gap at a miss, mean / max", gap, ""])
    rows.append(["cold open to first recall s (this process)", f"{cold:.2f}", ""])
    rows.append(["graph read from its file (not built)", str(not rebuilt_graph), ""])
    rows.append(
        ["RSS now / peak MiB", f"{memory_mib('VmRSS'):,.0f} / {memory_mib('VmHWM'):,.0f}", ""]
    )
    notes = [
        f"machine: {machine()}",
        f"home: {args.home}: {snapshot.live_count:,} live facts, "
        f"graph of {len(graph.index):,} rows",
        f"{len(asked)} recalls over all 8 scopes, {len(proposed)} proposes in one scope",
        "places: positions of the exact top list where the graph's answer has the same score",
    ]
    write_report(args.name, ["measure", "graph", "exact scan"], rows, notes)


if __name__ == "__main__":
    main()
