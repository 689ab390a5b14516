"""benchmarks/soak.py's checks and measurements: what the writers acknowledged against what the
store holds at the end (0 lost, 0 forks), and the disk and memory samples taken meanwhile
(their trend after the warm-up, as a least-squares slope)."""

from __future__ import annotations

import json
import os
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.soak_writers import CHAINS, KEYS

ACKNOWLEDGED = ("add", "supersede", "accept", "key")


def read_logs(work: Path) -> dict[str, list[dict[str, Any]]]:
    """Every writer's log; a line cut short by a kill is no acknowledgement and is skipped."""
    logs: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(work.glob("*.jsonl")):
        entries = []
        for line in path.read_text(encoding="utf-8").splitlines():
            try:
                entries.append(json.loads(line))
            except ValueError:
                continue
        logs[path.stem] = entries
    return logs


def count_acks(logs: dict[str, list[dict[str, Any]]]) -> int:
    return sum(entry["op"] in ACKNOWLEDGED for entries in logs.values() for entry in entries)


# -- lost writes and forks ----------------------------------------------------------------------


@dataclass
class Verdict:
    acknowledged: int = 0
    lost: list[str] = field(default_factory=list)
    forks: list[str] = field(default_factory=list)
    stuck_proposals: int = 0
    rows: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)  # op (and error code) -> count
    # Per writer: acknowledged writes, errors, and acknowledged writes after each event.
    writers: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.lost and not self.forks


def fact_rows(db_url: str) -> list[dict[str, Any]]:
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as connection:
            rows = [
                dict(row._mapping)
                for row in connection.execute(
                    text(
                        "SELECT record_id, content_hash, text, scopes, supersedes, superseded_by,"
                        " retired_at, kv_namespace, kv_key, kv_revision, collection, rel_path "
                        "FROM facts"
                    )
                )
            ]
    finally:
        engine.dispose()
    for row in rows:
        for name in ("scopes", "supersedes"):
            if isinstance(row[name], str):
                row[name] = json.loads(row[name])
    return rows


def proposals_deciding(db_url: str) -> int:
    """Proposals claimed by a person (state `deciding`) with no decision: a decision killed
    halfway; the queue no longer offers them."""
    from sqlalchemy import create_engine, text

    engine = create_engine(db_url.replace("postgresql://", "postgresql+psycopg://", 1))
    try:
        with engine.connect() as connection:
            return int(
                connection.scalar(text("SELECT count(*) FROM proposals WHERE state = 'deciding'"))
                or 0
            )
    finally:
        engine.dispose()


def per_writer(
    logs: dict[str, list[dict[str, Any]]], events: list[dict[str, Any]]
) -> dict[str, dict[str, Any]]:
    """Each writer's acknowledged writes and errors, and its acknowledged writes after the
    last kill and after the PostgreSQL restart: a writer that reconnected goes on writing."""
    marks = {
        "after last kill": max((e["wall"] for e in events if "SIGKILL" in e["event"]), default=0),
        "after PG restart": max(
            (e["wall"] for e in events if "PostgreSQL" in e["event"]), default=None
        ),
    }
    found: dict[str, dict[str, Any]] = {}
    for name, entries in logs.items():
        acks = [e for e in entries if e["op"] in ACKNOWLEDGED]
        stats: dict[str, Any] = {
            "acks": len(acks),
            "errors": sum(e["op"] == "error" for e in entries),
        }
        for label, since in marks.items():
            if since is not None:
                stats[label] = sum(e["t"] > since for e in acks)
        found[name] = stats
    return found


