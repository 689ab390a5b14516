"""GNO-compatible fact files: YAML front matter, then the text. The files are canonical.

Reading is strict and bounded (docs/decisions.md, "Import safety"): every error names the file
(`FactFileError.path`), times must be ISO 8601, `relations.supersedes` must hold gno:// uris,
`workbench:` fields must have their types, and a file may not expand past fixed limits (size,
YAML aliases, nesting, values), so reindex and `import --format gno` cannot be made to hang or
to store what recall would then fail on. The same field checks serve the import formats."""

from __future__ import annotations

import ctypes
import json
import math
import os
import re
import tempfile
import unicodedata
from contextlib import suppress
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any, cast

import yaml

from engine.contract.curation_fields import CREATORS, PROVENANCE_STATUSES
from engine.contract.errors import MemoryFailure
from engine.contract.normalize import (
    collapse_text,
    content_hash,
    is_record_id,
    is_sha256,
    iso_utc,
    normalize_scopes,
    parse_iso,
)
from engine.storage.embedded.front_matter import NotSimple, block_list, scalar
from engine.storage.embedded.front_matter import emit as emit_front_matter

# libyaml's C emitter and parser when present: the pure-Python ones cost ~4 ms a fact file.
_Dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_FRONT_MATTER = re.compile(r"^---\r?\n(.*?)(?:\r?\n)?---(?:\r?\n|$)", re.DOTALL)

# What one fact file may expand to. A fact's text is at most 16 KiB (the keyed API's limit) and
# its front matter a few hundred bytes, so these are far above any file gno-tui writes.
MAX_FACT_FILE_BYTES = 1024 * 1024
MAX_YAML_DEPTH = 64  # nested mappings and lists, the front matter's own included
MAX_YAML_VALUES = 20_000  # scalars, mappings and lists in the front matter
# The workbench fields of one imported item (checked as JSON, before a file exists): well inside
# the file limits above, so whatever an import accepts, reindex reads back.
MAX_WORKBENCH_BYTES = 64 * 1024  # as compact JSON (imports)
MAX_WORKBENCH_VALUES = 10_000
# The keyed API's metadata may nest 32 deep (normalize.MAX_JSON_DEPTH), under workbench.keyed.
MAX_WORKBENCH_DEPTH = 40

# A fact's uri: what the seed schemas allow (`^gno://[^/]+/.+`), without whitespace in the
# collection part or control characters anywhere.
GNO_URI = re.compile(r"gno://[^/\s]+/[^\x00-\x1f]+")
MAX_URI_CHARS = 1000
_DOCID = re.compile(r"^#[0-9a-f]{8,16}$")
# The keyed API's rules for the fields it keeps under `workbench.keyed` (engine/keyed/requests.py
# owns them; repeated here because storage does not import the keyed package).
_KEYED_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,60}$")
_KEYED_MAX_KEY_BYTES = 256
_KEYED_MAX_LABEL_BYTES = 64
_KEYED_MAX_TAGS = 8
_KEYED_MAX_EVENT_MS = 253_402_300_799_999
_KEYED_MAX_METADATA_BYTES = 8 * 1024
KEYED_MAX_TEXT_BYTES = 16 * 1024  # a keyed fact's text (remember's KEYED_MAX_CONTENT_BYTES)
TEMP_PREFIX = ".tmp-"
TIME_EXAMPLE = "2026-01-02T03:04:05.000Z"


class FactFileError(ValueError):
    """A file under facts/ that is not a valid fact record. The message starts with the file
    (or the `where` it was parsed as) and names what is wrong; `path` is the file when known."""

    def __init__(self, message: str, path: Path | None = None) -> None:
        super().__init__(message)
        self.path = path


