"""GNO-compatible fact files: YAML front matter, then the text. The files are canonical."""

from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from engine.contract.normalize import (
    collapse_text,
    content_hash,
    is_record_id,
    is_sha256,
    normalize_scopes,
)

# libyaml's C emitter and parser when present: the pure-Python ones cost ~4 ms a fact file.
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_FRONT_MATTER = re.compile(r"^---\r?\n(.*?)(?:\r?\n)?---(?:\r?\n|$)", re.DOTALL)


class FactFileError(ValueError):
    """A file under facts/ that is not a valid fact record; the message names what is wrong."""


@dataclass
class FactFile:
    record_id: str
    scopes: list[str]
    caller: str
    session: str
    created_at: str
    content_hash: str
    text: str
    source: str | None = None
    supersedes: list[str] = field(default_factory=list)
    workbench: dict[str, Any] = field(default_factory=dict)

    def render(self) -> str:
        memory: dict[str, Any] = {
            "recordId": self.record_id,
            "scopes": list(self.scopes),
            "caller": self.caller,
            "session": self.session,
            "createdAt": self.created_at,
            "contentHash": self.content_hash,
        }
        if self.source:
            memory["source"] = self.source
        front: dict[str, Any] = {"title": collapse_text(self.text)[:80], "memory": memory}
        if self.supersedes:
            front["relations"] = {"supersedes": list(self.supersedes)}
        if self.workbench:
            front["workbench"] = self.workbench
        header = yaml.dump(front, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000)
        return f"---\n{header}---\n\n{self.text.strip()}\n"


def parse_fact_file(content: str, *, where: str = "fact file") -> FactFile:
    match = _FRONT_MATTER.match(content)
    if not match:
        raise FactFileError(f"{where}: no YAML front matter block (--- ... ---) at the top")
    try:
        front = yaml.load(match.group(1), Loader=_Loader)
    except yaml.YAMLError as exc:
        raise FactFileError(f"{where}: front matter is not valid YAML: {exc}") from exc
    if not isinstance(front, dict) or not isinstance(front.get("memory"), dict):
        raise FactFileError(f"{where}: front matter has no 'memory:' mapping")
    memory = front["memory"]
    text = content[match.end() :].strip()
    record_id = memory.get("recordId")
    if not isinstance(record_id, str) or not is_record_id(record_id):
        raise FactFileError(f"{where}: memory.recordId must be mem-<16 hex>")
    if not text:
        raise FactFileError(f"{where}: the fact text after the front matter is empty")
    declared_hash = memory.get("contentHash")
    if not isinstance(declared_hash, str) or not is_sha256(declared_hash):
        raise FactFileError(f"{where}: memory.contentHash must be a lowercase SHA-256 hex digest")
    if content_hash(text) != declared_hash:
        raise FactFileError(f"{where}: memory.contentHash does not match the text")
    raw_scopes = memory.get("scopes")
    if not isinstance(raw_scopes, list):
        raise FactFileError(f"{where}: memory.scopes must be a list")
    try:
        scopes = normalize_scopes(raw_scopes)
    except Exception as exc:
        raise FactFileError(f"{where}: {exc}") from exc
    caller, session = memory.get("caller"), memory.get("session")
    if not (
        isinstance(caller, str) and caller.strip() and isinstance(session, str) and session.strip()
    ):
        raise FactFileError(f"{where}: memory.caller and memory.session are required")
    created_at = memory.get("createdAt")
    if not isinstance(created_at, str):
        # YAML may have parsed an unquoted timestamp into a datetime.
        created_at = str(created_at) if created_at is not None else None
    if not created_at:
        raise FactFileError(f"{where}: memory.createdAt is required")
    relations = front.get("relations") or {}
    supersedes = relations.get("supersedes") if isinstance(relations, dict) else None
    if supersedes is None:
        supersedes = []
    elif isinstance(supersedes, str):
        supersedes = [supersedes]
    if not all(isinstance(uri, str) and uri.startswith("gno://") for uri in supersedes):
        raise FactFileError(f"{where}: relations.supersedes entries must be gno:// URIs")
    source = memory.get("source")
    workbench = front.get("workbench")
    return FactFile(
        record_id=record_id,
        scopes=scopes,
        caller=caller.strip(),
        session=session.strip(),
        created_at=created_at,
        content_hash=declared_hash,
        text=text,
        source=source.strip() if isinstance(source, str) and source.strip() else None,
        supersedes=list(supersedes),
        workbench=workbench if isinstance(workbench, dict) else {},
    )


def write_atomically(path: Path, content: str, *, durable: bool = True) -> None:
    """Temp file in the same folder, fsync, rename: readers see the old file or the new one.
    `durable=False` skips the fsync (throwaway stores only: benchmarks, the demo)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=".tmp-", suffix=".md", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as out:
            out.write(content)
            out.flush()
            if durable:
                os.fsync(out.fileno())
        Path(temp_name).replace(path)
    except BaseException:
        Path(temp_name).unlink(missing_ok=True)
        raise


def iter_fact_paths(root: Path) -> list[Path]:
    facts = root / "facts"
    if not facts.is_dir():
        return []
    return sorted(p for p in facts.glob("*/mem-*.md") if not p.name.startswith("."))
