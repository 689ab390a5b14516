"""Salvage from a damaged SQLite index set aside (engine/storage/embedded/damaged_index.py):
the rows that exist only in the index (receipts, labels, proposals, the decision log) and its
generation; the facts come back from the fact files (reindex)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, insert, select
from sqlalchemy.orm import Session

from engine.storage.schema import tables

# Tables whose rows exist only in the index: salvaged, where readable, from an index set aside.
INDEX_ONLY: tuple[type[Any], ...] = (
    tables.ReceiptRow,
    tables.RecallLabelRow,
    tables.ProposalRow,
    tables.DecisionRow,
)


def salvage_index_only_rows(db: Engine, aside: Path) -> str:
    """Copy into `db` (the new, empty index) what only the index held, from the damaged
    file set aside at `aside`, as far as it can still be read; one sentence says what."""
    source = create_engine(f"sqlite:///{aside}")
    kept: list[str] = []
    lost: list[str] = []
    try:
        for table in INDEX_ONLY:
            name = table.__tablename__
            try:
                with source.connect() as connection:
                    rows = [dict(r._mapping) for r in connection.execute(select(table))]
                if rows:
                    with db.begin() as connection:
                        connection.execute(insert(table), rows)
                kept.append(f"{len(rows)} {name}")
            except Exception:  # noqa: BLE001 - best effort: the file is damaged
                lost.append(name)
        try:
            with Session(source) as old_index:
                old_row = old_index.get(tables.StoreMetaRow, "generation")
                old = old_row.value if old_row is not None else None
            if isinstance(old, int):
                with Session(db) as session:
                    row = session.get(tables.StoreMetaRow, "generation")
                    if row is not None and row.value <= old:
                        row.value = old + 1  # readers' caches never mistake the new index
                        session.commit()
        except Exception:  # noqa: BLE001 - best effort: the file is damaged
            pass
    finally:
        source.dispose()
    said = f"Salvaged from it: {', '.join(kept)}." if kept else ""
    if lost:
        said += (
            f" Could not read {', '.join(lost)} from it: they existed only in the index "
            "and are lost from the new one (the old file is kept)."
        )
    return said.strip()
