"""collections.yaml, the embedded store's list of its collections (canonical, like the fact
files: an index rebuilt from nothing takes its collections from it).

Read strictly: a file that does not parse, or an entry without a valid name, root or policy,
is MEMORY_HOME_DAMAGED (exit 2) naming the file and the line, before anything is changed, so a
damaged file never makes the store look empty. Written with roots inside the home relative to
it (engine/storage/embedded/home.py), so the home can be moved or copied."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml
from sqlalchemy import update
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import POLICIES, POLICY_SOURCES, check_collection_name
from engine.storage.embedded.factfiles import write_atomically
from engine.storage.embedded.home import copied_from, relocated, resolved_root, stored_root
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation

if TYPE_CHECKING:
    from engine.storage.mode import StoreEngine

HOME_DAMAGED = "MEMORY_HOME_DAMAGED"
# collections.yaml is a short list gno-tui writes; a file this large is not one.
MAX_COLLECTIONS_FILE_BYTES = 1024 * 1024


@dataclass(frozen=True)
class CollectionEntry:
    """One collection as collections.yaml lists it; `root` as written (maybe relative)."""

    name: str
    root: str
    policy: str
    policy_source: str
    policy_revision: int
    line: int


def _damaged(path: Path, line: int | None, problem: str) -> MemoryFailure:
    where = f"{path}, line {line}" if line else str(path)
    return MemoryFailure(
        HOME_DAMAGED,
        f"{where}: {problem}. The store's collections are listed there, so nothing was "
        "changed. Fix that line (each entry needs name, root and policy), or, if the index "
        "still knows the collections, move the file away: gno-tui writes it again from the "
        "index at the next open.",
    )


def read_collections_file(path: Path) -> list[CollectionEntry]:
    """Every entry of collections.yaml, checked; MEMORY_HOME_DAMAGED names the line of the
    first thing wrong."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _damaged(path, None, f"cannot be read ({exc.strerror or exc})") from None
    if len(data) > MAX_COLLECTIONS_FILE_BYTES:
        raise _damaged(path, None, f"{len(data)} bytes, not a list of collections")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise _damaged(path, line, "not UTF-8 text") from None
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        loaded = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = mark.line + 1 if mark is not None else None
        problem = " ".join(part for part in (exc.context, exc.problem) if part)
        raise _damaged(path, where, f"not valid YAML ({problem or 'unreadable'})") from None
    except (yaml.YAMLError, RecursionError) as exc:
        raise _damaged(path, None, f"not valid YAML ({exc})") from None
    listing = loaded.get("collections") if isinstance(loaded, dict) else None
    if not isinstance(listing, list) or not listing:
        raise _damaged(path, 1, "it must be a mapping whose `collections` lists the collections")
    return _entries(path, listing, _item_lines(node, len(listing)))


def _item_lines(node: Any, count: int) -> list[int]:
    """The line each item of the `collections` list starts on."""
    lines = [1] * count
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if getattr(key, "value", None) == "collections" and isinstance(
                value, yaml.SequenceNode
            ):
                lines = [item.start_mark.line + 1 for item in value.value][:count]
    return lines + [1] * (count - len(lines))


def _entries(path: Path, listing: list[Any], lines: list[int]) -> list[CollectionEntry]:
    entries: list[CollectionEntry] = []
    seen: set[str] = set()
    for item, line in zip(listing, lines, strict=True):
        if not isinstance(item, dict):
            raise _damaged(path, line, "an entry is not a mapping of name, root and policy")
        name, root, policy = item.get("name"), item.get("root"), item.get("policy")
        source = item.get("policySource", "explicit")
        revision = item.get("policyRevision", 1)
        if not isinstance(name, str):
            raise _damaged(path, line, "an entry has no collection name")
        try:
            check_collection_name(name)
        except MemoryFailure:
            raise _damaged(path, line, f"collection name {name!r} is not a valid name") from None
        if name in seen:
            raise _damaged(path, line, f"collection {name!r} is listed twice")
        if not isinstance(root, str) or not root.strip() or "\x00" in root:
            raise _damaged(path, line, f"collection {name!r} has no root folder")
        if policy not in POLICIES:
            raise _damaged(path, line, f"collection {name!r} has policy {policy!r}")
        if source not in POLICY_SOURCES:
            raise _damaged(path, line, f"collection {name!r} has policySource {source!r}")
        if isinstance(revision, bool) or not isinstance(revision, int) or revision < 1:
            raise _damaged(path, line, f"collection {name!r} has policyRevision {revision!r}")
        seen.add(name)
        entries.append(CollectionEntry(name, root, policy, source, revision, line))
    return entries


