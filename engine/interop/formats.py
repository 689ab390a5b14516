"""Reading other memory formats into one shape (`Incoming`), all-or-nothing: a file is parsed
and checked whole before anything is written, and an error names the file and the line or
JSON path that is wrong.

Formats: `jsonl` (ours, or any `{text, scopes, ...}` lines), `ob1` (an OB1 recall response,
seed 002), `gno` (a folder of GNO fact files, as GNO or we write them), `mem0` (the JSON of
mem0's `get_all`: `{"results": [{"id", "memory", ...}]}`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.contract.errors import MemoryFailure
from engine.contract.validation import schema_errors
from engine.storage.factfiles import FactFileError, iter_fact_paths, parse_fact_file

FORMATS = ("jsonl", "ob1", "gno", "mem0")
# Fields a jsonl line may carry: what our export writes. Anything else is a typo to report.
JSONL_FIELDS = {
    "text",
    "scopes",
    "collection",
    "caller",
    "session",
    "source",
    "createdAt",
    "recordId",
    "docid",
    "contentHash",
    "supersedes",
    "supersededBy",
    "uri",
    "workbench",
}
MAX_IMPORT_BYTES = 64 * 1024 * 1024


@dataclass
class Incoming:
    """One fact to import, as read; `record_id`/`created_at` are kept when the source has them
    (a restore of our own export reproduces the store)."""

    text: str
    scopes: list[str]
    where: str  # file:line or file#/path, for error messages and the dry-run listing
    collection: str | None = None
    caller: str | None = None
    session: str | None = None
    source: str | None = None
    created_at: str | None = None
    record_id: str | None = None
    docid: str | None = None
    supersedes: list[str] = field(default_factory=list)
    superseded: bool = False  # history in the source: imported as-is, without dedup
    workbench: dict[str, Any] = field(default_factory=dict)


def _bad(where: str, why: str) -> MemoryFailure:
    return MemoryFailure("MEMORY_IMPORT_INVALID", f"{where}: {why}. Nothing was imported.")


def detect_format(path: Path) -> str:
    if path.is_dir():
        return "gno"
    if path.suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    head = _read(path)[:4096].lstrip()
    if head.startswith("{") and '"schema_version"' in head and "openbrain" in head:
        return "ob1"
    if head.startswith("{") and '"results"' in head:
        return "mem0"
    if head.startswith("{"):
        return "jsonl"
    raise _bad(str(path), "cannot tell its format; pass --format jsonl|ob1|gno|mem0")


def _read(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_IMPORT_BYTES:
            raise _bad(str(path), f"larger than {MAX_IMPORT_BYTES // 2**20} MiB; split it")
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(str(path), f"not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise _bad(str(path), f"cannot be read ({exc.strerror})") from exc


def read_incoming(path: Path, fmt: str, default_scopes: list[str]) -> list[Incoming]:
    if fmt not in FORMATS:
        raise _bad(str(path), f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")
    if fmt == "gno":
        return _read_gno(path, default_scopes)
    text = _read(path)
    if fmt == "jsonl":
        return _read_jsonl(path, text, default_scopes)
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise _bad(f"{path}:{exc.lineno}", f"not JSON ({exc.msg})") from exc
    return _read_ob1(path, document) if fmt == "ob1" else _read_mem0(path, document, default_scopes)


def _scopes(value: Any, default: list[str], where: str) -> list[str]:
    if value is None:
        if not default:
            raise _bad(where, "no scopes; add them to the data or pass --scope")
        return list(default)
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise _bad(where, "scopes must be a list of strings")
    return list(value)


def _read_jsonl(path: Path, text: str, default_scopes: list[str]) -> list[Incoming]:
    found: list[Incoming] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise _bad(where, f"not a JSON object ({exc.msg})") from exc
        if not isinstance(item, dict):
            raise _bad(where, "each line must be a JSON object with text and scopes")
        unknown = sorted(set(item) - JSONL_FIELDS)
        if unknown:
            raise _bad(
                where,
                f"unknown field(s) {', '.join(unknown)}; allowed: "
                f"{', '.join(sorted(JSONL_FIELDS))}",
            )
        if not isinstance(item.get("text"), str) or not item["text"].strip():
            raise _bad(where, "text is missing or empty")
        workbench = item.get("workbench") or {}
        if not isinstance(workbench, dict):
            raise _bad(where, "workbench must be an object")
        found.append(
            Incoming(
                text=item["text"],
                scopes=_scopes(item.get("scopes"), default_scopes, where),
                where=where,
                collection=item.get("collection"),
                caller=item.get("caller"),
                session=item.get("session"),
                source=item.get("source"),
                created_at=item.get("createdAt"),
                record_id=item.get("recordId"),
                docid=item.get("docid"),
                supersedes=list(item.get("supersedes") or []),
                superseded=bool(item.get("supersededBy")),
                workbench=workbench,
            )
        )
    return found


def _read_ob1(path: Path, document: Any) -> list[Incoming]:
    errors = schema_errors("ob1_recall", document)
    if errors:
        raise _bad(
            f"{path}#/{errors[0].split(':')[0]}", f"not an OB1 recall response ({errors[0]})"
        )
    found = []
    for index, memory in enumerate(document["memories"]):
        scope = memory["scope"]
        scopes = [
            f"{prefix}:{scope[key]}"
            for prefix, key in (("project", "project_id"), ("channel", "channel_id"))
            if scope.get(key)
        ]
        scopes = scopes or [f"workspace:{scope['workspace_id'] or 'default'}"]
        provenance = memory["provenance"]
        policy = memory["use_policy"]
        freshness = memory["freshness"]
        source = memory.get("source") or {}
        successor = any(a["kind"] == "superseded_by" for a in memory["related_artifacts"])
        found.append(
            Incoming(
                text=memory["content"] or memory["summary"],
                scopes=scopes,
                where=f"{path}#/memories/{index}",
                source=source.get("title"),
                created_at=freshness["created_at"],
                caller=f"ob1:{provenance['created_by']}",
                session=f"ob1:{document['request_id']}",
                record_id=memory["memory_id"] if memory["memory_id"].startswith("mem-") else None,
                supersedes=[
                    a["uri"] for a in memory["related_artifacts"] if a["kind"] == "supersedes"
                ],
                superseded=successor,
                workbench={
                    "provenance": {
                        "status": provenance["status"],
                        "confidence": provenance["confidence"],
                        "createdBy": provenance["created_by"],
                        **({"model": provenance["model"]} if provenance.get("model") else {}),
                        **({"runtime": provenance["runtime"]} if provenance.get("runtime") else {}),
                    },
                    "usePolicy": {
                        "canUseAsInstruction": policy["can_use_as_instruction"],
                        "canUseAsEvidence": policy["can_use_as_evidence"],
                        "requiresUserConfirmation": policy["requires_user_confirmation"],
                    },
                    "freshness": {
                        k: v
                        for k, v in (
                            ("lastConfirmedAt", freshness.get("last_confirmed_at")),
                            ("staleAfter", freshness.get("stale_after")),
                        )
                        if v
                    },
                },
            )
        )
    return found


def _read_mem0(path: Path, document: Any, default_scopes: list[str]) -> list[Incoming]:
    if not isinstance(document, dict) or not isinstance(document.get("results"), list):
        raise _bad(f"{path}#/", 'a mem0 export is {"results": [...]}')
    found = []
    for index, item in enumerate(document["results"]):
        where = f"{path}#/results/{index}"
        if not isinstance(item, dict) or not isinstance(item.get("memory"), str):
            raise _bad(where, "each result needs a string `memory`")
        scopes = [
            f"{kind}:{item[key]}"
            for kind, key in (("user", "user_id"), ("agent", "agent_id"), ("run", "run_id"))
            if isinstance(item.get(key), str) and item[key]
        ]
        metadata = item.get("metadata") if isinstance(item.get("metadata"), dict) else {}
        found.append(
            Incoming(
                text=item["memory"],
                scopes=scopes or _scopes(None, default_scopes, where),
                where=where,
                created_at=item.get("created_at"),
                caller="mem0:import",
                session=f"mem0:{item.get('id', index)}",
                source=f"mem0 {item.get('id')}" + (f" {json.dumps(metadata)}" if metadata else ""),
            )
        )
    return found


def _read_gno(path: Path, default_scopes: list[str]) -> list[Incoming]:
    root = path if (path / "facts").is_dir() else path.parent if path.name == "facts" else path
    files = iter_fact_paths(root)
    if not files:
        raise _bad(str(path), "holds no facts/<date>/mem-*.md fact files")
    found, successors = [], set()
    parsed = []
    for file in files:
        try:
            fact = parse_fact_file(file.read_text(encoding="utf-8"), where=str(file))
        except (FactFileError, OSError, UnicodeDecodeError) as exc:
            raise _bad(str(file), str(exc)) from exc
        parsed.append((file, fact))
        successors.update(fact.supersedes)
    for file, fact in parsed:
        uri_tail = f"/facts/{file.parent.name}/{fact.record_id}.md"
        found.append(
            Incoming(
                text=fact.text,
                scopes=fact.scopes,
                where=str(file),
                caller=fact.caller,
                session=fact.session,
                source=fact.source,
                created_at=fact.created_at,
                record_id=fact.record_id,
                docid=fact.workbench.get("docid"),
                supersedes=fact.supersedes,
                superseded=any(uri.endswith(uri_tail) for uri in successors),
                workbench={k: v for k, v in fact.workbench.items() if k != "docid"},
            )
        )
    return found
