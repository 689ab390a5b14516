"""Many adds at once (imports, benchmarks, the demo): the same files and rows as `remember`
with decision add, written under one hold of the write lock, all or nothing. Exact duplicates
(same text, an intersecting scope, same collection, current) are skipped, as a single add would
answer `existing`.

The write phase (docs/decisions.md, "Import safety"):

1. every file is rendered and checked first, then written into a staging folder
   `<collection root>/.import-<id>/facts/<day>/` (same filesystem as its final place, and
   outside `facts/`, so reindex never sees it);
2. the staged files are made durable (one syncfs for the lot, else an fsync per file);
3. every row, its scopes, its vector and the supersede links are committed in one
   transaction;
4. the staged files are renamed into `facts/<day>/` and the staging folder is removed.

A process killed in 1 to 3 leaves no row and no visible file; one killed in 4 leaves committed
rows whose files wait in the staging folder. `recover_interrupted_writes` settles both, file by
file: a staged file whose row exists is moved into place (rolled forward), any other is deleted
(rolled back). It runs at the start of every bulk write, and is meant for reindex and the
store's open as well. It also removes the `.tmp-*` files a crash inside `write_atomically`
left behind."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from sqlalchemy import JSON, column, delete, insert, select, table, update
from sqlalchemy.orm import Session

from engine.contract.curation_fields import curation_defaults
from engine.contract.errors import MemoryFailure
from engine.contract.normalize import (
    MAX_TEXT_BYTES,
    check_identity,
    clean_text,
    content_hash,
    fact_uri,
    iso_utc,
    normalize_scopes,
)
from engine.retrieval.embeddings import embed_facts, vector_to_bytes
from engine.storage import tables
from engine.storage.database import bump_generation
from engine.storage.factfiles import (
    KEYED_MAX_TEXT_BYTES,
    MAX_FACT_FILE_BYTES,
    FactFile,
    FieldError,
    check_gno_uris,
    check_time,
    check_workbench,
    fsync_file,
    fsync_folder,
    remove_temp_files,
    sync_filesystem,
)
from engine.storage.records import allocate_docid, row_fields

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

BATCH = 1000
STAGING_PREFIX = ".import-"
# Test-only: `stage:count` makes the writing process SIGKILL itself at that point of the write
# phase (staged:N after N files are staged, committed after the commit, published:N after N
# files are in place), so the tests can kill an import at an exact instant. Unset, it does
# nothing; nothing but tests/cli/test_cli_trust_import.py sets it.
CRASH_HOOK_ENV = "GNO_TUI_TEST_CRASH_BULK_WRITE"


@dataclass
class BulkFact:
    text: str
    scopes: Sequence[str]
    caller: str
    session: str
    collection: str = "memory"
    source: str | None = None
    created_by: str = "agent"
    workbench: dict[str, Any] = field(default_factory=dict)
    # Kept as given when restoring from an export; otherwise new ones are made.
    record_id: str | None = None
    created_at: str | None = None
    docid: str | None = None
    supersedes: list[str] = field(default_factory=list)
    # Superseded in its source: restored as history, never taken for a duplicate.
    history: bool = False
    # The fact's vector block (engine/retrieval/embeddings.embed_facts), when the caller has
    # embedded the text already (an import's dedup): stored as it is, not computed again.
    block: Any = None


@dataclass
class BulkReport:
    added: list[str] = field(default_factory=list)  # record ids, in input order
    skipped: list[int] = field(default_factory=list)  # input positions of exact duplicates


@dataclass
class _Planned:
    row: Any  # a FactRow, or a namespace with its fields (records.row_fields)
    root: Path
    content: str
    block: Any = None  # the vector block, or None without a model


def _text_limit(fact: BulkFact) -> int:
    """A keyed-API fact (restored from an export) may be as long as the keyed API allows."""
    return KEYED_MAX_TEXT_BYTES if "keyed" in fact.workbench else MAX_TEXT_BYTES


def _refuse(position: int, why: str) -> MemoryFailure:
    return MemoryFailure(
        "MEMORY_IMPORT_INVALID", f"Item {position + 1} of the batch: {why}. Nothing was written."
    )


def add_many(
    engine: MemoryEngine,
    facts: Sequence[BulkFact],
    *,
    progress: Callable[[int, int], None] | None = None,
    durable: bool = True,
) -> BulkReport:
    """Validate everything first (one bad fact writes nothing), then write all or nothing.

    `durable=False` skips the fsyncs, for throwaway stores (benchmarks, the demo)."""
    checked = [
        (
            clean_text(f.text, max_bytes=_text_limit(f)),
            normalize_scopes(f.scopes),
            *check_identity(f.caller, f.session),
            f,
        )
        for f in facts
    ]
    # No folders in the server mode: the rows are the facts (engine/storage/fact_sink.py).
    roots = {
        name: engine.collection_root(name) if engine.files_canonical else Path()
        for name in {engine.require_collection(f.collection).name for f in facts}
    }
    crash = _crash_points()
    report = BulkReport()
    with engine.write_lock():
        recover_interrupted_writes(engine, skip_live=False)
        seen = _current_hashes(engine)
        with Session(engine.db) as db:
            taken = set(db.scalars(select(tables.FactRow.docid)))
            known = set(db.scalars(select(tables.FactRow.record_id)))
        planned: list[_Planned] = []
        for position, (text, scopes, caller, session, fact) in enumerate(checked):
            digest = content_hash(text)
            if not fact.history:
                key_scopes = seen.setdefault((fact.collection, digest), set())
                if key_scopes & set(scopes):
                    report.skipped.append(position)
                    continue
                key_scopes.update(scopes)
            try:
                created_at = check_time(fact.created_at or iso_utc(engine.now()), "createdAt")
                supersedes = check_gno_uris(list(fact.supersedes), "supersedes")
                workbench = check_workbench(fact.workbench)
            except FieldError as exc:
                raise _refuse(position, str(exc)) from exc
            record_id = fact.record_id or engine.new_record_id()
            if record_id in known:
                raise _refuse(position, f"record id {record_id} is already in use")
            known.add(record_id)
            docid = (
                fact.docid
                if fact.docid and fact.docid not in taken
                else allocate_docid(None, record_id=record_id, taken=taken)
            )
            taken.add(docid)
            file = FactFile(
                record_id=record_id,
                scopes=scopes,
                caller=caller,
                session=session,
                created_at=created_at,
                content_hash=digest,
                text=text,
                source=fact.source,
                supersedes=supersedes,
                workbench={"docid": docid, **curation_defaults(fact.created_by), **workbench},
            )
            content = file.render()
            if len(content.encode("utf-8")) > MAX_FACT_FILE_BYTES:
                raise _refuse(position, "its fact file would be larger than 1 MiB")
            day = created_at[:10]
            rel_path = f"facts/{day}/{record_id}.md"
            root = roots[fact.collection]
            if engine.files_canonical and (root / rel_path).exists():
                raise _refuse(
                    position,
                    f"{root / rel_path} exists but is not in the index; run `gno-tui reindex`",
                )
            row = SimpleNamespace(
                **row_fields(
                    file,
                    collection=fact.collection,
                    uri=fact_uri(fact.collection, day, record_id),
                    rel_path=rel_path,
                    docid=docid,
                )
            )
            planned.append(_Planned(row, root, content, fact.block))
            report.added.append(record_id)
        if planned:
            _write_all(engine, planned, progress=progress, durable=durable, crash=crash)
    return report


def _write_all(
    engine: MemoryEngine,
    planned: list[_Planned],
    *,
    progress: Callable[[int, int], None] | None,
    durable: bool,
    crash: tuple[str, int] | None,
) -> None:
    if not engine.files_canonical:  # server mode: the one transaction is the whole write
        _embed_missing(engine, planned)
        _commit_rows(engine, planned)
        return
    token = f"{os.getpid()}-{secrets.token_hex(4)}"
    stagings = {item.root: item.root / f"{STAGING_PREFIX}{token}" for item in planned}
    committed = False
    try:
        for staging in stagings.values():
            staging.mkdir(parents=True)
        _crash_at(crash, "staged", 0)
        folders: set[Path] = set()
        for done, item in enumerate(planned, start=1):
            staged = stagings[item.root] / item.row.rel_path
            if staged.parent not in folders:
                staged.parent.mkdir(parents=True, exist_ok=True)
                folders.add(staged.parent)
            # Not flushed one by one: one syncfs below makes them all durable at once.
            with open(staged, "x", encoding="utf-8", newline="\n") as out:
                out.write(item.content)
            _crash_at(crash, "staged", done)
            if progress:
                progress(done, len(planned))
        if durable:
            _make_durable(planned, stagings, folders)
        _embed_missing(engine, planned)
        _commit_rows(engine, planned)
        committed = True
    finally:
        if not committed:  # nothing is visible yet; settle the staging folders now if we can
            for staging in stagings.values():
                _settle_quietly(engine, staging)
    _crash_at(crash, "committed")
    folders = set()
    for done, item in enumerate(planned, start=1):
        final = item.root / item.row.rel_path
        final.parent.mkdir(parents=True, exist_ok=True)
        # Absent: checked under this hold of the write lock, which every fact writer takes.
        (stagings[item.root] / item.row.rel_path).replace(final)
        folders.add(final.parent)
        _crash_at(crash, "published", done)
    if durable:
        for folder in folders:
            fsync_folder(folder)
    for staging in stagings.values():
        shutil.rmtree(staging, ignore_errors=True)


def _make_durable(planned: list[_Planned], stagings: dict[Path, Path], folders: set[Path]) -> None:
    """Every staged file and folder on disk before the rows commit: one syncfs per staging
    folder's filesystem, or an fsync per file where syncfs does not exist."""
    synced = all(sync_filesystem(staging) for staging in stagings.values())
    if not synced:
        for item in planned:
            fsync_file(stagings[item.root] / item.row.rel_path)
    for folder in folders:
        fsync_folder(folder)


