"""reindex: make the index agree with the fact files, which are canonical (the embedded mode;
in the server mode it rebuilds derived data only: engine/storage/server/parts.py).

It diffs rather than wipes, so its report says what was actually out of line ("changed: 0"
after a healthy run), and receipts, proposals and the decision log are left alone.

It never makes two heads of one chain or key (docs/decisions.md, "Crash and corruption").
When several files supersede one fact, or hold the same revision of one key, one is kept and
the others (and whatever supersedes them) stay out of the index, their files untouched; the
report's `forks` names them every time until a person removes the extra files. The one kept
is, in order: the successor the index's compare-and-swap committed (the predecessor's row
names it), one the index holds, one that is not an unfinished write (the journal, see
engine/storage/store.py), then the oldest (createdAt, recordId). A record id found in two
files is indexed from one (the file in the folder of its createdAt day, then the one the
index knows, then path order), and `duplicates` names both. Supersession follows a
successor's `relations.supersedes` to its predecessor by uri, or by record id when the
predecessor's file has moved to another folder.

`settle_unfinished_writes` is the small version that runs before a write: it indexes the
files of writes that did not finish, or leaves one out when indexing it would fork."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import fact_uri, is_record_id, parse_iso
from engine.storage.disk_full import disk_full_refusal
from engine.storage.embedded.damaged_index import check_index
from engine.storage.embedded.factfiles import (
    FactFile,
    FactFileError,
    iter_fact_paths,
    read_fact_file,
    remove_temp_files,
)
from engine.storage.indexing import insert_fact_row, keep_vector
from engine.storage.reads.records import allocate_docid, get_fact, row_from_file, scope_rows
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation

if TYPE_CHECKING:
    from engine.storage.mode import StoreEngine

log = logging.getLogger("engine.storage")

# Fields that define a row; a difference in any of them means the row is rewritten.
_COMPARED = (
    "docid",
    "uri",
    "collection",
    "rel_path",
    "text",
    "content_hash",
    "scopes",
    "caller",
    "session",
    "created_at",
    "source",
    "supersedes",
    "superseded_by",
    "retired_at",
    "retired_by",
    "retired_reason",
    "expires_at",
    "workbench",
    "kv_namespace",
    "kv_key",
    "kv_revision",
    "kv_topic",
    "kv_tags",
    "kv_occurred_at_ms",
)

# Why a fork's kept file won, by the first rule that told the candidates apart.
_WHY = (
    "its supersede was committed in the index (the predecessor's row names it)",
    "it is in the index and the others are not",
    "the others are unfinished writes (journal entries of writers that stopped)",
    "its chain goes on and the others' do not",
    "it is the oldest (createdAt): nothing else tells the writes apart",
    "record id order (same createdAt): nothing else tells the writes apart",
)


@dataclass
class _Found:
    collection: str
    path: Path
    rel_path: str
    fact: FactFile


@dataclass
class _Plan:
    rows: dict[str, tables.FactRow]
    forks: list[dict[str, Any]] = field(default_factory=list)
    duplicates: list[dict[str, Any]] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)  # record id -> why


def _record_id_of(uri: str) -> str | None:
    name = uri.rsplit("/", 1)[-1].removesuffix(".md")
    return name if is_record_id(name) else None


def _scan(
    engine: StoreEngine,
    problems: list[str],
    progress: Callable[[int, int], None] | None,
) -> tuple[list[_Found], int]:
    paths = [
        (name, Path(row.root), path)
        for name, row in sorted(engine.collections_by_name().items())
        for path in iter_fact_paths(Path(row.root))
    ]
    found: list[_Found] = []
    for done, (collection, root, path) in enumerate(paths, start=1):
        try:
            fact = read_fact_file(path)
            parse_iso(fact.created_at)
        except (FactFileError, OSError, ValueError) as exc:
            problems.append(str(exc))
        else:
            found.append(_Found(collection, path, str(path.relative_to(root)), fact))
        if progress:
            progress(done, len(paths))
    return found, len(paths)


def _one_file_per_record(
    found: list[_Found], indexed: dict[str, tables.FactRow], plan: _Plan
) -> list[_Found]:
    by_record: dict[str, list[_Found]] = {}
    for item in found:
        by_record.setdefault(item.fact.record_id, []).append(item)
    kept: list[_Found] = []
    for record_id, items in by_record.items():
        if len(items) > 1:
            known = indexed.get(record_id)

            def rank(item: _Found, known: tables.FactRow | None = known) -> tuple[Any, ...]:
                day = item.rel_path.split("/")[1]
                at_home = known is not None and (known.collection, known.rel_path) == (
                    item.collection,
                    item.rel_path,
                )
                return (
                    day != item.fact.created_at[:10],
                    not at_home,
                    item.collection,
                    item.rel_path,
                )

            items = sorted(items, key=rank)
            plan.duplicates.append(
                {
                    "recordId": record_id,
                    "kept": str(items[0].path),
                    "ignored": [str(item.path) for item in items[1:]],
                }
            )
        kept.append(items[0])
    return sorted(kept, key=lambda item: (item.collection, item.rel_path))


def _rows(found: list[_Found]) -> dict[str, tables.FactRow]:
    rows: dict[str, tables.FactRow] = {}
    taken: set[str] = set()
    pending: list[tables.FactRow] = []
    for item in found:
        day = item.rel_path.split("/")[1]
        docid = item.fact.workbench.get("docid")
        row = row_from_file(
            item.fact,
            collection=item.collection,
            uri=fact_uri(item.collection, day, item.fact.record_id),
            rel_path=item.rel_path,
            docid=docid if isinstance(docid, str) else "",
        )
        if row.docid and row.docid not in taken:
            taken.add(row.docid)
        else:
            pending.append(row)
        rows[row.record_id] = row
    for row in pending:  # files without a docid of their own (e.g. GNO's), or a clash
        row.docid = allocate_docid(None, record_id=row.record_id, taken=taken)
        taken.add(row.docid)
    return rows


def _plan(
    found: list[_Found], indexed: dict[str, tables.FactRow], unfinished: dict[str, Any]
) -> _Plan:
    plan = _Plan(rows={})
    rows = _rows(_one_file_per_record(found, indexed, plan))
    by_uri = {row.uri: row.record_id for row in rows.values()}

    def resolve(uri: str) -> str | None:
        record_id = by_uri.get(uri) or _record_id_of(uri)
        return record_id if record_id in rows else None

    oldest_first = sorted(rows.values(), key=lambda r: (r.created_at, r.record_id))
    successors: dict[str, list[str]] = {}
    for row in oldest_first:
        for uri in row.supersedes:
            predecessor = resolve(uri)
            if predecessor is not None and predecessor != row.record_id:
                successors.setdefault(predecessor, []).append(row.record_id)

    def rank(record_id: str, predecessor: str | None) -> tuple[Any, ...]:
        row = rows[record_id]
        named = predecessor is not None and (
            getattr(indexed.get(predecessor), "superseded_by", None) == record_id
        )
        return (
            not named,
            record_id not in indexed,
            record_id in unfinished,
            not successors.get(record_id),
            row.created_at,
            record_id,
        )

    def decide(candidates: list[str], predecessor: str | None) -> tuple[str, list[str], str]:
        ordered = sorted(candidates, key=lambda rid: rank(rid, predecessor))
        first, second = rank(ordered[0], predecessor), rank(ordered[1], predecessor)
        why = next(
            (text for text, a, b in zip(_WHY, first, second, strict=False) if a != b), _WHY[-1]
        )
        return ordered[0], ordered[1:], why

    def leave_out(record_ids: list[str], why: str) -> list[str]:
        gone: list[str] = []
        queue = list(record_ids)
        while queue:
            record_id = queue.pop()
            if record_id in plan.left_out:
                continue
            plan.left_out[record_id] = why
            gone.append(record_id)
            queue.extend(successors.get(record_id, []))
        return gone

    # Two files superseding one fact: one chain.
    for row in oldest_first:
        choices = [rid for rid in successors.get(row.record_id, []) if rid not in plan.left_out]
        if row.record_id in plan.left_out or len(choices) < 2:
            continue
        kept, others, why = decide(choices, row.record_id)
        gone = leave_out(others, f"forks the chain of {row.uri}; {rows[kept].uri} is kept")
        plan.forks.append(
            {
                "predecessor": row.uri,
                "kept": rows[kept].uri,
                "notKept": [rows[rid].uri for rid in gone],
                "reason": why,
            }
        )
    # Two files holding one revision of one key: one head.
    revisions: dict[tuple[str, str, int], list[str]] = {}
    for row in oldest_first:
        if row.kv_key is not None and row.record_id not in plan.left_out:
            slot = (row.kv_namespace or "default", row.kv_key, row.kv_revision or 1)
            revisions.setdefault(slot, []).append(row.record_id)
    for (namespace, key, revision), choices in revisions.items():
        choices = [rid for rid in choices if rid not in plan.left_out]
        if len(choices) < 2:
            continue
        kept, others, why = decide(choices, None)
        gone = leave_out(others, f"holds revision {revision} of key {namespace}/{key} too")
        plan.forks.append(
            {
                "key": f"{namespace}/{key}",
                "revision": revision,
                "kept": rows[kept].uri,
                "notKept": [rows[rid].uri for rid in gone],
                "reason": why,
            }
        )
    plan.rows = {rid: row for rid, row in rows.items() if rid not in plan.left_out}
    # Supersession, from the successors' relations, oldest successor first.
    for row in sorted(plan.rows.values(), key=lambda r: (r.created_at, r.record_id)):
        for uri in row.supersedes:
            earlier_id = resolve(uri)
            earlier = plan.rows.get(earlier_id) if earlier_id else None
            if earlier is not None and earlier.superseded_by is None:
                earlier.superseded_by = row.record_id
                earlier.superseded_at = row.created_at
    return plan


def _same(left: tables.FactRow, right: tables.FactRow) -> bool:
    return all(getattr(left, name) == getattr(right, name) for name in _COMPARED)


def reindex_from_files(
    engine: StoreEngine, progress: Callable[[int, int], None] | None
) -> dict[str, Any]:
    """The embedded store's reindex: the index made to agree with the fact files."""
    from engine.storage.bulk import recover_interrupted_writes

    with engine.write_lock(settle=False):
        damaged = check_index(engine)
        recover_interrupted_writes(engine)  # an interrupted bulk write's staged files
        report = reindex_locked(engine, progress)
    if damaged:
        report["notes"].insert(0, damaged)
    opened = engine.take_open_report()
    if opened:
        for name in ("added", "changed", "removed"):
            report[name] += opened.get(name, 0)
        report["notes"][:0] = opened.get("notes", [])
    return report


