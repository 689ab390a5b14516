"""A team on one PostgreSQL server: three "machines" (three homes in separate temporary
folders) and six writer processes for a while, one home deleted halfway; then a check that
every acknowledged write is in the database, that no chain and no key forked, and that no
writer was shown a lock error.

    python benchmarks/server_team.py [--seconds 60] [--db postgresql://...] [--ops N]

The writers, two per machine, each a process of its own:

- `cli`: the installed console script, one process per call: adds a fact
  (`remember --add --json`), then moves a shared key (`memory get`, then `memory remember`
  with `if_revision`);
- `mcp`: the official MCP client over stdio to `gno-tui mcp --enable-write`: adds a fact
  (`gno_remember`), then supersedes the head of a shared chain it has just recalled
  (`gno_recall`, then `gno_remember` with `predecessor` and `predecessorHash`);
- `keyed`: the keyed API in process: creates a key of its own, then moves a shared key.

Machine A runs cli and mcp, B mcp and keyed, C cli and keyed; C's home folder is deleted once
half the time (or half of C's operations, with --ops) has passed, and its writers go on.
Writers race on purpose: a compare-and-swap that loses (MEMORY_SUPERSEDE_CONFLICT,
MEMORY_REVISION_CONFLICT) is counted, not retried; any other error is surfaced and fails the
run. Without --db a throwaway pgserver (PostgreSQL 16 + pgvector) is started. --ops N runs N
operations per writer instead of a time (the tests' mode: nothing waits on the clock).
Results go to benchmarks/results/server_team.md (or --name), and with --json to a file.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import fresh_database, machine, postgres_server, write_report
from benchmarks.team_writers import CHAINS, SHARED_KEYS, chain_text, env

WRITER = Path(__file__).resolve().parent / "team_writers.py"

WRITERS = (("a", "cli"), ("a", "mcp"), ("b", "mcp"), ("b", "keyed"), ("c", "cli"), ("c", "keyed"))
DELETED = "c"
ACKNOWLEDGED = ("add", "supersede", "key")
SEEDED = CHAINS + len(SHARED_KEYS)  # rows the seeder writes before the writers start


# -- the coordinator ----------------------------------------------------------------------------


def seed(db: str, work: Path) -> None:
    """The shared chains' roots and the shared keys' first revisions, from a home of its own."""
    from engine.facade import open_service
    from engine.memory.remember import RememberRequest

    service = open_service(home=work / "seeder", db_url=db)
    for chain in range(CHAINS):
        service.remember(
            RememberRequest(
                text=chain_text(chain, "0"), scopes=["team"], caller="bench:seed",
                session="seed", decision="add",
            )
        )  # fmt: skip
    for key in SHARED_KEYS:
        service.keyed.remember({"key": key, "memory": {"content": f"{key}, first"}})
    service.close()


def run(db: str, seconds: float, ops: int | None, work: Path) -> dict[str, Any]:
    seed(db, work)
    homes = {machine_name: work / f"machine-{machine_name}" for machine_name in "abc"}
    names = [f"{kind}-{machine_name}" for machine_name, kind in WRITERS]
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(WRITER),
                kind,
                name,
                str(homes[machine_name]),
                db,
                str(work),
                str(ops if ops is not None else -1),
                "pause" if ops is not None and machine_name == DELETED else "-",
            ],
            env=env(),
        )
        for (machine_name, kind), name in zip(WRITERS, names, strict=True)
    ]
    started = time.monotonic()
    deleted_at = None
    lines_at_deletion: dict[str, int] = {}
    on_deleted = [name for name in names if name.endswith(f"-{DELETED}")]
    try:
        while any(proc.poll() is None for proc in procs):
            if deleted_at is None and _halfway(work, on_deleted, started, seconds, ops):
                lines_at_deletion = {name: _lines(work / f"{name}.jsonl") for name in names}
                shutil.rmtree(homes[DELETED], ignore_errors=True)
                deleted_at = time.monotonic() - started
                (work / "deleted").touch()
            if ops is None and time.monotonic() - started >= seconds:
                (work / "stop").touch()
            with contextlib.suppress(subprocess.TimeoutExpired):
                procs[0].wait(timeout=0.2)  # a writer's exit, or the next look at the logs
    finally:
        (work / "stop").touch()
        for proc in procs:
            proc.wait()
    elapsed = time.monotonic() - started
    logs = {name: _read_log(work / f"{name}.jsonl") for name in names}
    verdict = verify(db, logs)
    verdict.update(
        elapsed_s=round(elapsed, 1),
        deleted_home=DELETED,
        deleted_at_s=None if deleted_at is None else round(deleted_at, 1),
        exits=[proc.returncode for proc in procs],
        writers={
            name: {
                "kind": name.split("-")[0],
                "machine": name.split("-")[1],
                "acknowledged": sum(1 for e in entries if e["op"] in ACKNOWLEDGED),
                "acknowledged_after_deletion": sum(
                    1
                    for e in entries[lines_at_deletion.get(name, len(entries)) :]
                    if e["op"] in ACKNOWLEDGED
                ),
                "lost_races": sum(1 for e in entries if e["op"] == "lost_race"),
                "errors": sum(1 for e in entries if e["op"] == "error"),
                "finished": any(e["op"] == "finished" for e in entries),
            }
            for name, entries in logs.items()
        },
    )
    return verdict


def _halfway(work: Path, names: list[str], started: float, seconds: float, ops: int | None) -> bool:
    if ops is None:
        return time.monotonic() - started >= seconds / 2
    # The home's writers wait there, halfway through their operations, for the deletion.
    return all((work / f"{name}.halfway").exists() for name in names)


def _lines(path: Path) -> int:
    try:
        return path.read_bytes().count(b"\n")
    except OSError:
        return 0


def _read_log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def verify(db: str, logs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """What the database holds against what the writers were told, read with plain SQL (not
    through the engine, so that nothing is repaired or hidden on the way)."""
    from sqlalchemy import create_engine, make_url, text

    url = make_url(db).set(drivername="postgresql+psycopg")
    engine = create_engine(url)
    with engine.connect() as connection:
        rows = connection.execute(
            text(
                "SELECT record_id, text, uri, supersedes, superseded_by, retired_at, "
                "kv_namespace, kv_key, kv_revision FROM facts"
            )
        ).all()
    engine.dispose()
    entries = [entry for log in logs.values() for entry in log]
    facts = [e for e in entries if e["op"] in ("add", "supersede")]
    keys = [e for e in entries if e["op"] == "key"]
    errors = [e for e in entries if e["op"] == "error"]
    return {
        "acknowledged": len(facts) + len(keys),
        "acknowledged_supersedes": sum(1 for e in facts if e["op"] == "supersede"),
        "acknowledged_key_moves": len(keys),
        "missing": missing_writes(rows, entries),
        "chain_heads": chain_heads(rows),
        "successors": most_successors(rows),
        "key_heads": key_heads(rows),
        "key_gaps": key_gaps(rows),
        "lost_races": sum(1 for e in entries if e["op"] == "lost_race"),
        "errors": errors,
        "lock_errors": [e for e in errors if "LEASE" in e["code"] or "LOCK" in e["code"]],
        "facts_in_database": len(rows),
        # Rows beyond the seeds and the acknowledged writes: a lost race or a failed write
        # that left something behind.
        "unacknowledged_rows": len(rows) - SEEDED - len(facts) - len(keys),
    }


def missing_writes(rows: Sequence[Any], entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The acknowledged writes (facts and key revisions) not in `rows` as acknowledged."""
    by_id = {row.record_id: row for row in rows}
    revisions = {(r.kv_key, r.kv_revision): r.text for r in rows if r.kv_key is not None}
    return [
        e
        for e in entries
        if (
            e["op"] in ("add", "supersede")
            and (e["recordId"] not in by_id or by_id[e["recordId"]].text != e["text"])
        )
        or (e["op"] == "key" and revisions.get((e["key"], e["revision"])) != e["content"])
    ]


