"""A damaged SQLite index (the embedded store's): found by SQLite's integrity check (reindex)
or by a read that fails at open, set aside as `<name>.corrupt-<time>`, and replaced by an
empty index into which what only the index holds is salvaged; the facts come back from the
fact files, which are canonical."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.exc import DBAPIError

from engine.storage.embedded.salvage import salvage_index_only_rows
from engine.storage.schema.database import is_unreadable_sqlite

if TYPE_CHECKING:
    from engine.storage.mode import StoreEngine


def check_index(engine: StoreEngine) -> str | None:
    """SQLite's integrity check (reindex runs it; it reads the whole file). A damaged
    index is replaced as at open; the note says so. None when it is sound."""
    if engine.sqlite_path is None:
        return None
    try:
        with engine.db.connect() as connection:
            found = [row[0] for row in connection.exec_driver_sql("PRAGMA quick_check")]
        if found == ["ok"]:
            return None
        reason = "; ".join(str(line) for line in found[:3])
    except DBAPIError as exc:
        if not is_unreadable_sqlite(exc):
            raise
        reason = str(exc.orig)
    note = replace_unreadable_index(engine, reason)
    engine.note(note)
    return note


def replace_unreadable_index(engine: StoreEngine, reason: str) -> str:
    """Set the damaged SQLite file aside as `<name>.corrupt-<time>` (with its -wal and
    -shm), start an empty index, and copy into it what only the index holds (receipts,
    labels, proposals, the decision log) as far as the old file can still be read. The
    caller holds the write lock; the facts come back from the files (reindex)."""
    path = engine.sqlite_path
    assert path is not None
    engine.db.dispose()
    stamp = engine.now().strftime("%Y%m%dT%H%M%SZ")
    aside = path.with_name(f"{path.name}.corrupt-{stamp}")
    count = 1
    while aside.exists():
        count += 1
        aside = path.with_name(f"{path.name}.corrupt-{stamp}-{count}")
    for suffix in ("", "-wal", "-shm", "-journal"):
        source = Path(f"{path}{suffix}")
        if source.exists():
            source.replace(Path(f"{aside}{suffix}"))
    engine.forget_derived()
    engine.prepare_schema()
    salvaged = salvage_index_only_rows(engine.db, aside)
    return (
        f"the index {path.name} was unreadable (corrupt: {reason}); moved it aside to "
        f"{aside.name} and rebuilt the index from the fact files. {salvaged}"
    )
