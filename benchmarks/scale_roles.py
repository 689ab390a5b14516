"""The processes of benchmarks/scale.py: a reader and a writer on one home, each a fresh
Python process as an agent's MCP server or a person's workbench would be.

    python -m benchmarks.scale_roles reader HOME SECONDS QUERIES_FILE  -> JSON on stdout
    python -m benchmarks.scale_roles writer HOME COUNT                 -> one line per write
    python -m benchmarks.scale_roles cold HOME QUERY                   -> JSON on stdout

The reader times recalls for SECONDS and notes the first recall that sees each write the
writer announces (its token) and how long after the write's acknowledgement that was."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from benchmarks.common import peak_rss_mib
from engine.facade import open_service
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest

SCOPES = [f"persona:{i}" for i in range(8)]


def reader(home: str, seconds: float, queries_file: str) -> None:
    started = time.perf_counter()
    service = open_service(home=home)
    queries = json.loads(Path(queries_file).read_text(encoding="utf-8"))
    service.recall(RecallRequest(query=queries[0], scopes=SCOPES, caller="bench", session="r"))
    ready = time.perf_counter() - started
    print(json.dumps({"ready": ready}), flush=True)
    latencies: list[float] = []
    marks: list[dict[str, float]] = []
    token_file = Path(home) / ".bench-token"
    seen_token = ""
    end = time.perf_counter() + seconds
    index = 0
    while time.perf_counter() < end:
        query = queries[index % len(queries)]
        index += 1
        token = token_file.read_text(encoding="utf-8") if token_file.exists() else ""
        waiting = token and token != seen_token
        if waiting:
            query = token.split("@")[0]
        start = time.perf_counter()
        result = service.recall(
            RecallRequest(query=query, scopes=SCOPES, caller="bench", session="r")
        )
        took = time.perf_counter() - start
        latencies.append(took)
        if waiting and any(query in fact["text"] for fact in result["facts"]):
            seen_token = token
            acknowledged = float(token.split("@")[1])
            marks.append({"lag": time.time() - acknowledged, "recall": took})
    peak = peak_rss_mib()
    print(json.dumps({"latencies": latencies, "marks": marks, "rss_mib": peak}), flush=True)


def writer(home: str, count: int, own_home: str | None = None) -> None:
    """COUNT writes, one a second; after each, the token file (in `home`, the reader's) names
    it for the reader. `own_home`: the writer's own home, as another machine on a server."""
    service = open_service(home=own_home or home)
    token_file = Path(home) / ".bench-token"
    for n in range(count):
        word = f"zq{n:04d}marker"
        start = time.perf_counter()
        service.remember(
            RememberRequest(
                text=f"Benchmark write {word} from another process",
                scopes=SCOPES[:1],
                caller="bench-writer",
                session="w",
                decision="add",
            )
        )
        took = time.perf_counter() - start
        token_file.write_text(f"{word}@{time.time()}", encoding="utf-8")
        print(json.dumps({"write": took}), flush=True)
        time.sleep(max(0.0, 1.0 - took))  # a steady agent: one write a second


def cold(home: str, query: str) -> None:
    started = time.perf_counter()
    service = open_service(home=home)
    service.recall(RecallRequest(query=query, scopes=SCOPES, caller="bench", session="c"))
    peak = peak_rss_mib()
    print(json.dumps({"cold": time.perf_counter() - started, "rss_mib": peak}), flush=True)


if __name__ == "__main__":
    role, home, *rest = sys.argv[1:]
    if role == "reader":
        reader(home, float(rest[0]), rest[1])
    elif role == "writer":
        writer(home, int(rest[0]), *rest[1:2])
    else:
        cold(home, rest[0])
