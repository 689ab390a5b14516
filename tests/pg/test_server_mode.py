"""The server mode: a PostgreSQL database is canonical, shared by homes on many machines.

No fact file is written anywhere; writes from engines on different homes are ordered by the
database (its advisory write lock, the compare-and-swap, the unique keys); a fact file is a
mirror a person asks for (`export --format gno`), the same bytes the embedded mode writes."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import psycopg
import pytest
from sqlalchemy import select, text
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import counted_record_ids
from engine.curation import review
from engine.facade.factory import open_engine
from engine.interop import transfer
from engine.keyed import service as keyed
from engine.memory.recall import RecallRequest, recall
from engine.memory.remember import RememberRequest, remember
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.schema import tables
from engine.storage.server.parts import WRITE_LOCK_KEY
from engine.storage.store import MemoryEngine

LEXICAL = EmbedderStatus(None, "tests: lexical")


def _add(store: MemoryEngine, text: str, **fields: Any) -> dict[str, Any]:
    fields.setdefault("scopes", ["team"])
    request = RememberRequest(
        text=text, caller="test:agent", session="s1", decision="add", **fields
    )
    return remember(store, request)


def _supersede(store: MemoryEngine, old: dict[str, Any], text: str) -> dict[str, Any]:
    record = old["record"]
    return remember(
        store,
        RememberRequest(
            text=text,
            scopes=None,
            caller="test:agent",
            session="s1",
            decision="supersede",
            predecessor=record["uri"],
            predecessor_hash=record["contentHash"],
        ),
    )


def _recalled(store: MemoryEngine, query: str) -> list[str]:
    result = recall(
        store,
        RecallRequest(query=query, scopes=["team"], caller="test:agent", session="s1"),
    )
    return [fact["text"] for fact in result["facts"]]


def _heads_per_chain(store: MemoryEngine) -> dict[str, int]:
    """Current facts per chain root: a fork would show as 2."""
    with Session(store.db) as session:
        rows = {row.record_id: row for row in session.scalars(select(tables.FactRow))}
    by_uri = {row.uri: row for row in rows.values()}
    heads: dict[str, int] = {}
    for row in rows.values():
        root = row
        while root.supersedes and root.supersedes[0] in by_uri:
            root = by_uri[root.supersedes[0]]
        if row.superseded_by is None and row.retired_at is None:
            heads[root.record_id] = heads.get(root.record_id, 0) + 1
    return heads


def _keyed_heads(store: MemoryEngine) -> dict[str, int]:
    """Current facts per key: a fork would show as 2."""
    with Session(store.db) as session:
        rows = session.execute(
            text(
                "SELECT kv_key, count(*) FROM facts WHERE kv_key IS NOT NULL "
                "AND superseded_by IS NULL GROUP BY kv_key"
            )
        ).all()
    return {str(row[0]): int(row[1]) for row in rows}


def _home_files(home: Path) -> list[str]:
    """Everything a home holds (relative paths), for the "only local settings" check."""
    if not home.exists():
        return []
    return sorted(str(path.relative_to(home)) for path in home.rglob("*"))


def _fixed_clock() -> Callable[[], datetime]:
    """One moment for every call: the two modes ask the clock a different number of times."""
    moment = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)
    return lambda: moment


# -- what lives where -------------------------------------------------------------------------


def test_a_server_store_writes_no_file_and_export_renders_the_embedded_files(
    open_pg: Any, pg_url: str, tmp_path: Path
) -> None:
    """The same writes and curation on an embedded home and on a server database: the
    server's home gets no fact file, journal or collections file, and its `export --format
    gno` is, file for file and byte for byte, what the embedded home holds."""
    embedded = open_engine(
        home=tmp_path / "embedded", embedder_status=LEXICAL, clock=_fixed_clock(),
        ids=counted_record_ids("same"),
    )  # fmt: skip
    server = open_pg(
        pg_url, LEXICAL, name="server", clock=_fixed_clock(), ids=counted_record_ids("same")
    )
    assert (embedded.store.name, server.store.name) == ("embedded", "server")
    for store in (embedded, server):
        first = _add(store, "Alice drinks green tea", source="chat")
        assert first["sync"] == {"status": "completed"}
        second = _supersede(store, first, "Alice drinks black tea")
        assert second["outcome"] == "superseded"
        other = _add(store, "The deadline is on Friday")
        review.confirm(store, ref=second["record"]["uri"], actor="person")
        review.retire(store, ref=other["record"]["uri"], actor="person", reason="done")
        review.restore(store, ref=other["record"]["uri"], actor="person")
        review.mark_stale(store, ref=other["record"]["uri"], actor="person")
        keyed.remember(store, {"key": "pref/tea", "memory": {"content": "green", "tags": ["A"]}})
        keyed.remember(store, {"key": "pref/tea", "memory": {"content": "black"}, "if_revision": 1})
    # No file in the server's home: the result's absPath is the fact's uri.
    assert second["absPath"] == second["record"]["uri"]
    assert _home_files(tmp_path / "server") == []
    mirror = tmp_path / "mirror"
    assert transfer.export_gno(server, mirror) == 5
    exported = {p.relative_to(mirror).as_posix(): p.read_bytes() for p in mirror.rglob("*.md")}
    root = tmp_path / "embedded" / "collections" / "memory"
    canonical = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("mem-*.md")}
    assert exported == canonical
    assert b"user_confirmed" in b"".join(exported.values())


def test_collections_live_in_the_database_and_a_path_is_refused(
    open_pg: Any, pg_url: str, tmp_path: Path
) -> None:
    first = open_pg(pg_url, LEXICAL, name="one")
    row = first.add_collection("work", policy="lan")
    assert row.root == ""
    with pytest.raises(MemoryFailure) as refused:
        first.add_collection("elsewhere", path=tmp_path / "folder")
    assert refused.value.code == "MEMORY_COLLECTION_INVALID"
    assert "export --format gno" in refused.value.message
    assert not (tmp_path / "folder").exists()
    first.set_policy("work", "remote", actor="person")
    second = open_pg(pg_url, LEXICAL, name="two")  # another machine: sees it, policy included
    assert second.collections_by_name()["work"].policy == "remote"
    _add(second, "Carol lives in Lyon", collection="work")
    assert not (tmp_path / "one" / "collections.yaml").exists()
    assert not (tmp_path / "two" / "collections").exists()


# -- writes ordered by the database -----------------------------------------------------------


def test_a_held_write_lock_is_lease_busy_on_open_and_on_write(open_pg: Any, pg_url: str) -> None:
    """Another session holds the database's write lock: a new database cannot be prepared
    and a write cannot start; both say MEMORY_WRITE_LEASE_BUSY and what to do."""
    with psycopg.connect(pg_url, autocommit=True) as holder:
        holder.execute("SELECT pg_advisory_lock(%s)", (WRITE_LOCK_KEY,))
        with pytest.raises(MemoryFailure) as opening:
            open_pg(pg_url, LEXICAL, name="first", lock_timeout=0.05)
        assert opening.value.code == "MEMORY_WRITE_LEASE_BUSY"
        assert "Retry" in opening.value.message and "pg_stat_activity" in opening.value.message
        holder.execute("SELECT pg_advisory_unlock(%s)", (WRITE_LOCK_KEY,))
        store = open_pg(pg_url, LEXICAL, name="second", lock_timeout=0.05)
        holder.execute("SELECT pg_advisory_lock(%s)", (WRITE_LOCK_KEY,))
        with pytest.raises(MemoryFailure) as writing:
            _add(store, "Bob likes coffee")
        assert writing.value.code == "MEMORY_WRITE_LEASE_BUSY"
        holder.execute("SELECT pg_advisory_unlock(%s)", (WRITE_LOCK_KEY,))
    assert _add(store, "Bob likes coffee")["outcome"] == "added"  # free again: it goes


def _race(calls: list[Callable[[], Any]]) -> list[Any]:
    """Run the calls at once on threads (a barrier releases them together); each result is
    the call's value or the MemoryFailure it raised."""
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(position: int) -> None:
        barrier.wait()
        try:
            results[position] = calls[position]()
        except MemoryFailure as failure:
            results[position] = failure

    threads = [threading.Thread(target=run, args=(n,)) for n in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def test_two_homes_racing_supersedes_and_keyed_updates_never_fork(
    open_pg: Any, pg_url: str
) -> None:
    one = open_pg(pg_url, LEXICAL, name="one")
    two = open_pg(pg_url, LEXICAL, name="two")
    for round_ in range(4):
        base = _add(one, f"Alice lives in Paris, version {round_}")
        results = _race(
            [
                partial(_supersede, one, base, f"Alice lives in Lyon {round_}"),
                partial(_supersede, two, base, f"Alice lives in Berlin {round_}"),
            ]
        )
        outcomes = sorted(r.code if isinstance(r, MemoryFailure) else r["outcome"] for r in results)
        assert outcomes == ["MEMORY_SUPERSEDE_CONFLICT", "superseded"]
        key = f"city/{round_}"
        keyed.remember(one, {"key": key, "memory": {"content": "Paris"}})
        updates = _race(
            [
                partial(
                    keyed.remember,
                    one,
                    {"key": key, "memory": {"content": "Lyon"}, "if_revision": 1},
                ),
                partial(
                    keyed.remember,
                    two,
                    {"key": key, "memory": {"content": "Berlin"}, "if_revision": 1},
                ),
            ]
        )
        codes = sorted(r.code if isinstance(r, MemoryFailure) else "ok" for r in updates)
        assert codes == ["MEMORY_REVISION_CONFLICT", "ok"], updates
    assert set(_heads_per_chain(two).values()) == {1}
    assert set(_keyed_heads(one).values()) == {1}


def test_homes_opening_a_new_database_at_once_share_one_default_collection(
    pg_url: str, tmp_path: Path
) -> None:
    stores = _race(
        [
            partial(open_engine, home=tmp_path / f"h{n}", db_url=pg_url, embedder_status=LEXICAL)
            for n in range(3)
        ]
    )
    try:
        assert all(isinstance(store, MemoryEngine) for store in stores), stores
        for store in stores:
            assert list(store.collections_by_name()) == ["memory"]
    finally:
        for store in stores:
            if isinstance(store, MemoryEngine):
                store.db.dispose()


# -- three homes, one server ------------------------------------------------------------------


def test_three_homes_one_server_lose_nothing_when_a_home_is_deleted(
    open_pg: Any, pg_url: str, tmp_path: Path, cli: Any
) -> None:
    one = open_pg(pg_url, LEXICAL, name="one")
    two = open_pg(pg_url, LEXICAL, name="two")
    acknowledged: list[str] = []
    chain = _add(one, "The project deadline is on Monday")
    acknowledged.append(chain["record"]["text"])
    added = cli(
        "--db", pg_url, "remember", "Bob prefers water", "--scope", "team", "--add", "--json",
        home=tmp_path / "three",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    acknowledged.append(added.doc["record"]["text"])
    head = _supersede(two, chain, "The project deadline is on Friday")
    acknowledged.append(head["record"]["text"])
    keyed.remember(two, {"key": "drink/bob", "memory": {"content": "Bob drinks tea"}})
    # The first home's folder goes (a machine wiped): its writes stay, and it can go on.
    shutil.rmtree(tmp_path / "one")
    acknowledged.append(_add(one, "Carol lives in Berlin")["record"]["text"])
    updated = cli(
        "--db", pg_url, "memory", "remember", "--json", home=tmp_path / "three",
        stdin='{"key": "drink/bob", "memory": {"content": "Bob drinks coffee"}, "if_revision": 1}',
    )  # fmt: skip
    assert updated.returncode == 0, updated.stderr
    for store in (one, two):
        assert "The project deadline is on Friday" in _recalled(store, "deadline")
        assert "The project deadline is on Monday" not in _recalled(store, "deadline")
        with Session(store.db) as session:
            texts = {row[0] for row in session.execute(text("SELECT text FROM facts"))}
        assert set(acknowledged) <= texts
    before = sorted(transfer.export_jsonl_items(two), key=lambda item: item["recordId"])
    reindexed = cli("--db", pg_url, "reindex", "--json", home=tmp_path / "fresh")
    assert reindexed.returncode == 0, reindexed.stderr
    assert (reindexed.doc["removed"], reindexed.doc["changed"], reindexed.doc["added"]) == (0, 0, 0)
    from engine.storage.reindex import reindex

    assert reindex(one)["removed"] == 0
    after = sorted(transfer.export_jsonl_items(two), key=lambda item: item["recordId"])
    assert after == before and len(after) == 6
    assert set(_heads_per_chain(one).values()) == {1}
    assert _keyed_heads(one) == {"drink/bob": 1}
    for home in ("two", "three", "fresh"):  # homes hold local settings only: no fact, no journal
        held = _home_files(tmp_path / home)
        assert not [name for name in held if name.endswith(".md") or ".inflight" in name], held
        assert "collections.yaml" not in held


# -- moving a home into a server --------------------------------------------------------------


def test_an_embedded_home_moves_into_a_server_by_importing_its_collection_folder(
    pg_url: str, tmp_path: Path, cli: Any
) -> None:
    """The documented move: `gno-tui --db URL import <home>/collections/memory`."""
    home = tmp_path / "laptop"
    first = cli("remember", "Alice drinks green tea", "--scope", "s", "--add", "--json", home=home)
    record = first.doc["record"]
    cli(
        "remember", "Alice drinks black tea", "--supersede", record["uri"],
        "--predecessor-hash", record["contentHash"], "--json", home=home,
    )  # fmt: skip
    cli("remember", "Bob lives in Paris", "--scope", "s", "--add", "--json", home=home)
    moved = cli(
        "--db", pg_url, "import", str(home / "collections" / "memory"), "--json",
        home=tmp_path / "server-home",
    )  # fmt: skip
    assert moved.returncode == 0, moved.stderr
    recalled = cli(
        "--db", pg_url, "recall", "Alice tea", "--scope", "s", "--json", home=tmp_path / "x"
    )
    assert [fact["text"] for fact in recalled.doc["facts"]] == ["Alice drinks black tea"]
    assert recalled.doc["facts"][0]["uri"].startswith("gno://memory/")
    assert {fact["recordId"] for fact in recalled.doc["facts"]} <= {
        path.stem for path in (home / "collections" / "memory").rglob("mem-*.md")
    }
    again = cli(
        "--db",
        pg_url,
        "import",
        str(home / "collections" / "memory"),
        "--json",
        home=tmp_path / "x",
    )
    assert again.returncode == 0 and again.doc["added"] == 0  # the ids are in: nothing twice
    # Another collection: added on the server with its policy, imported into it by name.
    cli("collection", "add", "work", "--policy", "lan", "--json", home=home)
    cli(
        "remember",
        "Carol lives in Lyon",
        "--scope",
        "s",
        "--add",
        "--collection",
        "work",
        home=home,
    )
    server = ("--db", pg_url)
    cli(*server, "collection", "add", "work", "--policy", "lan", "--json", home=tmp_path / "x")
    into = cli(
        *server, "import", str(home / "collections" / "work"), "--collection", "work", "--json",
        home=tmp_path / "x",
    )  # fmt: skip
    assert into.returncode == 0 and into.doc["added"] == 1, into.stdout
    work = cli(*server, "recall", "lyon", "--scope", "s", "--egress", "lan", "--json", home=home)
    assert [fact["uri"].split("/")[2] for fact in work.doc["facts"]] == ["work"]


def test_the_cli_in_server_mode_jsonl_move_status_paths_and_the_mirror(
    pg_url: str, tmp_path: Path, cli: Any
) -> None:
    """The other documented move (export jsonl, import into the server), and what the CLI says
    in the server mode: its mode, a refused --path, a mirror written on request."""
    laptop = tmp_path / "laptop"
    first = cli(
        "remember", "Alice drinks green tea", "--scope", "s", "--add", "--json", home=laptop
    )
    cli(
        "remember", "Alice drinks black tea", "--supersede", first.doc["record"]["uri"],
        "--predecessor-hash", first.doc["record"]["contentHash"], "--json", home=laptop,
    )  # fmt: skip
    exported = cli(
        "export",
        "--format",
        "jsonl",
        "--output",
        str(tmp_path / "facts.jsonl"),
        "--json",
        home=laptop,
    )
    assert exported.returncode == 0, exported.stderr
    server = tmp_path / "server-home"
    imported = cli("--db", pg_url, "import", str(tmp_path / "facts.jsonl"), "--json", home=server)
    assert imported.returncode == 0 and imported.doc["added"] == 2, imported.stdout
    status = cli("--db", pg_url, "status", "--json", home=server)
    assert status.doc["mode"] == "server"
    refused = cli(
        "--db",
        pg_url,
        "collection",
        "add",
        "team",
        "--path",
        str(tmp_path / "t"),
        "--json",
        home=server,
    )
    assert refused.error is not None and refused.error["code"] == "MEMORY_COLLECTION_INVALID"
    assert "--path" in refused.error["message"] and not (tmp_path / "t").exists()
    listed = cli("--db", pg_url, "collection", "list", "--json", home=server)
    assert [(row["name"], row["root"]) for row in listed.doc["collections"]] == [("memory", None)]
    mirror = tmp_path / "mirror"
    written = cli(
        "--db", pg_url, "export", "--format", "gno", "--output", str(mirror), "--json", home=server
    )
    assert written.returncode == 0 and written.doc["facts"] == 2, written.stdout
    files = {path.stem for path in mirror.rglob("mem-*.md")}
    assert files == {path.stem for path in (laptop / "collections" / "memory").rglob("mem-*.md")}
    recalled = cli("--db", pg_url, "recall", "Alice tea", "--scope", "s", "--json", home=server)
    assert [fact["text"] for fact in recalled.doc["facts"]] == ["Alice drinks black tea"]
    assert _home_files(server) == []


def test_curation_review_receipts_and_labels_need_no_home(
    open_pg: Any, pg_url: str, tmp_path: Path
) -> None:
    """Everything a person does lives in the database: after the home that did it is deleted,
    a fresh home sees the curation, the decided proposal, the receipt, the label and the log,
    and undo goes on from there."""
    from engine.facade.curation import Curation, CurationAction
    from engine.facade.service import MemoryService

    desk = MemoryService(open_pg(pg_url, LEXICAL, name="desk"))
    fact = _add(desk.engine, "Alice drinks green tea")["record"]
    desk.curation.curate(Curation(CurationAction.CONFIRM, fact["uri"], "person"))
    held = remember(
        desk.engine,
        RememberRequest(
            text="Bob lives in Paris", scopes=["team"], caller="mcp:a", session="m", decision="add"
        ),
        hold_writes=True,
        origin="mcp",
    )
    assert held["outcome"] == "candidates"
    (proposal,) = desk.curation.proposals()
    decided: Mapping[str, Any] = desk.curation.decide(
        review.Decision(proposal["id"], "add", "person")
    )
    assert decided["outcome"] == "added"
    recalled = desk.recall(
        RecallRequest(query="tea", scopes=["team"], caller="test:agent", session="s1")
    )
    digest = recalled["receipt"]["digest"]
    desk.curation.label(digest=digest, ref=fact["recordId"], label="relevant", actor="person")
    desk.curation.curate(Curation(CurationAction.RETIRE, fact["uri"], "person", reason="old"))
    shutil.rmtree(tmp_path / "desk")

    laptop = MemoryService(open_pg(pg_url, LEXICAL, name="laptop"))
    actions = [entry["action"] for entry in laptop.curation.decision_log()]
    assert {"confirm", "retire"} <= set(actions)
    assert laptop.curation.proposals() == []
    assert laptop.curation.labels_of(digest=digest, actor="person") == {
        fact["recordId"]: "relevant"
    }
    assert "Alice drinks green tea" not in _recalled(laptop.engine, "tea")  # retired
    laptop.curation.undo(actor="person")  # the retire, undone from another home
    assert "Alice drinks green tea" in _recalled(laptop.engine, "tea")
    mirror = tmp_path / "mirror"
    transfer.export_gno(laptop.engine, mirror)
    (alice,) = [p for p in mirror.rglob("*.md") if fact["recordId"] in p.name]
    assert "user_confirmed" in alice.read_text(encoding="utf-8")
    assert "retired" not in alice.read_text(encoding="utf-8")
    assert _home_files(tmp_path / "laptop") == []


def test_a_write_the_database_refuses_stores_nothing_and_says_so(
    open_pg: Any, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = open_pg(pg_url, LEXICAL, name="one")

    def refused(*_args: Any) -> None:
        raise ConnectionError("server closed the connection")

    monkeypatch.setattr(store, "index_new_fact", refused)
    with pytest.raises(MemoryFailure) as failure:
        _add(store, "Alice drinks green tea")
    assert failure.value.code == "MEMORY_SYNC_FAILED" and failure.value.exit_code == 2
    assert "nothing was stored" in failure.value.message
    monkeypatch.undo()
    with Session(store.db) as session:
        assert session.scalars(select(tables.FactRow)).all() == []
    # A database left without its default collection (a crash after its schema) gets it back
    # at first use.
    with store.db.begin() as connection:
        connection.execute(text("DELETE FROM collections"))
    assert _add(store, "Alice drinks green tea")["outcome"] == "added"


def test_reindex_rebuilds_damaged_derived_data_and_changes_no_fact(
    open_pg: Any, pg_url: str, tiny_embedder: Any
) -> None:
    from engine.storage.reindex import reindex

    store = open_pg(pg_url, EmbedderStatus(tiny_embedder), name="one")
    first = _add(store, "Alice drinks green tea")
    _supersede(store, first, "Alice drinks black tea")
    _add(store, "Bob lives in Paris")
    assert _recalled(store, "paris")[0] == "Bob lives in Paris"
    before = transfer.export_jsonl_items(store)
    with store.db.begin() as connection:  # derived data lost behind the index's back
        connection.execute(text("DELETE FROM embeddings"))
        connection.execute(text("DELETE FROM fact_search"))
        connection.execute(text("DELETE FROM fact_vectors"))
    assert _recalled(store, "paris") == []
    report = reindex(store)
    assert (report["added"], report["changed"], report["removed"], report["indexed"]) == (
        0,
        0,
        0,
        3,
    )
    assert transfer.export_jsonl_items(store) == before
    assert _recalled(store, "paris")[0] == "Bob lives in Paris"
    with store.db.connect() as connection:
        assert connection.scalar(text("SELECT count(*) FROM embeddings")) == 3
        assert connection.scalar(text("SELECT count(*) FROM fact_search")) == 2  # current ones