def chain_heads(rows: Sequence[Any]) -> dict[str, int]:
    """Current facts per chain root (a fork shows as 2), for the chains longer than one."""
    by_uri = {row.uri: row for row in rows if row.kv_key is None}
    heads: dict[str, int] = {}
    for row in by_uri.values():
        root = row
        while root.supersedes and root.supersedes[0] in by_uri:
            root = by_uri[root.supersedes[0]]
        if row.superseded_by is None and row.retired_at is None and root is not row:
            heads[root.text] = heads.get(root.text, 0) + 1
    return heads


def most_successors(rows: Sequence[Any]) -> int:
    """The most facts that name one fact as their predecessor (a fork: 2 or more)."""
    named: dict[str, int] = {}
    for row in rows:
        for uri in row.supersedes or []:
            named[uri] = named.get(uri, 0) + 1
    return max(named.values(), default=0)


def key_heads(rows: Sequence[Any]) -> dict[str, int]:
    heads: dict[str, int] = {}
    for row in rows:
        if row.kv_key is not None and row.superseded_by is None and row.retired_at is None:
            heads[row.kv_key] = heads.get(row.kv_key, 0) + 1
    return {key: count for key, count in heads.items() if key in SHARED_KEYS or count != 1}


def key_gaps(rows: Sequence[Any]) -> list[str]:
    """Keys whose revisions are not 1..n, each once."""
    seen: dict[str, list[int]] = {}
    for row in rows:
        if row.kv_key is not None:
            seen.setdefault(row.kv_key, []).append(int(row.kv_revision))
    return [key for key, found in seen.items() if sorted(found) != list(range(1, len(found) + 1))]


