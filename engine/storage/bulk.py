"""Many adds at once (imports, benchmarks, the demo): the same files and rows as `remember`
with decision add, written under one hold of the write lock, rows committed in batches and
vectors embedded in batches. Exact duplicates (same text, an intersecting scope, same
collection, current) are skipped, as a single add would answer `existing`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session

from engine.contract.curation_fields import curation_defaults
from engine.contract.normalize import (
    check_identity,
    clean_text,
    content_hash,
    fact_uri,
    iso_utc,
    normalize_scopes,
)
from engine.retrieval.embeddings import embed_facts
from engine.retrieval.snapshot import IndexedFact, store_vectors
from engine.storage import tables
from engine.storage.database import bump_generation
from engine.storage.factfiles import FactFile, write_atomically
from engine.storage.records import allocate_docid, row_from_file, scope_rows

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

BATCH = 1000


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


@dataclass
class BulkReport:
    added: list[str] = field(default_factory=list)  # record ids, in input order
    skipped: list[int] = field(default_factory=list)  # input positions of exact duplicates


def add_many(
    engine: MemoryEngine,
    facts: Sequence[BulkFact],
    *,
    progress: Callable[[int, int], None] | None = None,
    durable: bool = True,
) -> BulkReport:
    """Validate everything first (one bad fact writes nothing), then write.

    `durable=False` skips the per-file fsync, for throwaway stores (benchmarks, the demo)."""
    checked = [
        (clean_text(f.text), normalize_scopes(f.scopes), *check_identity(f.caller, f.session), f)
        for f in facts
    ]
    roots = {name: engine.collection_root(name) for name in {f.collection for f in facts}}
    report = BulkReport()
    with engine.write_lock():
        seen = _current_hashes(engine)
        with Session(engine.db) as db:
            taken = set(db.scalars(select(tables.FactRow.docid)))
        pending: list[tables.FactRow] = []
        for position, (text, scopes, caller, session, fact) in enumerate(checked):
            digest = content_hash(text)
            if not fact.history:
                key_scopes = seen.setdefault((fact.collection, digest), set())
                if key_scopes & set(scopes):
                    report.skipped.append(position)
                    continue
                key_scopes.update(scopes)
            created_at = fact.created_at or iso_utc(engine.now())
            record_id = fact.record_id or engine.new_record_id()
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
                supersedes=list(fact.supersedes),
                workbench={"docid": docid, **curation_defaults(fact.created_by), **fact.workbench},
            )
            day = created_at[:10]
            rel_path = f"facts/{day}/{record_id}.md"
            write_atomically(roots[fact.collection] / rel_path, file.render(), durable=durable)
            row = row_from_file(
                file,
                collection=fact.collection,
                uri=fact_uri(fact.collection, day, record_id),
                rel_path=rel_path,
                docid=docid,
            )
            pending.append(row)
            report.added.append(record_id)
            if len(pending) >= BATCH:
                _flush(engine, pending)
                pending = []
            if progress:
                progress(position + 1, len(checked))
        if pending:
            _flush(engine, pending)
        if any(f.supersedes for f in facts):
            _link_predecessors(engine, report.added)
    return report


def _link_predecessors(engine: MemoryEngine, record_ids: list[str]) -> None:
    """Mark the predecessors named by the new facts as superseded (oldest successor first),
    as reindex derives it from the files."""
    with Session(engine.db, expire_on_commit=False) as session:
        successors = session.scalars(
            select(tables.FactRow)
            .where(tables.FactRow.record_id.in_(record_ids))
            .order_by(tables.FactRow.created_at)
        ).all()
        for successor in successors:
            for uri in successor.supersedes:
                session.execute(
                    update(tables.FactRow)
                    .where(tables.FactRow.uri == uri)
                    .where(tables.FactRow.superseded_by.is_(None))
                    .values(superseded_by=successor.record_id, superseded_at=successor.created_at)
                )
        bump_generation(session)
        session.commit()


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


def _flush(engine: MemoryEngine, rows: list[tables.FactRow]) -> None:
    # Core inserts of plain dicts: ORM unit-of-work bookkeeping would cost more than the rows.
    with Session(engine.db, expire_on_commit=False) as session:
        session.execute(
            insert(tables.FactRow),
            [{name: getattr(row, name) for name in _COLUMNS} for row in rows],
        )
        session.execute(
            insert(tables.FactScopeRow),
            [
                {"record_id": scope.record_id, "scope": scope.scope}
                for row in rows
                for scope in scope_rows(row)
            ],
        )
        bump_generation(session)
        session.commit()
    embedder = engine.embedder_status.embedder
    if embedder is not None:
        facts = [IndexedFact.from_row(row) for row in rows]
        store_vectors(
            engine.db, embedder.model_id, facts, embed_facts(embedder, [row.text for row in rows])
        )
