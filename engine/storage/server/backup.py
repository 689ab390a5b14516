"""The server mode's backup and its restore (engine/storage/backup.py says what a backup
folder is): the store's tables as JSON lines, one file per table.

Taken in one REPEATABLE READ, READ ONLY transaction: PostgreSQL gives it a snapshot of one
instant, every write committed before it and none after, and no writer waits for it (no lock
is taken). A write's fact, scopes, vector and supersede link commit together, so a snapshot
never holds half a write or a chain with two heads.

What is kept is what the database alone holds: collections, facts with their scopes and
vectors, receipts, recall labels, proposals, the decision log, tokens, the writes done once
per requestId, and the keyed API's cursor key. What is derived is rebuilt at restore: the
change log (the facts' triggers write it again as the rows go in) and the search tables
(`reindex`'s rebuild), and the generation moves on so every process reloads."""

from __future__ import annotations

import base64
import json
from collections import deque
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import (
    Column,
    Connection,
    Engine,
    LargeBinary,
    Table,
    func,
    insert,
    select,
    text,
    update,
)
from sqlmodel import SQLModel

from engine.contract import visibility
from engine.contract.errors import MemoryFailure
from engine.contract.normalize import iso_utc, parse_iso
from engine.storage.backup import Backup, BackupWriter, invalid
from engine.storage.schema import tables

# In insert order (fact_scopes refers to facts). The change log, the search tables and the
# store's counters are derived or the target database's own.
TABLES = (
    "collections",
    "facts",
    "fact_scopes",
    "embeddings",
    "receipts",
    "recall_labels",
    "proposals",
    "decisions",
    "api_tokens",
    "write_requests",
    "store_meta",
)
# Of store_meta, only the keyed API's cursor key (server_mode.cursor_secret) is the store's:
# a cursor cut before the backup verifies after the restore.
_META_KEPT = "keyed_secret_%"
# Tables whose rows make a database "not empty" for a restore (with more than one collection).
HOLDING = ("facts", "receipts", "proposals", "decisions", "api_tokens", "write_requests")
_BATCH = 1000


def _table(name: str) -> Table:
    table = SQLModel.metadata.tables[name]
    assert isinstance(table, Table)
    return table


def _codec(column: Column[Any]) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """(to JSON, from JSON) for a column's values: times as ISO 8601 UTC text (as stored),
    bytes as base64, the rest (text, numbers, booleans, JSON) as they are."""
    if isinstance(column.type, tables.UtcDateTime):
        return (lambda v: None if v is None else iso_utc(v)), (
            lambda v: None if v is None else parse_iso(v)
        )
    if isinstance(column.type, LargeBinary):
        return (lambda v: None if v is None else base64.b64encode(v).decode("ascii")), (
            lambda v: None if v is None else base64.b64decode(v, validate=True)
        )
    return (lambda v: v), (lambda v: v)


def _query(name: str) -> Any:
    table = _table(name)
    query = select(table).order_by(*table.primary_key.columns)
    if name == "store_meta":
        query = query.where(table.c.name.like(_META_KEPT))
    return query


def take_server_backup(db: Engine, target: Path, *, taken_at: str) -> dict[str, Any]:
    """Write the database's tables into a backup at `target` (checked by the caller)."""
    writer = BackupWriter(target, "server")
    counts: dict[str, Any] = {}
    try:
        with db.connect() as connection:
            connection = connection.execution_options(isolation_level="REPEATABLE READ")
            with connection.begin():
                connection.execute(text("SET TRANSACTION READ ONLY"))
                schema = str(connection.scalar(text("SELECT version_num FROM alembic_version")))
                for name in TABLES:
                    counts[name] = _dump(connection, name, writer.path(f"tables/{name}.jsonl"))
                # Live facts, whatever their expiry (engine/contract/visibility.py).
                current = connection.scalar(
                    text(f"SELECT count(*) FROM facts WHERE {visibility.live_sql()}")
                )
        summary = {key: counts[key] for key in ("facts", "receipts", "proposals", "decisions")}
        summary["collections"] = counts["collections"]
        summary["currentFacts"] = int(current or 0)
        summary["rows"] = counts
        written = writer.finish(taken_at=taken_at, schema=schema, counts=summary)
    except BaseException:
        writer.abandon()
        raise
    summary.pop("rows")
    return {
        "backup": str(target),
        "mode": "server",
        "takenAt": taken_at,
        "schema": schema,
        **summary,
        **written,
        "writersPausedMs": 0.0,  # a snapshot: no writer waited
    }