def verify(
    logs: dict[str, list[dict[str, Any]]], rows: list[dict[str, Any]], roots: dict[str, Path]
) -> Verdict:
    """Every acknowledged write in the store (and in its file, where `roots` names the
    collections' folders: the embedded mode); no chain, fact or key with two heads."""
    verdict = Verdict(rows=len(rows))
    by_id = {row["record_id"]: row for row in rows}
    outcomes: Counter[str] = Counter()
    for name, entries in logs.items():
        for entry in entries:
            op = entry["op"]
            outcomes[op if op != "error" else f"error {entry.get('code')}"] += 1
            if op not in ACKNOWLEDGED:
                continue
            verdict.acknowledged += 1
            if op == "key":
                found = [
                    r
                    for r in rows
                    if r["kv_key"] == entry["key"] and r["kv_revision"] == entry["revision"]
                ]
                if [r["text"] for r in found] != [entry["content"]]:
                    verdict.lost.append(f"{name}: key {entry['key']} rev {entry['revision']}")
                continue
            row = by_id.get(entry["recordId"])
            if row is None or row["content_hash"] != entry["hash"]:
                verdict.lost.append(f"{name}: {op} {entry['recordId']} is not in the store")
                continue
            predecessor = entry.get("predecessor")
            if predecessor and by_id.get(predecessor, {}).get("superseded_by") != row["record_id"]:
                verdict.lost.append(f"{name}: supersede {row['record_id']} of {predecessor}")
            root = roots.get(row["collection"])
            if root is not None and not (root / row["rel_path"]).is_file():
                verdict.lost.append(f"{name}: {row['record_id']}'s file is missing")
    verdict.outcomes = dict(sorted(outcomes.items()))
    verdict.forks = forks(rows)
    return verdict


def forks(rows: list[dict[str, Any]]) -> list[str]:
    """Two successors of one fact, a shared chain or a key with other than one current head,
    a key revision held twice."""
    found: list[str] = []
    successors: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        for uri in row["supersedes"]:
            successors[uri].append(row["record_id"])
    found += [f"{uri} superseded by {ids}" for uri, ids in successors.items() if len(ids) > 1]
    current = [r for r in rows if r["superseded_by"] is None and r["retired_at"] is None]
    for chain in CHAINS:
        heads = [r["record_id"] for r in current if chain in r["scopes"]]
        if len(heads) != 1:
            found.append(f"chain {chain} has {len(heads)} current heads")
    for key in KEYS:
        revisions = [r for r in rows if r["kv_key"] == key]
        heads = [r for r in revisions if r["superseded_by"] is None]
        if len(heads) != 1:
            found.append(f"key {key} has {len(heads)} current heads")
        twice = [rev for rev, n in Counter(r["kv_revision"] for r in revisions).items() if n > 1]
        if twice:
            found.append(f"key {key} holds revisions {twice} twice")
    return found


# -- samples ------------------------------------------------------------------------------------


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def folder_mib(folder: Path) -> float:
    total = 0
    for base, _dirs, names in os.walk(folder):
        for name in names:
            try:
                total += (Path(base) / name).stat().st_size
            except OSError:
                continue
    return total / 1024 / 1024


def slope(points: list[tuple[float, float]]) -> float | None:
    """Least-squares slope of (x, y) points; None for fewer than three."""
    if len(points) < 3:
        return None
    n = len(points)
    mean_x = sum(x for x, _ in points) / n
    mean_y = sum(y for _, y in points) / n
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if spread == 0:
        return None
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


