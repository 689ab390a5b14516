"""Reading other memory formats into one shape (`Incoming`), all-or-nothing: a file is parsed
and checked whole before anything is written, and an error names the file and the line or
JSON path that is wrong.

Formats: `jsonl` (ours, or any `{text, scopes, ...}` lines), `ob1` (an OB1 recall response,
seed 002), `gno` (a folder of GNO fact files, as GNO or we write them), `mem0` (the JSON of
mem0's `get_all`: `{"results": [{"id", "memory", ...}]}`)."""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import content_hash, is_record_id, is_sha256
from engine.contract.validation import schema_errors
from engine.storage.embedded.factfiles import (
    GNO_URI,
    FieldError,
    check_docid,
    check_gno_uris,
    check_text_field,
    check_time,
    check_workbench,
)

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
# How deeply arrays and objects may nest in an import's JSON (a line, or a whole document):
# room for a keyed fact's metadata (32 levels, engine/keyed) under workbench.keyed.
MAX_JSON_DEPTH = 48


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


def _refuse_constant(constant: str) -> Any:
    raise ValueError(f"{constant} is not a JSON number")


def _loads(text: str, where: str, *, document: bool = False) -> Any:
    """JSON (NaN and Infinity refused), nested at most MAX_JSON_DEPTH deep. A `document` (a
    whole file) names the line of a syntax error; a jsonl line is named by `where` already."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        place = f"{where}:{exc.lineno}" if document else where
        raise _bad(place, f"not JSON ({exc.msg})") from exc
    except ValueError as exc:
        raise _bad(where, f"not JSON ({exc})") from exc
    except RecursionError:
        value = None
        depth = MAX_JSON_DEPTH + 1
    else:
        # Each level opens a bracket: text with no more brackets than that cannot be deeper
        # (walking every value was most of reading a plain line).
        shallow = text.count("{") + text.count("[") <= MAX_JSON_DEPTH
        depth = 0 if shallow else _depth(value)
    if depth > MAX_JSON_DEPTH:
        raise _bad(
            where,
            f"arrays and objects nest deeper than {MAX_JSON_DEPTH} levels; flatten the data",
        )
    return value


def _depth(value: Any) -> int:
    """How deeply arrays and objects nest (a scalar is 0), without recursion; stops counting
    past MAX_JSON_DEPTH."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_JSON_DEPTH:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


def _checked(where: str, check: Callable[..., Any], *args: Any, **options: Any) -> Any:
    """A field check from engine/storage/embedded/factfiles.py, its FieldError named by `where`."""
    try:
        return check(*args, **options)
    except FieldError as exc:
        raise _bad(where, str(exc)) from exc


def _optional(where: str, check: Callable[..., Any], value: Any, name: str) -> Any:
    return None if value is None else _checked(where, check, value, name)


def _record_id(value: Any, name: str) -> str:
    if not isinstance(value, str) or not is_record_id(value):
        raise FieldError(f"{name} must be mem- and 16 lowercase hex digits, not {value!r}")
    return value


def _successor(value: Any, name: str) -> str:
    if not isinstance(value, str) or not (is_record_id(value) or GNO_URI.fullmatch(value)):
        raise FieldError(f"{name} must be the successor's recordId (mem-<16 hex>), not {value!r}")
    return value


def _uri(value: Any, name: str) -> str:
    if not isinstance(value, str) or not GNO_URI.fullmatch(value):
        raise FieldError(f"{name} must be a gno:// uri (gno://<collection>/<path>), not {value!r}")
    return value


def _collection(value: Any, name: str) -> str:
    if not isinstance(value, str):
        raise FieldError(f"{name} must be a collection name (a string), not {value!r}")
    return value


def _content_hash(value: Any, text: str) -> str:
    if not is_sha256(value):
        raise FieldError(f"contentHash must be a lowercase SHA-256 hex digest, not {value!r}")
    if value != content_hash(text):
        raise FieldError(
            "contentHash does not match the text (the text was changed after export); "
            "fix the text or drop contentHash"
        )
    return str(value)