def _dump(connection: Connection, name: str, path: Path) -> int:
    table = _table(name)
    encoders = [(column.name, _codec(column)[0]) for column in table.columns]
    count = 0
    result = connection.execution_options(yield_per=_BATCH).execute(_query(name))
    with path.open("w", encoding="utf-8") as out:
        for row in result:
            values = row._mapping
            line = {column: encode(values[column]) for column, encode in encoders}
            out.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
            count += 1
    return count


# -- restoring ------------------------------------------------------------------------------


def database_holdings(db: Engine) -> dict[str, int]:
    """What a database already holds that a restore would mix with: rows of the store's own
    tables (collections beyond the default one). Empty for a new database."""
    from sqlalchemy import inspect

    present = set(inspect(db).get_table_names())
    with db.connect() as connection:
        return _holdings(connection, present)


def _holdings(connection: Connection, present: set[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for name in (*HOLDING, "collections"):
        if name not in present:
            continue
        count = int(connection.scalar(select(func.count()).select_from(_table(name))) or 0)
        if name == "collections":
            count = max(0, count - 1)  # the default collection every opened store makes
        if count:
            found[name] = count
    return found


def _rows(backup: Backup, name: str) -> Iterator[list[dict[str, Any]]]:
    """The backup's rows of one table, decoded, in batches."""
    table = _table(name)
    decoders = {column.name: _codec(column)[1] for column in table.columns}
    file = f"tables/{name}.jsonl"
    if file not in backup.files:
        raise invalid(backup.folder, f"it lacks {file}")
    batch: list[dict[str, Any]] = []
    with backup.path(file).open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                row = json.loads(line)
                if not isinstance(row, dict) or set(row) != set(decoders):
                    raise ValueError(f"its columns are not {sorted(decoders)}")
                batch.append({key: decoders[key](value) for key, value in row.items()})
            except (ValueError, TypeError) as exc:
                raise invalid(backup.folder, f"{file}:{number} is not a row ({exc})") from None
            if len(batch) >= _BATCH:
                yield batch
                batch = []
    if batch:
        yield batch


def load_server_backup(db: Engine, backup: Backup) -> dict[str, int]:
    """Insert the backup's rows into `db` (at this gno-tui's schema, holding nothing: the
    caller checked, under the write lock it holds), in one transaction; rows per table."""
    for name in TABLES:  # every file decodes before the first row goes in
        deque(_rows(backup, name), maxlen=0)  # decoded and checked, then dropped
    loaded: dict[str, int] = {}
    with db.begin() as connection:
        held = _holdings(connection, set(TABLES))  # again, under the lock: a writer since?
        if held:
            raise not_empty(shown_url(db), held)
        # The default collection the target made when it was opened: the backup's replaces it.
        connection.execute(_table("collections").delete())
        meta = _table("store_meta")
        connection.execute(meta.delete().where(meta.c.name.like(_META_KEPT)))
        for name in TABLES:
            loaded[name] = 0
            for batch in _rows(backup, name):
                connection.execute(_table(name).insert(), batch)
                loaded[name] += len(batch)
        for name in ("proposals", "decisions"):  # ids given: the sequences must go past them
            connection.execute(
                text(
                    f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), "
                    f"COALESCE(MAX(id), 1), MAX(id) IS NOT NULL) FROM {name}"
                )
            )
        # The generation moves on: every process on the database reloads what it keeps.
        moved = connection.execute(
            update(meta).where(meta.c.name == "generation").values(value=meta.c.value + 1)
        )
        if not moved.rowcount:
            connection.execute(insert(meta).values(name="generation", value=1))
    return loaded


def shown_url(db: Engine) -> str:
    """The database's URL as a person wrote it: no password, no driver name."""
    shown = db.url.render_as_string(hide_password=True)
    return shown.replace("postgresql+psycopg://", "postgresql://", 1)


def not_empty(where: str, held: dict[str, int]) -> MemoryFailure:
    what = ", ".join(f"{count} {name}" for name, count in sorted(held.items()))
    return MemoryFailure(
        "MEMORY_STORE_NOT_EMPTY",
        f"{where} already holds a store ({what}); a restore never mixes two stores or writes "
        "over one. Restore into a new, empty database (e.g. `createdb gno_restored`, then "
        "`gno-tui --db postgresql://.../gno_restored restore BACKUP`); nothing was restored.",
    )