def reindex_locked(
    engine: StoreEngine, progress: Callable[[int, int], None] | None
) -> dict[str, Any]:
    """reindex under a write lock the caller holds."""
    problems: list[str] = []
    engine.store.collections_synced(engine)
    unfinished = engine.unfinished_writes()
    found, files = _scan(engine, problems, progress)
    with Session(engine.db, expire_on_commit=False) as session:
        indexed = {row.record_id: row for row in session.scalars(select(tables.FactRow))}
        plan = _plan(found, indexed, unfinished)
        wanted = plan.rows
        removed = [rid for rid in indexed if rid not in wanted]
        added = [rid for rid in wanted if rid not in indexed]
        changed = [rid for rid in wanted if rid in indexed and not _same(wanted[rid], indexed[rid])]
        stale = removed + changed
        if stale:
            session.execute(
                delete(tables.FactScopeRow).where(tables.FactScopeRow.record_id.in_(stale))
            )
            session.execute(delete(tables.FactRow).where(tables.FactRow.record_id.in_(stale)))
            session.flush()
        for record_id in added + changed:
            session.add(wanted[record_id])
        session.flush()
        for record_id in added + changed:
            session.add_all(scope_rows(wanted[record_id]))
        if stale or added:
            bump_generation(session)
        session.commit()
    # The index now says what the files say: the journal's entries are settled.
    for record_id, entry in unfinished.items():
        if record_id in plan.left_out:
            if not entry.get("leftOut"):
                engine.leave_out(record_id, plan.left_out[record_id])
        else:
            engine.end_write(record_id)
    for fork in plan.forks:
        log.warning(
            "gno-tui: reindex: fork: kept %s, not %s (%s)",
            fork["kept"],
            ", ".join(fork["notKept"]),
            fork["reason"],
        )
    for duplicate in plan.duplicates:
        log.warning(
            "gno-tui: reindex: %s is in more than one file: indexed %s, ignored %s",
            duplicate["recordId"],
            duplicate["kept"],
            ", ".join(duplicate["ignored"]),
        )
    return {
        "files": files,
        "indexed": len(wanted),
        "added": len(added),
        "changed": len(changed),
        "removed": len(removed),
        "problems": problems,
        "forks": plan.forks,
        "duplicates": plan.duplicates,
        "notes": [],
    }