def _embed_missing(engine: MemoryEngine, planned: list[_Planned]) -> None:
    """Vectors for the facts that came without one (all of them, unless an import's dedup
    embedded the texts already), in batches."""
    embedder = engine.embedder_status.embedder
    if embedder is None:
        return
    missing = [item for item in planned if item.block is None]
    for chunk in _chunks(missing, BATCH):
        for item, block in zip(
            chunk, embed_facts(embedder, [i.row.text for i in chunk]), strict=True
        ):
            item.block = block


def _settle_quietly(engine: MemoryEngine, staging: Path) -> None:
    """After a failure before the commit: roll the staging folder back (or forward, should the
    commit have gone through after all). If even that fails, the next recovery does it."""
    try:
        _settle(engine, staging)
    except Exception:  # noqa: BLE001 - the original error is the one to report
        return


def _commit_rows(engine: MemoryEngine, planned: list[_Planned]) -> None:
    """Every row, its scopes, its vector and the predecessors it supersedes, in one
    transaction."""
    rows = [item.row for item in planned]
    embedder = engine.embedder_status.embedder
    with Session(engine.db, expire_on_commit=False) as session:
        if embedder is not None:
            for chunk in _chunks(planned, BATCH):
                # A vector left by a fact that reindex took out of the index would clash.
                session.execute(
                    delete(tables.EmbeddingRow).where(
                        tables.EmbeddingRow.record_id.in_([item.row.record_id for item in chunk])
                    )
                )
                session.execute(
                    insert(tables.EmbeddingRow),
                    [
                        {
                            "record_id": item.row.record_id,
                            "model_id": embedder.model_id,
                            "content_hash": item.row.content_hash,
                            "vector": vector_to_bytes(item.block),
                        }
                        for item in chunk
                    ],
                )
        for chunk in _chunks(rows, BATCH):
            # Values as the columns store them (JSON text, ISO times), inserted through a bare
            # table clause: SQLAlchemy's per-value type processing was most of the commit.
            session.execute(insert(_FACTS), [_stored(row) for row in chunk])
            scopes = [
                {"record_id": row.record_id, "scope": scope}
                for row in chunk
                for scope in row.scopes
            ]
            session.execute(insert(_FACT_SCOPES), scopes)
        _link_predecessors(session, rows)
        bump_generation(session)
        session.commit()


