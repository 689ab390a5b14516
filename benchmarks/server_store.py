"""Fill a server database with a large store for `scale.py --server --home`, faster than
`import` can (a million facts through `import` would take hours here: see below).

    python benchmarks/server_store.py --db URL [--size 1000000] [--chunk 50000]

The items are scale.py's corpus of the same size (MSC persona facts, 8 scopes), written into
database `scale_<size>` on the server that URL names (made empty first) through the engine's
bulk write, the one `import` ends in, a chunk per transaction, WITHOUT import's dedup: exact
duplicates within a chunk are still skipped, near duplicates are all added. Then one recall
builds the derived tables (search vectors, embeddings, the HNSW indexes) and is timed.

Why not `import`: a file holds at most 64 MiB, so a million items are several files, and every
file's dedup first brings the derived tables up to date with the facts before it, then asks
the database for each item's candidates; at a million facts that is hours on this machine,
and what scale.py measures at that size is recall, not import (import is measured at 100k)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import DATA
from benchmarks.scale import Server
from benchmarks.speed import SCOPES, corpus, persona_facts
from engine.facade import open_service
from engine.memory.recall import RecallRequest
from engine.storage.bulk import BulkFact, add_many


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="a PostgreSQL URL with pgvector")
    parser.add_argument("--size", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=50_000)
    parser.add_argument("--data", default=str(DATA / "msc" / "msc_personas_all.json"))
    args = parser.parse_args()
    url = Server(args.db).database(f"scale_{args.size}", fresh=True)
    rows = corpus(persona_facts(Path(args.data)), args.size)
    home = Path(tempfile.mkdtemp(prefix="gno-server-store-"))
    writer = open_service(home=home, db_url=url)
    engine = writer.engine
    start = time.perf_counter()
    added = 0
    for first in range(0, len(rows), args.chunk):
        chunk = [
            BulkFact(
                text=text, scopes=[scope], caller="bench", session="build", created_by="import"
            )
            for text, scope in rows[first : first + args.chunk]
        ]
        added += len(add_many(engine, chunk, durable=False).added)
        print(
            f"{added:,} facts in {time.perf_counter() - start:.0f} s", file=sys.stderr, flush=True
        )
    writer.close()
    written = time.perf_counter() - start
    service = open_service(home=home, db_url=url)
    start = time.perf_counter()
    service.recall(RecallRequest(query="warm up", scopes=SCOPES, caller="b", session="w"))
    derived = time.perf_counter() - start
    service.close()
    print(
        f"{added:,} facts written in {written:.0f} s ({added / written:,.0f}/s); "
        f"the first recall built the derived tables in {derived:.0f} s",
        flush=True,
    )


if __name__ == "__main__":
    main()