# -- before a write: settle what unfinished writes left ---------------------------------------


def settle_unfinished_writes(engine: StoreEngine) -> list[str]:
    """Under the write lock: for each journal entry, index its file (with the supersede
    compare-and-swap) or, when that would fork a chain or a key, leave it out and keep the
    entry, marked. An entry whose row is committed or whose file never appeared just goes.
    Returns a note per file indexed or left out. If the index cannot take a row, the write
    that asked is refused (MEMORY_SYNC_FAILED): it must not start from an index that lags."""
    notes: list[str] = []
    remove_temp_files(engine.journal_folder)  # a journal entry's own interrupted write
    collections = engine.collections_by_name()
    for record_id, entry in engine.unfinished_writes().items():
        collection, rel_path = entry.get("collection"), entry.get("relPath")
        root = collections.get(collection) if isinstance(collection, str) else None
        if root is None or not isinstance(rel_path, str) or rel_path.count("/") != 2:
            engine.end_write(record_id)
            notes.append(
                f"dropped an unreadable journal entry for {record_id}; if its fact file "
                "exists, `gno-tui reindex` indexes it."
            )
            continue
        path = Path(root.root) / rel_path
        if entry.get("leftOut"):
            if not path.is_file():
                engine.end_write(record_id)
            continue
        with Session(engine.db, expire_on_commit=False) as session:
            if session.get(tables.FactRow, record_id) is not None or not path.is_file():
                engine.end_write(record_id)  # its row was committed, or its file never came
                continue
            try:
                fact = read_fact_file(path)
                created_at = parse_iso(fact.created_at)
            except (FactFileError, OSError, ValueError) as exc:
                engine.end_write(record_id)
                notes.append(
                    f"an unfinished write left {path}, which cannot be read ({exc}); it is "
                    "not indexed (`gno-tui reindex` lists it under problems)."
                )
                continue
            outcome = _index_orphan(engine, session, fact, collection, rel_path, created_at)
        if outcome is None:
            engine.end_write(record_id)
            notes.append(
                f"indexed {fact_uri(collection, rel_path.split('/')[1], record_id)}, the file "
                f"of an unfinished write ({path}), before the next write."
            )
        else:
            engine.leave_out(record_id, outcome)
            notes.append(
                f"left out of the index the file of an unfinished write, {path}: {outcome}. "
                "Its file stays; `gno-tui reindex --json` lists it under forks."
            )
    return notes