def _link_predecessors(session: Session, rows: list[Any]) -> None:
    """Mark the predecessors named by the new facts as superseded (oldest successor first),
    as reindex derives it from the files. A predecessor that is superseded already (in the
    store, or by an earlier fact of this batch) would end with two current successors, a
    fork: the batch is refused instead (the caller's transaction rolls back)."""
    for successor in sorted(rows, key=lambda r: (r.created_at, r.record_id)):
        for uri in successor.supersedes:
            linked = session.execute(
                update(tables.FactRow)
                .where(tables.FactRow.uri == uri)
                .where(tables.FactRow.superseded_by.is_(None))
                .values(superseded_by=successor.record_id, superseded_at=successor.created_at)
            )
            if getattr(linked, "rowcount", 0) == 0:
                holder = session.scalar(
                    select(tables.FactRow.superseded_by).where(tables.FactRow.uri == uri)
                )
                if holder is not None:
                    raise MemoryFailure(
                        "MEMORY_IMPORT_INVALID",
                        f"{successor.uri} supersedes {uri}, which {holder} supersedes already: "
                        "a fact has one successor. Drop one of the two supersedes links, or "
                        "import the later version as superseding the earlier. Nothing was "
                        "written.",
                    )


def _chunks(items: list[Any], size: int) -> Iterator[list[Any]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _current_hashes(engine: MemoryEngine) -> dict[tuple[str, str], set[str]]:
    with Session(engine.db) as session:
        rows = session.execute(
            select(tables.FactRow.collection, tables.FactRow.content_hash, tables.FactRow.scopes)
            .where(tables.FactRow.superseded_by.is_(None))
            .where(tables.FactRow.retired_at.is_(None))
        ).all()
    seen: dict[tuple[str, str], set[str]] = {}
    for collection, digest, scopes in rows:
        seen.setdefault((collection, digest), set()).update(scopes)
    return seen


_COLUMNS = [column.name for column in tables.FactRow.__table__.columns]
_JSON_COLUMNS = {
    column.name for column in tables.FactRow.__table__.columns if isinstance(column.type, JSON)
}
_TIME_COLUMNS = {
    column.name
    for column in tables.FactRow.__table__.columns
    if isinstance(column.type, tables.UtcDateTime)
}
_FACTS = table("facts", *(column(name) for name in _COLUMNS))
_FACT_SCOPES = table("fact_scopes", column("record_id"), column("scope"))


def _stored(row: Any) -> dict[str, Any]:
    """A row's values as the facts table stores them (what the column types would bind)."""
    values: dict[str, Any] = {}
    for name in _COLUMNS:
        value = getattr(row, name, None)
        if value is not None and name in _JSON_COLUMNS:
            value = json.dumps(value)
        elif value is not None and name in _TIME_COLUMNS:
            value = iso_utc(value)
        values[name] = value
    return values


# -- recovery ------------------------------------------------------------------------------


def _staging_folders(engine: MemoryEngine, *, skip_live: bool = False) -> list[Path]:
    return sorted(
        folder
        for row in engine.collections_by_name().values()
        for folder in Path(row.root).glob(f"{STAGING_PREFIX}*")
        if folder.is_dir() and not (skip_live and _writer_alive(folder))
    )


def _writer_alive(staging: Path) -> bool:
    """The process named in a staging folder (`.import-<pid>-<hex>`) still runs: probably an
    import in progress (or a pid reused since). Where that cannot be told, it is alive."""
    pid = staging.name.removeprefix(STAGING_PREFIX).partition("-")[0]
    if os.name != "posix" or not pid.isdigit():
        return os.name != "posix"
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it runs, as another user
        return True
    return True


def _temp_folders(engine: MemoryEngine) -> list[Path]:
    return [engine.home, *(Path(row.root) for row in engine.collections_by_name().values())]


def interrupted_writes_left(engine: MemoryEngine, *, skip_live: bool = False) -> bool:
    """Whether a crashed write left anything behind (a staging folder or a `.tmp-*` file):
    a cheap look, without the write lock, to decide whether recovery is needed."""
    if _staging_folders(engine, skip_live=skip_live):
        return True
    return any(
        any(folder.glob(".tmp-*")) or any(folder.glob("facts/*/.tmp-*"))
        for folder in _temp_folders(engine)
    )


def recover_interrupted_writes(engine: MemoryEngine, *, skip_live: bool = True) -> dict[str, int]:
    """Settle what a killed write left behind, under the write lock (re-entrant: callers that
    hold it already, such as reindex, may call it). Every staging folder of an interrupted bulk
    write is settled file by file, a staged file whose row is committed moved into place
    (`rolledForward`), any other deleted (`rolledBack`); then the temp files of interrupted
    atomic writes in the collection roots and the home are removed (`tempFiles`).

    Returns those three counts; all zero when there was nothing to do, which costs a few
    directory listings and no lock. By default (`skip_live`) the staging folder of a process
    that still runs is left alone: it is an import in progress, which holds the lock, and
    waiting for it would stall whoever opens the store meanwhile (a recall); if the lock stays
    busy anyway, recovery is left to the next write. A bulk write passes `skip_live=False`: it
    holds the lock, so no other import can be running and every staging folder is a
    leftover (its pid reused)."""
    done = {"rolledBack": 0, "rolledForward": 0, "tempFiles": 0}
    if not engine.files_canonical:  # server mode: no staged files, no folders to look in
        return done
    if not interrupted_writes_left(engine, skip_live=skip_live):
        return done
    try:
        with engine.write_lock():
            for staging in _staging_folders(engine):
                forward, back = _settle(engine, staging)
                done["rolledForward"] += forward
                done["rolledBack"] += back
            for folder in _temp_folders(engine):
                done["tempFiles"] += remove_temp_files(folder)
    except MemoryFailure as failure:
        if not skip_live or failure.code != "MEMORY_WRITE_LEASE_BUSY":
            raise
    return done


def _settle(engine: MemoryEngine, staging: Path) -> tuple[int, int]:
    """Roll one staging folder forward or back, file by file (see the module docstring)."""
    root = staging.parent
    collections = {Path(row.root): name for name, row in engine.collections_by_name().items()}
    staged = sorted(staging.glob("facts/*/mem-*.md"))
    rows: dict[str, tables.FactRow] = {}
    with Session(engine.db, expire_on_commit=False) as session:
        for chunk in _chunks([path.stem for path in staged], 500):
            found = session.scalars(
                select(tables.FactRow).where(tables.FactRow.record_id.in_(chunk))
            )
            rows.update({row.record_id: row for row in found})
    forward = back = 0
    folders: set[Path] = set()
    for path in staged:
        rel_path = path.relative_to(staging).as_posix()
        row = rows.get(path.stem)
        final = root / rel_path
        if (
            row is not None
            and row.collection == collections.get(root)
            and Path(row.rel_path).as_posix() == rel_path
            and not final.exists()
        ):
            final.parent.mkdir(parents=True, exist_ok=True)
            path.replace(final)
            folders.add(final.parent)
            forward += 1
        else:
            back += 1
    for folder in folders:
        fsync_folder(folder)
    shutil.rmtree(staging, ignore_errors=True)
    return forward, back


# -- the test-only crash hook --------------------------------------------------------------


def _crash_points() -> tuple[str, int] | None:
    spec = os.environ.get(CRASH_HOOK_ENV)
    if not spec:
        return None
    stage, _, count = spec.partition(":")
    try:
        return stage, int(count or 0)
    except ValueError:
        return None


def _crash_at(points: tuple[str, int] | None, stage: str, count: int = 0) -> None:
    if points is not None and points == (stage, count):
        kill = getattr(signal, "SIGKILL", None)
        if kill is not None:
            os.kill(os.getpid(), kill)
        os._exit(137)
