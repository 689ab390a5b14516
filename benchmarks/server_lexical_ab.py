"""The server's lexical leg on a large store: its best facts (engine/retrieval/pg_lexical.py
`best_bm25`) against scoring every visible holder of a query lexeme as it did before, in
turns, on one connection.

    python benchmarks/server_lexical_ab.py --db URL [--queries 200] [--limit 256]

URL names a database filled before (benchmarks/server_store.py, or scale.py --server). The
queries are scale.py's: MSC persona facts sampled with seed 7, every recall naming all 8
scopes. For each query both ways run one after the other (the order alternates) and each
one's time is kept; scoring every holder is exact, so the new answer's agreement with it is
measured too: how many of its best 10 (and of all `limit`) facts are the exact answer's.
Results go to benchmarks/results/server_lexical_ab.md."""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import DATA, machine, write_report
from benchmarks.scale import ms
from benchmarks.speed import SCOPES, persona_facts
from engine.facade import open_service
from engine.retrieval.pg_lexical import _scored, best_bm25, query_terms
from engine.retrieval.pg_support import visible_share
from engine.retrieval.ranking import MATCH_WINDOW
from engine.retrieval.seam import Visibility


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--limit", type=int, default=MATCH_WINDOW)
    parser.add_argument("--data", default=str(DATA / "msc" / "msc_personas_all.json"))
    args = parser.parse_args()
    queries = random.Random(7).sample(persona_facts(Path(args.data)), args.queries)
    service = open_service(db_url=args.db)
    engine = service.engine
    visibility = Visibility(tuple(SCOPES), None, engine.now())
    engine.retrieval().rank("warm up", visibility)  # the derived tables up to date
    every_s: list[float] = []
    best_s: list[float] = []
    top10: list[float] = []
    whole: list[float] = []
    with engine.db.connect() as connection:
        facts = int(connection.exec_driver_sql("SELECT count(*) FROM fact_search").scalar() or 0)
        for n, query in enumerate(queries):
            terms = query_terms(connection, query)
            found = {}
            for way in ("every", "best") if n % 2 == 0 else ("best", "every"):
                start = time.perf_counter()
                if way == "every":
                    found[way] = _scored(connection, terms, visibility, share=0.0, limit=args.limit)
                else:
                    found[way] = best_bm25(
                        connection,
                        terms,
                        visibility,
                        args.limit,
                        share=visible_share(connection, visibility),
                    )
                (every_s if way == "every" else best_s).append(time.perf_counter() - start)
            exact, best = list(found["every"]), list(found["best"])
            if exact:
                top10.append(len(set(exact[:10]) & set(best[:10])) / len(exact[:10]))
                whole.append(len(set(exact) & set(best)) / len(exact))
    service.close()
    ratio = statistics.median(every_s) / statistics.median(best_s)
    write_report(
        "server_lexical_ab",
        ["measure", "every holder scored (before)", "best holders (now)", "ratio"],
        [
            ["lexical leg p50 ms", ms(every_s, 0.5), ms(best_s, 0.5), f"{ratio:.1f}x"],
            ["lexical leg p95 ms", ms(every_s, 0.95), ms(best_s, 0.95), ""],
            ["its best 10 among the exact best 10 (mean)", "", f"{statistics.mean(top10):.3f}", ""],
            [
                f"its {args.limit} among the exact {args.limit} (mean)",
                "",
                f"{statistics.mean(whole):.3f}",
                "",
            ],
            [
                "queries whose best 10 differ",
                "",
                str(sum(share < 1 for share in top10)),
                "",
            ],
        ],
        [
            f"machine: {machine()}",
            f"store: {facts:,} current facts in the server database; {args.queries} queries"
            f" (MSC persona facts, seed 7), all 8 scopes visible, the best {args.limit}",
            "both ways on one connection, one after the other, the order alternating",
        ],
    )


if __name__ == "__main__":
    main()