def collections_yaml(home: Path, rows: Sequence[Mapping[str, Any]]) -> str:
    """collections.yaml's text for these collections (name, root absolute, policy...), roots
    inside the home written relative to it."""
    listing = [
        {
            "name": row["name"],
            "root": stored_root(home, Path(row["root"])),
            "policy": row["policy"],
            "policySource": row["policySource"],
            "policyRevision": row["policyRevision"],
        }
        for row in rows
    ]
    return yaml.safe_dump({"collections": listing}, sort_keys=False)


# -- the engine's side: the index's collections and the file --------------------------------


def write_collections_file(engine: StoreEngine) -> None:
    """collections.yaml from the index's collections. A file there that does not parse (a
    change that does not check first, such as undoing a policy) is kept beside it as
    `collections.yaml.damaged-<time>`, and said in `notes`, rather than lost."""
    path = engine.collections_file
    if path.is_file():
        try:
            read_collections_file(path)
        except MemoryFailure as exc:
            aside = path.with_name(f"{path.name}.damaged-{engine.now():%Y%m%dT%H%M%SZ}")
            path.replace(aside)
            engine.note(
                f"{exc.message.split('. ')[0]}; kept it as {aside.name} and wrote it again."
            )
    rows = [
        {
            "name": row.name,
            "root": row.root,
            "policy": row.policy,
            "policySource": row.policy_source,
            "policyRevision": row.policy_revision,
        }
        for row in sorted(engine.collections_by_name().values(), key=lambda r: r.name)
    ]
    write_atomically(path, collections_yaml(engine.home, rows))


def sync_collections_from_file(engine: StoreEngine) -> None:
    """The collections collections.yaml lists and the index lacks, added to the index (an
    index rebuilt from nothing gets them back, policies included). Roots relative to the home
    are the home's; roots into the folder a home was copied from, this home's own."""
    path = engine.collections_file
    if not path.is_file():
        return
    entries = read_collections_file(path)
    home = engine.home
    roots = {entry.name: resolved_root(home, entry.root) for entry in entries}
    original = copied_from(home, roots)
    with Session(engine.db, expire_on_commit=False) as session:
        added = False
        for entry in entries:
            if session.get(tables.CollectionRow, entry.name) is None:
                added = True
                session.add(
                    tables.CollectionRow(
                        name=entry.name,
                        root=relocated(home, original, roots[entry.name]),
                        policy=entry.policy,
                        policy_source=entry.policy_source,
                        policy_revision=entry.policy_revision,
                        created_at=engine.now(),
                    )
                )
        if added:  # readers keep collections per generation
            bump_generation(session)
        session.commit()


def relocate_roots(engine: StoreEngine) -> None:
    """A home copied or moved with its own index (whose roots are absolute): roots into the
    folder it came from are pointed at this home's same folders, in the index and in
    collections.yaml; in a read-only home for this process only. Roots elsewhere stay."""
    home = engine.home
    rows = engine.collections_by_name()
    original = copied_from(home, {name: row.root for name, row in rows.items()})
    if original is None:
        return
    moved = {name: relocated(home, original, row.root) for name, row in rows.items()}
    moved = {name: root for name, root in moved.items() if root != rows[name].root}
    if not moved:
        return
    said = f"the home was copied or moved from {original}: collection roots " + ", ".join(
        f"{name} -> {root}" for name, root in sorted(moved.items())
    )
    if engine.read_only is not None:
        engine.set_moved_roots(moved)
        engine.note(f"{said} (for this process: the home is read-only).")
        return
    with engine.write_lock(settle=False), Session(engine.db) as session:
        for name, root in moved.items():
            session.execute(
                update(tables.CollectionRow)
                .where(tables.CollectionRow.name == name)  # type: ignore[arg-type]
                .values(root=root)
            )
        bump_generation(session)
        session.commit()
        write_collections_file(engine)
    engine.note(f"{said}.")