class FieldError(ValueError):
    """One field that is not what a fact may hold; the message starts with the field's dotted
    name (workbench.expiresAt, relations.supersedes, ...) and says what it should be."""


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
        try:
            header = self._plain_header()
        except NotSimple:
            header = self.general_header()
        return f"---\n{header}---\n\n{self.text.strip()}\n"

    def _plain_header(self) -> str:
        """general_header's text, written field by field (half its time: every write renders
        a file, an import 100k of them); NotSimple where a value needs yaml.dump."""
        parts = [
            f"title: {scalar(collapse_text(self.text)[:80])}\nmemory:\n"
            f"  recordId: {scalar(self.record_id)}\n",
            block_list("scopes", self.scopes, "  "),
            f"  caller: {scalar(self.caller)}\n  session: {scalar(self.session)}\n"
            f"  createdAt: {scalar(self.created_at)}\n"
            f"  contentHash: {scalar(self.content_hash)}\n",
        ]
        if self.source:
            parts.append(f"  source: {scalar(self.source)}\n")
        if self.supersedes:
            parts.append("relations:\n" + block_list("supersedes", self.supersedes, "  "))
        if self.workbench:
            workbench = emit_front_matter({"workbench": self.workbench})
            if workbench is None:
                raise NotSimple
            parts.append(workbench)
        return "".join(parts)

    def general_header(self) -> str:
        """The front matter's YAML, from the whole tree (yaml.dump where emit is unsure)."""
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
        return emit_front_matter(front) or yaml.dump(
            front, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000
        )


# -- field checks, shared by the fact-file parser and the import formats --------------------


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_time(value: Any, name: str) -> str:
    """An ISO 8601 time (a YAML timestamp too), as the canonical UTC text with milliseconds."""
    moment: datetime | None = None
    if isinstance(value, datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=UTC)
    elif isinstance(value, date):
        moment = datetime(value.year, value.month, value.day, tzinfo=UTC)
    elif isinstance(value, str) and value.strip():
        try:
            moment = parse_iso(value.strip())
        except (ValueError, OverflowError):
            moment = None
    try:
        if moment is not None and 1000 <= moment.astimezone(UTC).year <= 9999:
            return iso_utc(moment)
    except (ValueError, OverflowError):
        pass
    raise FieldError(
        f"{name} must be an ISO 8601 time such as {TIME_EXAMPLE} (years 1000 to 9999), "
        f"not {_shown(value)}"
    )


def _optional_time(value: Any, name: str) -> str | None:
    return None if value is None else check_time(value, name)


def check_gno_uris(value: Any, name: str, *, allow_single: bool = False) -> list[str]:
    """A list of gno:// fact uris (`relations.supersedes`). A fact file may hold a single uri
    instead of a list (GNO writes either); an import item must give a list."""
    if value is None:
        return []
    if allow_single and isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise FieldError(
            f"{name} must be a list of gno:// uris, e.g. "
            f'["gno://memory/facts/2026-01-02/mem-0123456789abcdef.md"], not {_shown(value)}'
        )
    for index, uri in enumerate(value):
        if not isinstance(uri, str) or len(uri) > MAX_URI_CHARS or not GNO_URI.fullmatch(uri):
            raise FieldError(
                f"{name}[{index}] must be a gno:// uri (gno://<collection>/<path>), "
                f"not {_shown(uri)}"
            )
    return list(value)


def check_text_field(value: Any, name: str, *, required: bool = False) -> str | None:
    """A free-text field (caller, session, source...): a string, trimmed; empty is absent."""
    if value is None or (isinstance(value, str) and not value.strip()):
        if required:
            raise FieldError(f"{name} is required: a non-empty string")
        return None
    if not isinstance(value, str):
        raise FieldError(f"{name} must be a string, not {_shown(value)}")
    return value.strip()


def check_docid(value: Any, name: str) -> str:
    if not isinstance(value, str) or not _DOCID.match(value):
        raise FieldError(f"{name} must be # and 8 to 16 lowercase hex digits, not {_shown(value)}")
    return value


