"""The baseline revision's steps (versions/r0001_baseline.py), each safe on an index that
already holds part of the schema: a new database gets all of it, and an index made by a
gno-tui from before Alembic (no alembic_version table) gets what it lacks, the way the
additive upgrade of those versions did it. Frozen with the baseline: they work on the
baseline's own table definitions, not on engine/storage/schema/tables.py, which moves on."""

from __future__ import annotations

from sqlalchemy import Connection, MetaData, delete, inspect, select, text, update

# -- the change log ---------------------------------------------------------------------------
# Triggers on `facts` append the record id of every inserted, updated or deleted row to
# `fact_changes`, inside the writing transaction: a reader applies exactly what changed since
# the last seq it saw (engine/retrieval/snapshot.py), and no write path can forget to log.

CHANGE_TRIGGERS = ("fact_changes_on_insert", "fact_changes_on_update", "fact_changes_on_delete")
_SQLITE_TRIGGER = """CREATE TRIGGER IF NOT EXISTS {name} AFTER {event} ON facts
BEGIN INSERT INTO fact_changes (record_id) VALUES ({row}.record_id); END"""
_POSTGRES_FUNCTION = """CREATE OR REPLACE FUNCTION log_fact_change() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO fact_changes (record_id) VALUES (OLD.record_id);
  ELSE
    INSERT INTO fact_changes (record_id) VALUES (NEW.record_id);
  END IF;
  RETURN NULL;
END $$ LANGUAGE plpgsql"""
_POSTGRES_TRIGGER = """CREATE OR REPLACE TRIGGER {name} AFTER {event} ON facts
FOR EACH ROW EXECUTE FUNCTION log_fact_change()"""
_EVENTS = (("INSERT", "NEW"), ("UPDATE", "NEW"), ("DELETE", "OLD"))


def create_change_triggers(connection: Connection) -> None:
    if connection.dialect.name == "sqlite":
        for name, (event_name, row) in zip(CHANGE_TRIGGERS, _EVENTS, strict=True):
            connection.execute(text(_SQLITE_TRIGGER.format(name=name, event=event_name, row=row)))
    elif connection.dialect.name == "postgresql":
        connection.execute(text(_POSTGRES_FUNCTION))
        for name, (event_name, _row) in zip(CHANGE_TRIGGERS, _EVENTS, strict=True):
            connection.execute(text(_POSTGRES_TRIGGER.format(name=name, event=event_name)))


# -- tables, columns and indexes --------------------------------------------------------------


def create_or_complete_tables(connection: Connection, metadata: MetaData) -> None:
    """Create the tables that are missing; to those that exist, add the nullable columns added
    since (the keyed API's) and every index (reindex fills the new columns from the files)."""
    inspector = inspect(connection)
    present = set(inspector.get_table_names())
    for table in metadata.sorted_tables:
        if table.name not in present:
            table.create(connection)
            continue
        have = {column["name"] for column in inspector.get_columns(table.name)}
        for column in table.columns:
            if column.name not in have:
                kind = column.type.compile(dialect=connection.dialect)
                connection.execute(
                    text(f'ALTER TABLE "{table.name}" ADD COLUMN "{column.name}" {kind}')
                )
        indexes = {index["name"] for index in inspector.get_indexes(table.name)}
        for index in table.indexes:
            if index.name not in indexes:
                index.create(connection)


# -- the keyed API's uniqueness ---------------------------------------------------------------
# One row per (namespace, key, revision), enforced by the database so that writers on
# different homes sharing one index (each under its own home's lock) cannot both create a key
# or a revision (docs/decisions.md, "Crash and corruption"). Indexes from before it had a
# plain index of that name.

KEYED_INDEX = "ix_facts_kv_key"


def make_keyed_index_unique(connection: Connection, metadata: MetaData) -> list[str]:
    """Where two rows hold one key's revision (the race the unique index prevents), keep the
    one whose chain went on, else the earlier write, and take the others out of the index
    (their files stay; reindex lists them as forks). Then replace the plain index with the
    unique one. Returns a note per repaired key."""
    indexes = inspect(connection).get_indexes("facts")
    if any(index["name"] == KEYED_INDEX and index["unique"] for index in indexes):
        return []
    facts = metadata.tables["facts"]
    clashes = connection.execute(
        select(facts.c.kv_namespace, facts.c.kv_key, facts.c.kv_revision)
        .where(facts.c.kv_key.is_not(None))
        .group_by(facts.c.kv_namespace, facts.c.kv_key, facts.c.kv_revision)
        .having(text("count(*) > 1"))
    ).all()
    notes: list[str] = []
    dropped: list[str] = []
    for namespace, key, revision in clashes:
        rows = connection.execute(
            select(facts.c.record_id, facts.c.uri, facts.c.superseded_by, facts.c.created_at)
            .where(facts.c.kv_namespace == namespace)
            .where(facts.c.kv_key == key)
            .where(facts.c.kv_revision == revision)
        ).all()
        ranked = sorted(rows, key=lambda r: (r.superseded_by is None, r.created_at, r.record_id))
        kept, others = ranked[0], ranked[1:]
        dropped.extend(row.record_id for row in others)
        notes.append(
            f"key {namespace}/{key} had {len(rows)} rows at revision {revision} (two live "
            "heads, from writers on two homes racing before the index enforced one key): "
            f"kept {kept.uri} (the earlier write), took "
            f"{', '.join(row.uri for row in others)} out of the index (the files stay; "
            "`gno-tui reindex --json` lists them under forks)."
        )
    if dropped:
        for name in ("fact_scopes", "embeddings", "facts"):
            table = metadata.tables[name]
            connection.execute(delete(table).where(table.c.record_id.in_(dropped)))
        meta = metadata.tables["store_meta"]
        connection.execute(
            update(meta).where(meta.c.name == "generation").values(value=meta.c.value + 1)
        )
    connection.execute(text(f"DROP INDEX IF EXISTS {KEYED_INDEX}"))
    next(ix for ix in facts.indexes if ix.name == KEYED_INDEX).create(connection)
    return notes