def detect_format(path: Path) -> str:
    if path.is_dir():
        return "gno"
    if path.suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    head = _head(path).lstrip()
    if head.startswith("{") and '"schema_version"' in head and "openbrain" in head:
        return "ob1"
    if head.startswith("{") and '"results"' in head:
        return "mem0"
    if head.startswith("{"):
        return "jsonl"
    raise _bad(str(path), "cannot tell its format; pass --format jsonl|ob1|gno|mem0")


def _head(path: Path, size: int = 16_384) -> str:
    """The first 4096 characters of the file (what telling its format needs), with the checks
    reading it whole makes: its size, and UTF-8 as far as it is read."""
    try:
        if path.stat().st_size > MAX_IMPORT_BYTES:
            raise _bad(str(path), f"larger than {MAX_IMPORT_BYTES // 2**20} MiB; split it")
        with path.open("rb") as file:
            data = file.read(size)
        # A character cut at the end of the head is not an error: the decoder waits for more.
        return codecs.getincrementaldecoder("utf-8")().decode(data, final=False)[:4096]
    except UnicodeDecodeError as exc:
        raise _bad(str(path), f"not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise _bad(str(path), f"cannot be read ({exc.strerror})") from exc


def _read(path: Path) -> str:
    try:
        if path.stat().st_size > MAX_IMPORT_BYTES:
            raise _bad(str(path), f"larger than {MAX_IMPORT_BYTES // 2**20} MiB; split it")
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise _bad(str(path), f"not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise _bad(str(path), f"cannot be read ({exc.strerror})") from exc


def read_document(path: Path, fmt: str, default_scopes: list[str]) -> list[Incoming]:
    """The items of a file that is one JSON document (`ob1`, `mem0`), read whole. JSONL and
    GNO fact folders are read item by item (engine/interop/import_source.py)."""
    document = _loads(_read(path), str(path), document=True)
    return _read_ob1(path, document) if fmt == "ob1" else _read_mem0(path, document, default_scopes)


def check_format(path: Path, fmt: str) -> None:
    if fmt not in FORMATS:
        raise _bad(str(path), f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")


def _scopes(value: Any, default: list[str], where: str) -> list[str]:
    if value is None:
        if not default:
            raise _bad(where, "no scopes; add them to the data or pass --scope")
        return list(default)
    if not isinstance(value, list) or not all(isinstance(s, str) for s in value):
        raise _bad(where, "scopes must be a list of strings")
    return list(value)


def _identity(where: str, value: Any, name: str) -> str | None:
    """An item's caller or session: absent (or null) means the importer's; given, it must
    name someone (docs/contract.md section 4: an empty caller is refused)."""
    if isinstance(value, str) and not value.strip():
        raise _bad(
            where,
            f"{name} is empty; give the item's {name}, or leave the field out to record the "
            f"import's own ({'import:cli:<user>' if name == 'caller' else 'import:<file name>'})",
        )
    return cast(str | None, _checked(where, check_text_field, value, name))


def jsonl_item(where: str, line: str, default_scopes: list[str]) -> Incoming | None:
    """One line of a JSONL import, checked (None for a blank line); errors name `where`."""
    if not line.strip():
        return None
    item = _loads(line, where)
    if not isinstance(item, dict):
        raise _bad(where, "each line must be a JSON object with text and scopes")
    unknown = sorted(set(item) - JSONL_FIELDS)
    if unknown:
        raise _bad(
            where,
            f"unknown field(s) {', '.join(unknown)}; allowed: {', '.join(sorted(JSONL_FIELDS))}",
        )
    if not isinstance(item.get("text"), str) or not item["text"].strip():
        raise _bad(where, "text is missing or empty")
    text = item["text"]
    if item.get("contentHash") is not None:
        _checked(where, _content_hash, item["contentHash"], text)
    _optional(where, _uri, item.get("uri"), "uri")
    return Incoming(
        text=text,
        scopes=_scopes(item.get("scopes"), default_scopes, where),
        where=where,
        collection=_optional(where, _collection, item.get("collection"), "collection"),
        caller=_identity(where, item.get("caller"), "caller"),
        session=_identity(where, item.get("session"), "session"),
        source=_checked(where, check_text_field, item.get("source"), "source"),
        created_at=_optional(where, check_time, item.get("createdAt"), "createdAt"),
        record_id=_optional(where, _record_id, item.get("recordId"), "recordId"),
        docid=_optional(where, check_docid, item.get("docid"), "docid"),
        supersedes=_checked(where, check_gno_uris, item.get("supersedes"), "supersedes"),
        superseded=_optional(where, _successor, item.get("supersededBy"), "supersededBy")
        is not None,
        workbench=_checked(where, check_workbench, item.get("workbench"), strict=True, docid=False),
    )


def _read_ob1(path: Path, document: Any) -> list[Incoming]:
    errors = schema_errors("ob1_recall", document)
    if errors:
        raise _bad(
            f"{path}#/{errors[0].split(':')[0]}", f"not an OB1 recall response ({errors[0]})"
        )
    found = []
    for index, memory in enumerate(document["memories"]):
        where = f"{path}#/memories/{index}"
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
        related = memory["related_artifacts"]
        successor = any(a["kind"] == "superseded_by" for a in related)
        for number, artifact in enumerate(related):
            if artifact["kind"] in ("supersedes", "superseded_by"):
                _checked(where, _uri, artifact["uri"], f"related_artifacts[{number}].uri")
        workbench = _checked(
            where,
            check_workbench,
            {
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
            strict=True,
            docid=False,
        )
        found.append(
            Incoming(
                text=memory["content"] or memory["summary"],
                scopes=scopes,
                where=where,
                source=_checked(where, check_text_field, source.get("title"), "source.title"),
                created_at=_checked(
                    where, check_time, freshness["created_at"], "freshness.created_at"
                ),
                caller=f"ob1:{provenance['created_by']}",
                session=f"ob1:{document['request_id']}",
                # Kept when it is one of ours; another system's ids get new record ids.
                record_id=memory["memory_id"] if is_record_id(memory["memory_id"]) else None,
                supersedes=[a["uri"] for a in related if a["kind"] == "supersedes"],
                superseded=successor,
                workbench=workbench,
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
        # The fields read from a mem0 result are checked; the others it may carry (hash,
        # updated_at, categories, score...) are not used.
        for key in ("user_id", "agent_id", "run_id"):
            if item.get(key) is not None and not isinstance(item[key], str):
                raise _bad(where, f"{key} must be a string, not {item[key]!r}")
        identifier = item.get("id")
        if identifier is not None and (
            isinstance(identifier, bool) or not isinstance(identifier, (str, int))
        ):
            raise _bad(where, f"id must be a string or a number, not {identifier!r}")
        metadata = item.get("metadata")
        if metadata is not None and not isinstance(metadata, dict):
            raise _bad(where, f"metadata must be an object, not {metadata!r}")
        scopes = [
            f"{kind}:{item[key]}"
            for kind, key in (("user", "user_id"), ("agent", "agent_id"), ("run", "run_id"))
            if item.get(key)
        ]
        found.append(
            Incoming(
                text=item["memory"],
                scopes=scopes or _scopes(None, default_scopes, where),
                where=where,
                created_at=_optional(where, check_time, item.get("created_at"), "created_at"),
                caller="mem0:import",
                session=f"mem0:{identifier if identifier is not None else index}",
                source=f"mem0 {identifier}" + (f" {json.dumps(metadata)}" if metadata else ""),
            )
        )
    return found
