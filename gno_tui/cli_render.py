"""Output for people (the CLI without --json): rich tables and a progress bar on a terminal."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table

if TYPE_CHECKING:
    from engine.facade import CollectionRecord

console = Console(highlight=False)


def _short(text: str, width: int = 70) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def render_remember(result: dict[str, Any]) -> None:
    outcome = result["outcome"]
    matching = result["matching"]
    method = matching["mode"]
    if matching.get("semanticUnavailable"):
        method += f" ({matching['semanticUnavailable']})"
    if outcome in ("added", "superseded", "existing"):
        record = result["record"]
        console.print(f"[bold]{outcome}[/] {record['docid']} {record['uri']}")
        console.print(f"  {_short(record['text'], 100)}")
        if outcome != "existing":
            console.print(f"  file: {result['absPath']}")
            sync = result["sync"]
            if sync["status"] == "failed":
                console.print(f"  [red]index sync failed:[/] {sync.get('error', '')}")
        return
    candidates = result["candidates"]
    console.print(
        f"[bold]candidates[/]: {len(candidates)} (matching {method}, likely ≥ "
        f"{matching['threshold']}); nothing was written."
    )
    if candidates:
        table = Table("tier", "similarity", "docid", "text", "uri")
        for c in candidates:
            table.add_row(
                c["match"], f"{c['similarity']:.3f}", c["docid"], _short(c["text"], 50), c["uri"]
            )
        console.print(table)
    console.print(
        "Write it with --add, or replace one with --supersede URI --predecessor-hash HASH."
    )


def render_recall(result: dict[str, Any], fmt: str) -> None:
    if fmt == "ob1":
        table = Table("memory_id", "status", "summary")
        for memory in result["memories"]:
            table.add_row(
                memory["memory_id"], memory["provenance"]["status"], _short(memory["summary"], 70)
            )
        console.print(table)
        console.print(f"request_id (receipt digest): {result['request_id']}")
        return
    budget, retrieval = result["budget"], result["retrieval"]
    mode = retrieval["mode"]
    if retrieval.get("semanticUnavailable"):
        mode += f" ({retrieval['semanticUnavailable']})"
    if not result["facts"]:
        console.print(result.get("hint", "No facts."))
    else:
        table = Table("#", "score", "docid", "text", "egress")
        for rank, fact in enumerate(result["facts"], start=1):
            table.add_row(
                str(rank),
                f"{fact['score']:.3f}",
                fact["docid"],
                _short(fact["text"], 60),
                fact["egressLineage"]["effectivePolicy"],
            )
        console.print(table)
    console.print(
        f"retrieval {mode}; tokens {budget['usedTokens']}/{budget['maxTokens']}, "
        f"{len(result['facts'])}/{budget['maxFacts']} facts, {budget['omitted']} "
        "omitted"
    )
    if "egressLineage" in result:
        console.print(f"lineage: {result['egressLineage']['effectivePolicy']}")
    console.print(f"receipt {result['receipt']['digest']}")


def collection_json(row: CollectionRecord) -> dict[str, Any]:
    return {
        "name": row.name,
        "root": row.root,
        "policy": row.policy,
        "policySource": row.policy_source,
        "policyRevision": row.policy_revision,
    }


def render_collections(rows: list[CollectionRecord]) -> None:
    table = Table("name", "policy", "source", "revision", "root")
    for row in rows:
        table.add_row(row.name, row.policy, row.policy_source, str(row.policy_revision), row.root)
    console.print(table)


def render_proposals(proposals: list[dict[str, Any]]) -> None:
    if not proposals:
        console.print("The review queue is empty.")
        return
    table = Table("id", "state", "decision", "caller", "scopes", "text", "candidates")
    for p in proposals:
        table.add_row(
            str(p["id"]),
            p["state"],
            p["decision"],
            p["caller"],
            ", ".join(p["scopes"]),
            _short(p["text"], 50),
            str(len(p["candidates"])),
        )
    console.print(table)


@contextmanager
def progress_reporter(*, enabled: bool, label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on a terminal; nothing with --json or when output is not a terminal."""
    if not enabled or not sys.stdout.isatty():
        yield None
        return
    from rich.progress import Progress

    with Progress(console=console, transient=True) as progress:
        task = progress.add_task(label, total=None)

        def report(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        yield report