def _mapping(value: Any, name: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise FieldError(f"{name} must be a mapping of fields, not {_shown(value)}")
    return value


def _no_others(value: dict[str, Any], name: str, allowed: tuple[str, ...], strict: bool) -> None:
    unknown = sorted(str(key) for key in value if key not in allowed)
    if strict and unknown:
        fields = ", ".join(f"{name}.{key}" for key in unknown)
        raise FieldError(f"unknown field(s) {fields}; allowed under {name}: {', '.join(allowed)}")


def _boolean(value: Any, name: str) -> bool:
    if not isinstance(value, bool):
        raise FieldError(f"{name} must be true or false, not {_shown(value)}")
    return value


def _json_value(value: Any, name: str, depth: int, budget: list[int]) -> Any:
    """A copy of a value that JSON can hold exactly (string keys, finite numbers), bounded in
    depth and size. YAML times anywhere become ISO text."""
    budget[0] -= 1
    if budget[0] < 0:
        raise FieldError(f"{name}: more than {MAX_WORKBENCH_VALUES} values; keep it smaller")
    if depth > MAX_WORKBENCH_DEPTH:
        raise FieldError(f"{name} nests deeper than {MAX_WORKBENCH_DEPTH} levels")
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise FieldError(f"{name} has a key {_shown(key)} that is not a string")
            out[key] = _json_value(item, f"{name}.{key}", depth + 1, budget)
        return out
    if isinstance(value, list):
        return [
            _json_value(item, f"{name}[{index}]", depth + 1, budget)
            for index, item in enumerate(value)
        ]
    if isinstance(value, float) and not math.isfinite(value):
        raise FieldError(f"{name} must be a finite number, not {value!r}")
    if isinstance(value, (date, datetime)):
        return check_time(value, name)
    if value is None or isinstance(value, (str, int, float)):
        return value
    raise FieldError(f"{name} holds a {type(value).__name__}, which is not a JSON value")


def _label(value: Any, name: str) -> str:
    if (
        not isinstance(value, str)
        or not value.strip()
        or len(value.encode("utf-8")) > _KEYED_MAX_LABEL_BYTES
        or any(unicodedata.category(ch) == "Cc" for ch in value)
    ):
        raise FieldError(
            f"{name} must be a string of 1 to {_KEYED_MAX_LABEL_BYTES} bytes without control "
            f"characters, not {_shown(value)}"
        )
    return value


def _whole(value: Any, name: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise FieldError(f"{name} must be a whole number from {low} to {high}, not {_shown(value)}")
    return int(value)


def _check_keyed(keyed: dict[str, Any], name: str, strict: bool) -> None:
    allowed = ("namespace", "key", "revision", "topic", "tags", "metadata", "occurredAtMs")
    _no_others(keyed, name, allowed, strict)
    key = keyed.get("key")
    if (
        not isinstance(key, str)
        or not key
        or len(key.encode("utf-8")) > _KEYED_MAX_KEY_BYTES
        or any(unicodedata.category(ch) == "Cc" for ch in key)
    ):
        raise FieldError(
            f"{name}.key must be a string of 1 to {_KEYED_MAX_KEY_BYTES} bytes without control "
            f"characters, not {_shown(key)}"
        )
    namespace = keyed.get("namespace")
    if namespace is not None and not (
        isinstance(namespace, str) and _KEYED_NAMESPACE.match(namespace)
    ):
        raise FieldError(
            f"{name}.namespace must be 1-61 lowercase letters, digits, '.', '_' or '-', "
            f"not {_shown(namespace)}"
        )
    if keyed.get("revision") is not None:
        _whole(keyed["revision"], f"{name}.revision", 1, 2**62)
    if keyed.get("topic") is not None:
        _label(keyed["topic"], f"{name}.topic")
    tags = keyed.get("tags")
    if tags is not None:
        if not isinstance(tags, list) or len(tags) > _KEYED_MAX_TAGS:
            raise FieldError(
                f"{name}.tags must be a list of at most {_KEYED_MAX_TAGS} strings, "
                f"not {_shown(tags)}"
            )
        for index, tag in enumerate(tags):
            _label(tag, f"{name}.tags[{index}]")
    if keyed.get("metadata") is not None:
        metadata = _mapping(keyed["metadata"], f"{name}.metadata")
        size = len(json.dumps(metadata, ensure_ascii=False, separators=(",", ":")).encode())
        if strict and size > _KEYED_MAX_METADATA_BYTES:
            raise FieldError(
                f"{name}.metadata is {size} bytes as compact JSON; the keyed API keeps at most "
                f"{_KEYED_MAX_METADATA_BYTES}"
            )
    if keyed.get("occurredAtMs") is not None:
        _whole(keyed["occurredAtMs"], f"{name}.occurredAtMs", 0, _KEYED_MAX_EVENT_MS)


def _check_size(workbench: dict[str, Any]) -> None:
    """An imported workbench stays far inside a fact file's 1 MiB, also once YAML indents it."""
    size = len(json.dumps(workbench, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
    rendered = (
        len(yaml.dump(workbench, Dumper=_Dumper, allow_unicode=True, width=1000).encode("utf-8"))
        if size > MAX_WORKBENCH_BYTES // 4
        else 0
    )
    if size > MAX_WORKBENCH_BYTES or rendered > MAX_FACT_FILE_BYTES // 2:
        raise FieldError(
            f"workbench is {size} bytes as JSON; at most {MAX_WORKBENCH_BYTES} are kept with a "
            "fact. Keep large payloads elsewhere"
        )


WORKBENCH_FIELDS = ("provenance", "usePolicy", "freshness", "retired", "expiresAt", "keyed")


def check_workbench(value: Any, *, strict: bool = False, docid: bool = True) -> dict[str, Any]:
    """The `workbench:` fields of a fact, checked by type and normalised (times as canonical
    UTC text); returns a new dict. `strict` (imports) also refuses unknown fields, where a file
    keeps them (a newer gno-tui may have written them); `docid=False` refuses `docid` (an import
    item carries it at the top level)."""
    if value is None or (type(value) is dict and not value):  # most facts have none
        return {}
    workbench = _json_value(_mapping(value, "workbench"), "workbench", 0, [MAX_WORKBENCH_VALUES])
    allowed = ("docid", *WORKBENCH_FIELDS) if docid else WORKBENCH_FIELDS
    if not docid and "docid" in workbench:
        raise FieldError("workbench.docid is not allowed here; give the docid at the top level")
    _no_others(workbench, "workbench", allowed, strict)
    if strict:
        _check_size(workbench)
    if "docid" in workbench:
        check_docid(workbench["docid"], "workbench.docid")
    if "provenance" in workbench:
        provenance = _mapping(workbench["provenance"], "workbench.provenance")
        allowed_p = ("status", "confidence", "createdBy", "model", "runtime")
        _no_others(provenance, "workbench.provenance", allowed_p, strict)
        if "status" in provenance and provenance["status"] not in PROVENANCE_STATUSES:
            raise FieldError(
                f"workbench.provenance.status must be one of {', '.join(PROVENANCE_STATUSES)}, "
                f"not {_shown(provenance['status'])}"
            )
        if "createdBy" in provenance and provenance["createdBy"] not in CREATORS:
            raise FieldError(
                f"workbench.provenance.createdBy must be one of {', '.join(CREATORS)}, "
                f"not {_shown(provenance['createdBy'])}"
            )
        confidence = provenance.get("confidence")
        if "confidence" in provenance and (
            isinstance(confidence, bool)
            or not isinstance(confidence, (int, float))
            or not 0 <= confidence <= 1
        ):
            raise FieldError(
                f"workbench.provenance.confidence must be a number from 0 to 1, "
                f"not {_shown(confidence)}"
            )
        for key in ("model", "runtime"):
            check_text_field(provenance.get(key), f"workbench.provenance.{key}")
    if "usePolicy" in workbench:
        policy = _mapping(workbench["usePolicy"], "workbench.usePolicy")
        allowed_u = ("canUseAsInstruction", "canUseAsEvidence", "requiresUserConfirmation")
        _no_others(policy, "workbench.usePolicy", allowed_u, strict)
        for key in allowed_u:
            if key in policy:
                _boolean(policy[key], f"workbench.usePolicy.{key}")
    if "freshness" in workbench:
        freshness = _mapping(workbench["freshness"], "workbench.freshness")
        _no_others(freshness, "workbench.freshness", ("lastConfirmedAt", "staleAfter"), strict)
        for key in ("lastConfirmedAt", "staleAfter"):
            if key in freshness:
                freshness[key] = _optional_time(freshness[key], f"workbench.freshness.{key}")
    if workbench.get("retired") is not None:
        retired = _mapping(workbench["retired"], "workbench.retired")
        _no_others(retired, "workbench.retired", ("at", "by", "reason"), strict)
        retired["at"] = check_time(retired.get("at"), "workbench.retired.at")
        check_text_field(retired.get("by"), "workbench.retired.by", required=True)
        check_text_field(retired.get("reason"), "workbench.retired.reason", required=True)
    elif "retired" in workbench:
        del workbench["retired"]
    if "expiresAt" in workbench:
        workbench["expiresAt"] = _optional_time(workbench["expiresAt"], "workbench.expiresAt")
        if workbench["expiresAt"] is None:
            del workbench["expiresAt"]
    if "keyed" in workbench:
        _check_keyed(_mapping(workbench["keyed"], "workbench.keyed"), "workbench.keyed", strict)
    return cast(dict[str, Any], workbench)


# -- reading -------------------------------------------------------------------------------


# Front matter this short, without `&` or `*`, can hold no alias and few values: it is loaded
# at once and its depth checked on the result (the event scan costs ~40% of a load).
_SMALL_FRONT_MATTER = 16 * 1024


def _bounded_front_matter(text: str) -> Any:
    """The YAML front matter, refused before it is built if it uses aliases (a few hundred
    bytes of `&a [*b, *b, ...]` expand to billions of values), nests too deep or holds too
    many values."""
    if len(text) <= _SMALL_FRONT_MATTER and "&" not in text and "*" not in text:
        front = yaml.load(text, Loader=_Loader)
        _check_tree(front)
        return front
    depth = values = 0
    for event in yaml.parse(text, Loader=_Loader):
        if isinstance(event, yaml.AliasEvent):
            raise FieldError(
                f"front matter uses a YAML alias (*{event.anchor}); fact files may not use "
                "anchors and aliases: write the value out in full"
            )
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise FieldError(f"front matter nests deeper than {MAX_YAML_DEPTH} levels")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        if isinstance(event, (yaml.ScalarEvent, yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            values += 1
            if values > MAX_YAML_VALUES:
                raise FieldError(f"front matter holds more than {MAX_YAML_VALUES} values")
    return yaml.load(text, Loader=_Loader)


def _check_tree(value: Any) -> None:
    """The depth and value bounds of `_bounded_front_matter`, on a loaded alias-free tree."""
    stack = [(value, 1)]
    values = 0
    while stack:
        item, depth = stack.pop()
        values += 1
        if values > MAX_YAML_VALUES:
            raise FieldError(f"front matter holds more than {MAX_YAML_VALUES} values")
        if isinstance(item, dict):
            children: Any = [*item.keys(), *item.values()]
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > MAX_YAML_DEPTH:
            raise FieldError(f"front matter nests deeper than {MAX_YAML_DEPTH} levels")
        stack.extend((child, depth + 1) for child in children)


def parse_fact_file(
    content: str, *, where: str = "fact file", path: Path | None = None
) -> FactFile:
    """A fact file's content, checked; `where` (the file's path) starts every error message."""

    def bad(why: str) -> FactFileError:
        return FactFileError(f"{where}: {why}", path)

    size = len(content.encode("utf-8", errors="surrogatepass"))
    if size > MAX_FACT_FILE_BYTES:
        raise bad(f"{size} bytes, more than a fact file may hold (1 MiB)")
    match = _FRONT_MATTER.match(content)
    if not match:
        raise bad("no YAML front matter block (--- ... ---) at the top")
    try:
        front = _bounded_front_matter(match.group(1))
    except FieldError as exc:
        raise bad(str(exc)) from exc
    except (yaml.YAMLError, RecursionError) as exc:
        raise bad(f"front matter is not valid YAML: {exc}") from exc
    if not isinstance(front, dict) or not isinstance(front.get("memory"), dict):
        raise bad("front matter has no 'memory:' mapping")
    memory = front["memory"]
    text = content[match.end() :].strip()
    record_id = memory.get("recordId")
    if not isinstance(record_id, str) or not is_record_id(record_id):
        raise bad("memory.recordId must be mem-<16 hex>")
    if not text:
        raise bad("the fact text after the front matter is empty")
    declared_hash = memory.get("contentHash")
    if not isinstance(declared_hash, str) or not is_sha256(declared_hash):
        raise bad("memory.contentHash must be a lowercase SHA-256 hex digest")
    if content_hash(text) != declared_hash:
        raise bad("memory.contentHash does not match the text")
    raw_scopes = memory.get("scopes")
    if not isinstance(raw_scopes, list):
        raise bad("memory.scopes must be a list")
    try:
        scopes = normalize_scopes(raw_scopes)
    except MemoryFailure as exc:
        raise bad(f"memory.scopes: {exc.message}") from exc
    try:
        caller = check_text_field(memory.get("caller"), "memory.caller", required=True)
        session = check_text_field(memory.get("session"), "memory.session", required=True)
        if memory.get("createdAt") is None:
            raise FieldError("memory.createdAt is required")
        created_at = check_time(memory.get("createdAt"), "memory.createdAt")
        source = check_text_field(memory.get("source"), "memory.source")
        relations = front.get("relations")
        if relations is not None and not isinstance(relations, dict):
            raise FieldError("relations must be a mapping, e.g. relations: {supersedes: [uri]}")
        supersedes = check_gno_uris(
            (relations or {}).get("supersedes"), "relations.supersedes", allow_single=True
        )
        workbench = check_workbench(front.get("workbench"))
    except FieldError as exc:
        raise bad(str(exc)) from exc
    assert caller is not None and session is not None
    return FactFile(
        record_id=record_id,
        scopes=scopes,
        caller=caller,
        session=session,
        created_at=created_at,
        content_hash=declared_hash,
        text=text,
        source=source,
        supersedes=supersedes,
        workbench=workbench,
    )


def read_fact_file(path: Path) -> FactFile:
    """Read and parse one fact file. Every failure (unreadable, too large, not UTF-8, not a
    valid fact) is a FactFileError whose message starts with the path: what reindex reports."""
    try:
        size = path.stat().st_size
        if size > MAX_FACT_FILE_BYTES:
            raise FactFileError(
                f"{path}: {size} bytes, more than a fact file may hold (1 MiB)", path
            )
        content = path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FactFileError(f"{path}: not UTF-8 text (byte {exc.start})", path) from exc
    except OSError as exc:
        raise FactFileError(f"{path}: cannot be read ({exc.strerror or exc})", path) from exc
    return parse_fact_file(content, where=str(path), path=path)


# -- writing -------------------------------------------------------------------------------


def write_atomically(path: Path, content: str, *, durable: bool = True) -> None:
    """Temp file in the same folder, fsync, rename: readers see the old file or the new one.
    `durable=False` skips the fsync (throwaway stores only: benchmarks, the demo). A crash can
    leave the temp file (`.tmp-*`) behind; `remove_temp_files` clears them."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp_name = tempfile.mkstemp(prefix=TEMP_PREFIX, suffix=".md", dir=path.parent)
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


def sync_filesystem(folder: Path) -> bool:
    """Make every file written so far on the filesystem holding `folder` durable, in one call
    (Linux syncfs(2)): a bulk write of many files pays one flush instead of one fsync per
    file. False where the call does not exist (then fsync each file)."""
    try:
        syncfs = ctypes.CDLL(None, use_errno=True).syncfs
    except (AttributeError, OSError):
        return False
    handle = os.open(folder, os.O_RDONLY)
    try:
        if syncfs(handle) != 0:
            number = ctypes.get_errno()
            raise OSError(number, f"syncfs failed: {os.strerror(number)}", str(folder))
    finally:
        os.close(handle)
    return True


def fsync_file(path: Path) -> None:
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


def fsync_folder(folder: Path) -> None:
    """Make a folder's entries (files created or renamed into it) durable, or a file's
    content when given a file; a no-op where it cannot be opened (folders on Windows)."""
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        with suppress(OSError):  # a file system that cannot fsync this: nothing more to do
            os.fsync(handle)
    finally:
        os.close(handle)


def remove_temp_files(folder: Path) -> int:
    """Remove the temp files (`.tmp-*`) that a crash inside `write_atomically` left in `folder`
    itself and in its `facts/<day>/` folders: a collection root, or the home (collections.yaml's
    temp file). Call it only while holding the store's write lock, since every writer of these
    folders holds it while its temp file exists. Returns how many were removed."""
    removed = 0
    candidates = [*folder.glob(f"{TEMP_PREFIX}*"), *folder.glob(f"facts/*/{TEMP_PREFIX}*")]
    for temp in candidates:
        if temp.is_file():
            temp.unlink(missing_ok=True)
            removed += 1
    return removed


def iter_fact_paths(root: Path) -> list[Path]:
    facts = root / "facts"
    if not facts.is_dir():
        return []
    return sorted(p for p in facts.glob("*/mem-*.md") if not p.name.startswith("."))