def trends(samples: list[dict[str, Any]], warmup_s: float) -> dict[str, Any]:
    """After the warm-up: the slope of each measure per 10 minutes, and per 1,000 facts for the
    disk. A process's memory is followed per process id (a killed one starts again): the
    longest-lived instance of each role after the warm-up counts."""
    later = [s for s in samples if s["t"] >= warmup_s]
    found: dict[str, Any] = {"samples": len(samples), "after_warmup": len(later)}
    per_ten = 600.0
    for measure in ("disk_mib", "wal_mib"):
        points = [(s["t"], s[measure]) for s in later if s.get(measure) is not None]
        value = slope(points)
        found[f"{measure}_per_10min"] = None if value is None else value * per_ten
        by_facts = slope([(s["rows"], s[measure]) for s in later if s.get(measure) is not None])
        found[f"{measure}_per_1k_facts"] = None if by_facts is None else by_facts * 1000
    # role -> pid -> (time, facts, MiB)
    roles: dict[str, dict[int, list[tuple[float, float, float]]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for sample in later:
        for role, (pid, mib) in sample["rss"].items():
            roles[role][pid].append((sample["t"], sample["rows"], mib))
    memory = {}
    for role, instances in sorted(roles.items()):
        series = max(instances.values(), key=len)
        by_time = slope([(t, mib) for t, _rows, mib in series])
        by_facts = slope([(rows, mib) for _t, rows, mib in series])
        memory[role] = {
            "first_mib": round(series[0][2], 1),
            "last_mib": round(series[-1][2], 1),
            "minutes": round((series[-1][0] - series[0][0]) / 60, 1),
            "per_10min": None if by_time is None else round(by_time * per_ten, 2),
            "per_1k_facts": None if by_facts is None else round(by_facts * 1000, 2),
        }
    found["rss"] = memory
    return found


# -- the report ---------------------------------------------------------------------------------


def _mib(value: float | None) -> str:
    return "n/a" if value is None else f"{value:+.2f}"


def report_section(result: dict[str, Any], settings: str, where: str) -> str:
    """The Markdown section of one run: the verdict, what every writer was answered, the kills,
    and the trends of disk and memory after the warm-up."""
    verdict: Verdict = result["verdict"]
    trend = result["trends"]
    samples = result["samples"]
    first, last = samples[0], samples[-1]
    lines = [
        f"## {result['mode']} mode",
        "",
        f"{settings}; {result['seconds'] / 60:.1f} min on {where}.",
        "",
        f"- **{'PASSED' if result['passed'] else 'FAILED'}**: {verdict.acknowledged} "
        f"acknowledged writes, **{len(verdict.lost)} lost**, **{len(verdict.forks)} forks**; "
        f"{verdict.rows} facts in the store at the end; {verdict.stuck_proposals} proposals "
        "left `deciding` by a killed decision.",
    ]
    lines += [f"  - lost: {item}" for item in verdict.lost[:10]]
    lines += [f"  - fork: {item}" for item in verdict.forks[:10]]
    if result.get("reindex"):
        lines.append(f"- Final `reindex --json`: {json.dumps(result['reindex'])}")
    lines += ["", "| what the writers were answered | count |", "|---|---|"]
    lines += [f"| {op} | {count} |" for op, count in verdict.outcomes.items()]
    columns = sorted({k for stats in verdict.writers.values() for k in stats})
    lines += ["", "| writer | " + " | ".join(columns) + " |", "|---|" + "---|" * len(columns)]
    lines += [
        f"| {name} | " + " | ".join(str(stats.get(c, "")) for c in columns) + " |"
        for name, stats in verdict.writers.items()
    ]
    lines += ["", "| at (s) | event | acknowledged writes so far |", "|---|---|---|"]
    lines += [f"| {e['t']} | {e['event']} | {e['acks']} |" for e in result["events"]]
    lines += [
        "",
        f"Samples: {trend['samples']} ({trend['after_warmup']} after the warm-up).",
        "",
        "| measure | first | last | slope after warm-up |",
        "|---|---|---|---|",
        f"| facts in the store | {first['rows']:.0f} | {last['rows']:.0f} | |",
        f"| store on disk (MiB) | {first['disk_mib']:.1f} | {last['disk_mib']:.1f} | "
        f"{_mib(trend['disk_mib_per_10min'])} MiB / 10 min, "
        f"{_mib(trend['disk_mib_per_1k_facts'])} MiB / 1k facts |",
        f"| WAL (MiB) | {first['wal_mib']:.1f} | {last['wal_mib']:.1f} | "
        f"{_mib(trend['wal_mib_per_10min'])} MiB / 10 min |",
    ]
    for role, memory in trend["rss"].items():
        lines.append(
            f"| RSS {role} (MiB; one process, {memory['minutes']} min) | "
            f"{memory['first_mib']} | {memory['last_mib']} | {_mib(memory['per_10min'])} "
            f"MiB / 10 min, {_mib(memory['per_1k_facts'])} MiB / 1k facts |"
        )
    fresh = result.get("fresh_reader_mib")
    if fresh is not None and "reader" in trend["rss"]:
        lines += [
            "",
            f"The long-lived reader ended at {trend['rss']['reader']['last_mib']} MiB; a reader "
            f"opened on the store afterwards held {fresh} MiB after its recalls.",
        ]
    return "\n".join(lines) + "\n"


def write_report(path: Path, section: str, mode: str, header: str) -> None:
    """Write `section` into the report at `path`, replacing that mode's earlier section."""
    text = path.read_text(encoding="utf-8") if path.exists() else header
    pattern = re.compile(rf"^## {mode} mode\n.*?(?=^## |\Z)", re.DOTALL | re.MULTILINE)
    text = pattern.sub("", text).rstrip("\n") + "\n\n" + section
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(section)
