"""Writers SIGKILLed at random points, many times over one store: what is left must be a store.

Four kinds of writer work on one home, one at a time, and each is killed with SIGKILL (its
whole process group, and for MCP the server's group too):

- `cli`: crash_cli_writer.py, a loop launching the console script (`remember --add`, and
  `recall` then `remember --supersede` of a shared chain's head);
- `mcp`: crash_mcp_writer.py, the official MCP client driving `gno-tui mcp --enable-write`
  with three calls in flight: adds, supersedes of the chains' heads, keyed updates
  (`memory_remember` with `if_revision`) of shared keys;
- `import`: `gno-tui import FILE.jsonl --json` of IMPORT_ITEMS new items (after a killed import
  the next import retries the same file, as a person would);
- `reindex`: `gno-tui reindex --json`.

A write is *acknowledged* when its result reached the writer: the console script printed an
`added`/`superseded` result with a completed sync, an MCP tool result arrived, or `import`
printed its report. After every kill:

1. the store opens: `gno-tui recall` works;
2. no `.tmp-*` file is left anywhere under the home once the store has been opened again;
3. every acknowledged write is in the index (its row, its hash, its file; a supersede's
   predecessor points at it; a keyed revision is its key's row of that revision);
4. no fork: each shared chain and each key has exactly one current head, no fact is superseded
   by two successors, no key has two rows of one revision;
5. the same holds for an index rebuilt from the fact files alone: the home is copied (without
   its index) and `gno-tui reindex --json` runs on the copy, whose report must list no
   problems, forks or duplicate record ids. A copy, so that the check does not repair the real
   home: a fact file that a killed writer left unindexed must be handled by the store itself
   when the next writer comes, not by the test's reindex;
6. imports are all or nothing: a killed import left none of its items or all of them, and the
   retried import doubles none; no two current facts share a text in one scope.

At the end `gno-tui reindex --json` runs on the real home and everything is checked again.

Random points, reproducibly: every choice comes from one `random.Random(seed)`; the seed is
printed (and named in every failure); rerun with GNO_TUI_CRASH_SEED=<seed>. A kill is armed by
progress: after a random number of acknowledged writes, or when a random number of new fact
or temp files have appeared in the home (the poll that watches for them only chooses the
instant). Only the instant is then moved by a short random `time.sleep` (at most 0.6 s for
the CLI, less elsewhere), and a `reindex`, which shows no progress, is killed after a random
fraction of the time the last reindex took. No check waits on a sleep: every check runs after
the killed processes have been reaped."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import random
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from engine.facade.service import open_service
from engine.memory.remember import RememberRequest
from engine.retrieval.embeddings import EmbedderStatus

HERE = Path(__file__).parent
CLI_WRITER = HERE / "crash_cli_writer.py"
MCP_WRITER = HERE / "crash_mcp_writer.py"
CHAINS = ("chain:c0", "chain:c1", "chain:c2", "chain:c3")  # as in the writers
KEYS = ("k0", "k1", "k2", "k3")
SEED_ENV = "GNO_TUI_CRASH_SEED"
KILLS = int(os.environ.get("GNO_TUI_CRASH_KILLS", "12"))
IMPORT_ITEMS = 150
WAIT_S = 90  # how long an expected event may take: a hang guard, not a timing assertion
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def words(rng: random.Random, count: int) -> str:
    return " ".join(
        "".join(rng.choice(LETTERS) for _ in range(rng.randint(4, 9))) for _ in range(count)
    )


# -- the acknowledged writes ------------------------------------------------------------------


@dataclass
class Ledger:
    facts: dict[str, dict[str, Any]] = field(default_factory=dict)  # recordId -> result
    keyed: list[dict[str, Any]] = field(default_factory=list)  # keyed hits
    imported: list[str] = field(default_factory=list)  # texts of acknowledged import items
    # Every import file tried, with its items' texts: acknowledged or not, an import is all or
    # nothing, and a retried one never doubles an item.
    import_files: dict[str, list[str]] = field(default_factory=dict)

    def take(self, event: dict[str, Any]) -> None:
        if event["kind"] == "gno":
            self.facts[event["result"]["record"]["recordId"]] = event["result"]
        else:
            self.keyed.append(event["result"])

    def count(self) -> int:
        return len(self.facts) + len(self.keyed) + len(self.imported)


# -- processes to kill ------------------------------------------------------------------------


class Victim:
    """A writer in a process group of its own; a thread reads its stdout line by line."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self.log_path = log
        self._log = log.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            argv,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            env=env,
            start_new_session=True,
        )
        self.groups = [self.process.pid]  # process groups to kill (the MCP server's joins)
        self.lines: list[str] = []
        self.events: list[dict[str, Any]] = []
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.killed = False

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line)
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a line cut short by the kill: never an acknowledgement
            if isinstance(event, dict) and "event" in event:
                self._queue.put(event)
        self._queue.put(None)

    def next_event(self) -> dict[str, Any] | None:
        """The next event, or None once the writer's stdout is closed."""
        try:
            event = self._queue.get(timeout=WAIT_S)
        except queue.Empty:
            raise AssertionError(f"no event for {WAIT_S} s from {self.process.args!r}") from None
        if event is not None:
            self.events.append(event)
        return event

    def wait_for_acks(self, count: int) -> None:
        acks = sum(1 for e in self.events if e["event"] == "ack")
        while acks < count:
            event = self.next_event()
            if event is None:
                return  # the writer ended before the kill point
            acks += event["event"] == "ack"

    def kill(self) -> None:
        if self.process.poll() is None:
            self.killed = True
        for group in self.groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
        self.process.wait(timeout=WAIT_S)

    def drain(self) -> list[dict[str, Any]]:
        """Every event printed before the process died (it is dead when this is called)."""
        while self.next_event() is not None:
            pass
        self._reader.join(timeout=WAIT_S)
        self._log.close()
        return self.events

    def stderr(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")[-3000:]


def store_entries(home: Path) -> set[str]:
    """Fact files and temp files anywhere under the home (the progress a kill is armed by)."""
    found = set()
    for folder, _, names in os.walk(home):
        for name in names:
            if name.startswith(("mem-", ".tmp-")):
                found.add(str(Path(folder) / name))
    return found


def wait_for_new_entries(victim: Victim, home: Path, before: set[str], count: int) -> None:
    """Until `count` new fact or temp files appeared, or the writer ended."""
    deadline = time.monotonic() + WAIT_S
    while victim.process.poll() is None and time.monotonic() < deadline:
        if len(store_entries(home) - before) >= count:
            return
        time.sleep(0.0005)


# -- looking at the store ---------------------------------------------------------------------

FACT_COLUMNS = (
    "record_id, uri, text, content_hash, scopes, supersedes, superseded_by, retired_at, "
    "kv_namespace, kv_key, kv_revision, collection, rel_path"
)


def fact_rows(probe: Any) -> list[dict[str, Any]]:
    names = [name.strip() for name in FACT_COLUMNS.split(",")]
    rows = [
        dict(zip(names, row, strict=True))
        for row in probe.query(f"SELECT {FACT_COLUMNS} FROM facts")
    ]
    for row in rows:
        row["scopes"] = json.loads(row["scopes"])
        row["supersedes"] = json.loads(row["supersedes"])
    return rows


def check_heads(probe: Any, where: str) -> None:
    """No fork: one current head per chain and per key, no fact with two successors."""
    rows = fact_rows(probe)
    current = [r for r in rows if r["superseded_by"] is None and r["retired_at"] is None]
    current_ids = {r["record_id"] for r in current}
    successors: dict[str, list[str]] = defaultdict(list)
    for row in rows:
        for uri in row["supersedes"]:
            successors[uri].append(row["record_id"])
    forks = {uri: ids for uri, ids in successors.items() if len(ids) > 1}
    assert forks == {}, f"{where}: facts superseded by two successors: {forks}"
    for chain in CHAINS:
        heads = [r["record_id"] for r in current if chain in r["scopes"]]
        assert len(heads) == 1, f"{where}: chain {chain} has {len(heads)} current heads: {heads}"
    same: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in current:
        if row["kv_key"] is None:  # keyed facts skip the exact check: two keys may share a text
            same[(row["collection"], row["content_hash"])].append(row)
    doubled = [
        (a["record_id"], b["record_id"])
        for group in same.values()
        for i, a in enumerate(group)
        for b in group[i + 1 :]
        if set(a["scopes"]) & set(b["scopes"])
    ]
    assert doubled == [], f"{where}: current facts with one text in one scope: {doubled[:5]}"
    for key in KEYS:
        revisions = [
            r for r in rows if r["kv_namespace"] == "default" and r["kv_key"] == f"crash/{key}"
        ]
        heads = [
            (r["kv_revision"], r["record_id"]) for r in revisions if r["record_id"] in current_ids
        ]
        assert len(heads) == 1, f"{where}: key crash/{key} has {len(heads)} current heads: {heads}"
        twice = {rev: n for rev, n in Counter(r["kv_revision"] for r in revisions).items() if n > 1}
        assert twice == {}, f"{where}: key crash/{key} has revisions held twice: {twice}"


def check_acknowledged(probe: Any, ledger: Ledger, where: str, *, files: bool) -> None:
    """Every acknowledged write is in the index (and, with `files`, in its file)."""
    rows = fact_rows(probe)
    by_id = {r["record_id"]: r for r in rows}
    by_uri = {r["uri"]: r for r in rows}
    problems: list[str] = []
    for record_id, result in ledger.facts.items():
        record = result["record"]
        row = by_id.get(record_id)
        if row is None or row["content_hash"] != record["contentHash"]:
            problems.append(f"acknowledged {record_id} ({record['text'][:40]!r}) is not indexed")
            continue
        for uri in record["supersedes"]:
            predecessor = by_uri.get(uri)
            if predecessor is None or predecessor["superseded_by"] != record_id:
                problems.append(
                    f"acknowledged {record_id} superseded {uri}, which the index now says is "
                    f"superseded by {predecessor and predecessor['superseded_by']}"
                )
        if files and not Path(result["absPath"]).is_file():
            problems.append(f"acknowledged {record_id}: its file {result['absPath']} is gone")
    for hit in ledger.keyed:
        found = [
            r
            for r in rows
            if r["kv_namespace"] == "default"
            and r["kv_key"] == hit["key"]
            and r["kv_revision"] == hit["revision"]
        ]
        if [r["text"] for r in found] != [hit["memory"]["content"]]:
            problems.append(
                f"acknowledged key {hit['key']} revision {hit['revision']} is held by "
                f"{[r['record_id'] for r in found]}"
            )
    texts = Counter(r["text"] for r in rows)
    problems += [
        f"acknowledged import item {text[:40]!r} is not indexed"
        for text in ledger.imported
        if texts[text] == 0
    ]
    for name, items in ledger.import_files.items():
        present = sum(texts[text] > 0 for text in items)
        if present not in (0, len(items)):
            problems.append(f"import of {name}: {present} of its {len(items)} items are in")
        doubled = [text for text in items if texts[text] > 1]
        if doubled:
            problems.append(f"import of {name}: {len(doubled)} items are in twice")
    assert problems == [], f"{where}: " + "\n".join(problems[:20])


def rebuilt_copy(home: Path, target: Path) -> Path:
    """The home without its index, its collection roots moved to the copy."""
    shutil.copytree(
        home, target, ignore=shutil.ignore_patterns("index.sqlite*", ".write.lock", "exports")
    )
    listing = target / "collections.yaml"
    listing.write_text(
        listing.read_text(encoding="utf-8").replace(str(home), str(target)), encoding="utf-8"
    )
    return target


# -- the test ---------------------------------------------------------------------------------


def seed_store(home: Path, ledger: Ledger, rng: random.Random) -> None:
    """The shared chains and keys, each with its first fact."""
    service = open_service(home=home, embedder_status=EmbedderStatus(None, "crash test"))
    try:
        for chain in CHAINS:
            result = service.remember(
                RememberRequest(
                    text=f"{chain} ledger root: {words(rng, 6)}",
                    scopes=["crash", chain],
                    caller="test:seed",
                    session="crash-seed",
                    decision="add",
                )
            )
            ledger.take({"kind": "gno", "result": result})
        for key in KEYS:
            hit = service.keyed.remember(
                {
                    "key": f"crash/{key}",
                    "memory": {"content": f"{key} ledger root", "tags": [f"crashkey-{key}"]},
                },
                caller="test:seed",
                session="crash-seed",
            )
            ledger.take({"kind": "keyed", "result": hit})
    finally:
        service.close()


@dataclass
class Run:
    """What one writer did before it died."""

    kind: str
    plan: str
    victim: Victim
    import_file: Path | None = None


def start_writer(
    kind: str,
    number: int,
    *,
    rng: random.Random,
    seed: int,
    script: str,
    home: Path,
    env: dict[str, str],
    scratch: Path,
    import_file: Path,
    reindex_seconds: float,
) -> Run:
    """Start one writer and kill it at a random point chosen by `rng` (returns it dead)."""
    log = scratch / f"kill-{number}-{kind}.stderr"
    name = f"w{number}"
    if kind == "cli":
        victim = Victim(
            [sys.executable, str(CLI_WRITER), script, str(home), str(seed), name, "40"], env, log
        )
        acks, mode = rng.randint(0, 3), rng.choice(("ack", "file"))
    elif kind == "mcp":
        pidfile = scratch / f"kill-{number}.pid"
        argv = [sys.executable, str(MCP_WRITER), script, str(home), str(seed), name, "400"]
        victim = Victim([*argv, str(pidfile)], env, log)
        acks, mode = rng.randint(0, 30), rng.choice(("ack", "file"))
    elif kind == "import":
        victim = Victim(
            [script, "--home", str(home), "import", str(import_file), "--json"], env, log
        )
        before = store_entries(home)
        count = rng.randint(1, IMPORT_ITEMS)
        wait_for_new_entries(victim, home, before, count)
        time.sleep(rng.uniform(0, 0.002))
        victim.kill()
        return Run(kind, f"after {count} new files", victim, import_file)
    else:
        victim = Victim([script, "--home", str(home), "reindex", "--json"], env, log)
        fraction = rng.uniform(0.4, 1.1)
        time.sleep(fraction * reindex_seconds)  # choosing the kill instant only
        victim.kill()
        return Run(kind, f"after {fraction:.2f} x {reindex_seconds:.2f} s", victim)

    ready = victim.next_event()
    assert ready is not None and ready["event"] == "ready", (ready, victim.stderr())
    if "server_pid" in ready:
        victim.groups.insert(0, ready["server_pid"])
    victim.wait_for_acks(acks)
    if mode == "file":
        wait_for_new_entries(victim, home, store_entries(home), 1)
        delay = rng.uniform(0, 0.003)
    else:
        delay = rng.uniform(0, 0.6 if kind == "cli" else 0.05)
    time.sleep(delay)  # choosing the kill instant only
    victim.kill()
    return Run(kind, f"after {acks} acks, {mode}, +{delay * 1000:.0f} ms", victim)


def write_import_file(path: Path, rng: random.Random, number: int) -> None:
    with path.open("w", encoding="utf-8") as out:
        for item in range(IMPORT_ITEMS):
            line = {"text": f"import {number} item {item}: {words(rng, 6)}", "scopes": ["crash"]}
            out.write(json.dumps(line) + "\n")


@pytest.mark.slow
def test_sigkilled_writers_leave_a_consistent_store(
    home: Path, make_cli: Any, make_probe: Any, tmp_path: Path
) -> None:
    seed = int(os.environ.get(SEED_ENV) or random.SystemRandom().randrange(2**32))
    print(f"\ncrash: seed {seed} (rerun with {SEED_ENV}={seed})")
    rng = random.Random(seed)
    cli = make_cli(home)
    probe = make_probe(home)
    env = make_cli.env()
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    ledger = Ledger()
    seed_store(home, ledger, rng)

    kinds = [("cli", "mcp", "import", "cli", "mcp", "reindex")[i % 6] for i in range(KILLS)]
    rng.shuffle(kinds)
    import_file: Path | None = None
    reindex_seconds = 1.0
    started = time.perf_counter()
    for number, kind in enumerate(kinds):
        if kind == "import" and import_file is None:
            import_file = scratch / f"import-{number}.jsonl"
            write_import_file(import_file, rng, number)
            ledger.import_files[import_file.name] = [
                json.loads(line)["text"]
                for line in import_file.read_text(encoding="utf-8").splitlines()
            ]
        run = start_writer(
            kind,
            number,
            rng=rng,
            seed=seed,
            script=cli.script,
            home=home,
            env=env,
            scratch=scratch,
            import_file=import_file or scratch / "unused.jsonl",
            reindex_seconds=reindex_seconds,
        )
        events = run.victim.drain()
        where = f"seed {seed}, kill {number} ({kind}, {run.plan})"
        unexpected = [e for e in events if e["event"] == "unexpected"]
        assert unexpected == [], f"{where}: {unexpected[:3]}\n{run.victim.stderr()}"
        for event in events:
            if event["event"] == "ack":
                ledger.take(event)
        if kind == "import":
            report = _import_report(run.victim.lines)
            if report is not None:  # acknowledged: every item is in (added or already there)
                assert report["added"] + report["skipped"] == IMPORT_ITEMS, (where, report)
                assert run.import_file is not None
                ledger.imported += ledger.import_files[run.import_file.name]
                import_file = None  # the next import brings a new file
            # else: killed before its report; the next import retries the same file
        acked = sum(e["event"] == "ack" for e in events)
        print(
            f"crash: kill {number:2d} {kind:7s} {run.plan:34s} "
            f"{'killed' if run.victim.killed else 'ended '} acks {acked:3d}, "
            f"ledger {ledger.count()}, files {len(probe.files())}, rows {len(probe.rows())}"
        )
        reindex_seconds = check_store(
            cli, probe, make_probe, ledger, home, scratch / f"rebuilt-{number}", where
        )

    final = cli("reindex", "--json")
    where = f"seed {seed}, after the last kill"
    assert final.returncode == 0, (where, final.stdout, final.stderr)
    assert final.doc["problems"] == [], (where, final.doc)
    assert not final.doc.get("forks") and not final.doc.get("duplicates"), (where, final.doc)
    check_heads(probe, f"{where}, reindexed")
    check_acknowledged(probe, ledger, f"{where}, reindexed", files=True)
    assert len(probe.files()) == len(probe.rows()), where
    print(
        f"crash: {KILLS} kills in {time.perf_counter() - started:.1f} s; final reindex {final.doc}"
    )


def _import_report(lines: list[str]) -> dict[str, Any] | None:
    try:
        report = json.loads("".join(lines))
    except ValueError:
        return None
    return report if isinstance(report, dict) and "actions" in report else None


def check_store(
    cli: Any,
    probe: Any,
    make_probe: Any,
    ledger: Ledger,
    home: Path,
    copy: Path,
    where: str,
) -> float:
    """The checks after one kill; returns how long the rebuild's reindex took."""
    opened = cli("recall", "ledger", "--scope", "crash", "--json")
    assert opened.returncode == 0, (where, opened.stdout, opened.stderr)
    temps = sorted(str(path.relative_to(home)) for path in home.rglob(".tmp-*"))
    assert temps == [], f"{where}: temp files left after the store was opened again: {temps}"
    check_acknowledged(probe, ledger, f"{where}, index", files=True)
    check_heads(probe, f"{where}, index")

    rebuilt_copy(home, copy)
    reindex_started = time.perf_counter()
    report = cli("reindex", "--json", home=copy)
    seconds = time.perf_counter() - reindex_started
    assert report.returncode == 0, (where, report.stdout, report.stderr)
    assert report.doc["problems"] == [], (where, report.doc["problems"])
    assert not report.doc.get("forks") and not report.doc.get("duplicates"), (where, report.doc)
    rebuilt = make_probe(copy)
    check_heads(rebuilt, f"{where}, index rebuilt from the files")
    check_acknowledged(rebuilt, ledger, f"{where}, index rebuilt from the files", files=False)
    shutil.rmtree(copy)
    return seconds