def _index_orphan(
    engine: StoreEngine,
    session: Session,
    fact: FactFile,
    collection: str,
    rel_path: str,
    created_at: Any,
) -> str | None:
    """Index one unfinished write's file; None when done, else why it was left out."""
    day = rel_path.split("/")[1]
    docid = fact.workbench.get("docid")
    if not isinstance(docid, str) or get_fact(session, ref=docid) is not None:
        docid = allocate_docid(session, record_id=fact.record_id)
    row = row_from_file(
        fact,
        collection=collection,
        uri=fact_uri(collection, day, fact.record_id),
        rel_path=rel_path,
        docid=docid,
    )
    try:
        for uri in fact.supersedes:
            predecessor = get_fact(session, ref=uri)
            if predecessor is None and (moved := _record_id_of(uri)) is not None:
                predecessor = session.get(tables.FactRow, moved)
            if predecessor is None:
                continue
            swapped = session.execute(
                update(tables.FactRow)
                .where(tables.FactRow.record_id == predecessor.record_id)
                .where(tables.FactRow.superseded_by.is_(None))
                .values(superseded_by=row.record_id, superseded_at=created_at)
            )
            if getattr(swapped, "rowcount", 0) != 1:
                why = (
                    f"its predecessor {predecessor.uri} was superseded by "
                    f"{predecessor.superseded_by} meanwhile"
                )
                session.rollback()
                return why
        insert_fact_row(session, row, None, created_at)
        session.commit()
    except MemoryFailure as failure:
        session.rollback()
        if failure.code in ("MEMORY_KEY_EXISTS", "MEMORY_REVISION_CONFLICT"):
            return f"revision {row.kv_revision} of key {row.kv_namespace}/{row.kv_key} is taken"
        raise
    except Exception as exc:
        session.rollback()
        full = disk_full_refusal(
            exc,
            engine.home,
            f"{fact.record_id}, written by a write that did not finish, is indexed by the next "
            "write; nothing was written now. Free some space there, then try again",
        )
        if full is not None:
            raise full from exc
        raise MemoryFailure(
            "MEMORY_SYNC_FAILED",
            f"The index lags the fact files: {fact.record_id} was written by a write that did "
            f"not finish, and indexing it failed ({type(exc).__name__}: {exc}). Nothing was "
            "written now; run `gno-tui reindex`, then retry.",
        ) from exc
    keep_vector(engine, row)
    return None
