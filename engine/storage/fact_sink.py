"""Where a fact's file goes, by storage mode: the one seam between the write path and files.

In the embedded mode the fact files are canonical, so a new fact is journalled and its file
written before its row (engine/memory/remember.py), and a curation change rewrites the file's
`workbench:` before the row. In the server mode (a PostgreSQL database) the row is the fact:
nothing is written outside the database, a file exists only when a person asks for a mirror
(`export --format gno`, which renders it from the row with `fact_file_of` exactly as the
embedded mode would have written it), and a write the database refused stored nothing at all.

Each store (engine/storage/mode.py) has its sink; every write path calls the sink the same
way, so the write path stays one path."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import iso_utc
from engine.storage.disk_full import disk_full_refusal
from engine.storage.embedded.factfiles import FactFile, parse_fact_file, write_atomically
from engine.storage.schema import tables

if TYPE_CHECKING:
    from engine.storage.mode import StoreEngine

_REPAIRED_LATER = (
    " The fact file is written and its write stays journalled: the next write to this home "
    "indexes it first, or run `gno-tui reindex` to bring the index in line now."
)


def fact_file_of(row: tables.FactRow) -> FactFile:
    """The fact file a row stands for: the same fields the embedded mode writes, in the same
    order, so rendering it gives the file byte for byte."""
    assert row.created_at is not None
    return FactFile(
        record_id=row.record_id,
        scopes=list(row.scopes),
        caller=row.caller,
        session=row.session,
        created_at=iso_utc(row.created_at),
        content_hash=row.content_hash,
        text=row.text,
        source=row.source,
        supersedes=list(row.supersedes),
        workbench=dict(row.workbench),
    )


class FileSink:
    """The embedded mode: files canonical, journal first."""

    def write_new(
        self, engine: StoreEngine, fact: FactFile, *, collection: str, rel_path: str
    ) -> Path:
        path = Path(engine.collection_root(collection)) / rel_path
        try:
            # Journalled first: if this process dies between the file and its row, the next
            # write (or opening the home) finds the entry and settles it before anything else.
            engine.begin_write(fact.record_id, collection, rel_path)
            # In place and durable now, or staged with a group commit's other files.
            engine.write_fact_file(fact.record_id, path, fact.render())
        except OSError as exc:
            engine.end_write(fact.record_id)
            full = disk_full_refusal(
                exc, path.parent, "Nothing was stored; free some space there, then write again"
            )
            raise full or MemoryFailure(
                "MEMORY_SYNC_FAILED",
                f"Could not write the fact file {path}: {exc}. Check that the home folder is "
                "writable and has space; nothing was stored.",
            ) from exc
        return path

    def take_back(self, engine: StoreEngine, record_id: str, path: Path | None) -> None:
        """Another writer won the race for the index: the new file goes, and its entry."""
        if path is not None:
            engine.take_back_fact_file(path)
        engine.end_write(record_id)

    def index_failed(self, error: str, failure: MemoryFailure | None = None) -> dict[str, Any]:
        """The file is canonical and journalled: the write stands, indexed later."""
        return {"status": "failed", "error": error + _REPAIRED_LATER}

    def commit_failed(self, error: Exception) -> None:
        """A group's index commit failed: its files stand, indexed later (the group says so
        in each write's sync)."""

    def rewrite_workbench(
        self, engine: StoreEngine, row: tables.FactRow, updates: dict[str, Any | None]
    ) -> None:
        """Set (or, with None, drop) keys under the file's `workbench:` before the row."""
        path = Path(engine.collection_root(row.collection)) / row.rel_path
        fact = parse_fact_file(path.read_text(encoding="utf-8"), where=str(path))
        for key, value in updates.items():
            if value is None:
                fact.workbench.pop(key, None)
            else:
                fact.workbench[key] = value
        write_atomically(path, fact.render())


class DatabaseSink:
    """The server mode: the row is the fact; no file, no journal."""

    def write_new(
        self, engine: StoreEngine, fact: FactFile, *, collection: str, rel_path: str
    ) -> None:
        return None

    def take_back(self, engine: StoreEngine, record_id: str, path: Path | None) -> None:
        return None

    def index_failed(self, error: str, failure: MemoryFailure | None = None) -> dict[str, Any]:
        """Without a file nothing stands of a write the database did not take: an error.
        PostgreSQL's own failure (engine/storage/server/faults.py) is passed on as it is: it
        says whether anything may have been stored, which "nothing was stored" would not."""
        if failure is not None and failure.code == "MEMORY_QUERY_FAILED":
            raise failure
        raise MemoryFailure(
            "MEMORY_SYNC_FAILED",
            f"The database did not store the fact ({error}); nothing was stored. Check that "
            "the PostgreSQL server is reachable, then retry the same call.",
        )

    def commit_failed(self, error: Exception) -> None:
        """A group's commit failed: no file stands for its writes, none is acknowledged."""
        raise error

    def rewrite_workbench(
        self, engine: StoreEngine, row: tables.FactRow, updates: dict[str, Any | None]
    ) -> None:
        return None  # the caller changes the row's workbench in the same transaction