def passed(verdict: dict[str, Any]) -> bool:
    return (
        not verdict["missing"]
        and not verdict["errors"]
        and set(verdict["chain_heads"].values()) <= {1}
        and verdict["successors"] <= 1
        and set(verdict["key_heads"].values()) <= {1}
        and not verdict["key_gaps"]
        and verdict["unacknowledged_rows"] == 0
        and all(w["finished"] for w in verdict["writers"].values())
    )


@contextlib.contextmanager
def database(server: str | None) -> Iterator[str]:
    """A fresh database on `server`, else on a throwaway pgserver; dropped afterwards."""
    with postgres_server(server, prefix="team-pgserver-") as url:
        with fresh_database(url, prefix="team_") as db:
            yield db


def report(verdict: dict[str, Any], seconds: float, ops: int | None, name: str) -> None:
    rows: list[list[object]] = [
        [writer, info["kind"], info["machine"], info["acknowledged"], info["lost_races"],
         info["errors"]]
        for writer, info in verdict["writers"].items()
    ]  # fmt: skip
    heads = max(verdict["chain_heads"].values(), default=0)
    key_heads = max(verdict["key_heads"].values(), default=0)
    notes = [
        f"machine: {machine()}",
        f"run: {f'{ops} operations per writer' if ops else f'{seconds:.0f} s'}, "
        f"{verdict['elapsed_s']} s in all; home {verdict['deleted_home']} deleted at "
        f"{verdict['deleted_at_s']} s, its writers going on",
        f"acknowledged writes: {verdict['acknowledged']} (supersedes of {CHAINS} shared chains: "
        f"{verdict['acknowledged_supersedes']}; keyed writes: "
        f"{verdict['acknowledged_key_moves']}); facts in the database: "
        f"{verdict['facts_in_database']}",
        f"acknowledged but missing or different in the database: {len(verdict['missing'])}; "
        f"rows no writer was told of (beyond the {SEEDED} seeded): "
        f"{verdict['unacknowledged_rows']}",
        f"current heads per shared chain: {heads} at most; most successors of one fact: "
        f"{verdict['successors']}; current heads per key: {key_heads} at most; keys with a gap "
        f"in their revisions: {len(verdict['key_gaps'])}",
        f"lost compare-and-swap races (counted, not retried): {verdict['lost_races']}; lock "
        f"errors shown to a writer: {len(verdict['lock_errors'])}; other errors: "
        f"{len(verdict['errors']) - len(verdict['lock_errors'])}",
        f"verdict: {'passed' if passed(verdict) else 'FAILED'}",
    ]
    write_report(
        name,
        ["writer", "surface", "machine", "acknowledged", "lost races", "errors"],
        rows,
        notes,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--ops", type=int, help="operations per writer instead of --seconds")
    parser.add_argument("--db", help="a PostgreSQL server URL (default: a throwaway pgserver)")
    parser.add_argument("--name", default="server_team", help="report name under results/")
    parser.add_argument("--json", type=Path, help="also write the verdict here")
    parser.add_argument(
        "--no-results", action="store_true", help="no file under results/ (the tests' runs)"
    )
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="gno-team-"))
    try:
        with database(args.db) as db:
            verdict = run(db, args.seconds, args.ops, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if args.json is not None:
        args.json.write_text(json.dumps(verdict, indent=1), encoding="utf-8")
    if not args.no_results:
        report(verdict, args.seconds, args.ops, args.name)
    raise SystemExit(0 if passed(verdict) else 1)


if __name__ == "__main__":
    main()
