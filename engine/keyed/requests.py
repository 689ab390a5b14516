"""Requests of the keyed API (seed 003): schema validation, JSON parsing, and the checks and
normalisation of keys, namespaces, topics, tags, content and metadata (engine/keyed/service.py)."""

from __future__ import annotations

import json
import re
import unicodedata
import uuid
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import check_json_depth, clean_text, loads_bounded
from engine.contract.validation import load_schema
from engine.keyed import cursor as keyed_cursor
from engine.memory.remember import KEYED_MAX_CONTENT_BYTES

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator

DEFAULT_NAMESPACE = "default"
MAX_CONTENT_BYTES = KEYED_MAX_CONTENT_BYTES  # 16 KiB of UTF-8
MAX_TAGS = 8
MAX_LABEL_BYTES = 64  # a topic or a tag, after normalisation
MAX_METADATA_BYTES = 8 * 1024  # compact JSON
MAX_KEY_BYTES = 256
MAX_EVENT_MS = 253_402_300_799_999  # 9999-12-31T23:59:59.999Z
UINT64_MAX = 2**64 - 1
_NAMESPACE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,60}$")


def _is_uint64(value: Any) -> bool:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return True  # not a number: the schema's `type` reports it
    return bool(0 <= value <= UINT64_MAX)


@cache
def _request_validator(kind: str) -> Draft202012Validator:
    # Imported at the first keyed request: the workbench and most commands never make one,
    # and jsonschema cost their start a twentieth of a second.
    from jsonschema import Draft202012Validator, FormatChecker

    # The seed's integer formats (Rust's u64 and usize): jsonschema knows neither, so without
    # these checkers a since_ms of 2**64 or more passed the schema.
    formats = FormatChecker()
    formats.checks("uint64")(_is_uint64)
    formats.checks("uint")(_is_uint64)
    return Draft202012Validator(load_schema("keyed_requests")[kind], format_checker=formats)


def validate_request(kind: str, request: Any) -> dict[str, Any]:
    """`kind` is remember, recall or search: the request must match seed 003 exactly."""
    title = {"remember": "RememberRequest", "recall": "MemoryQuery", "search": "SearchQuery"}[kind]
    if not isinstance(request, dict):
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"A {kind} request is a JSON object ({title} in "
            "schemas/keyed-memory-requests.schema.json), not "
            f"{type(request).__name__}.",
        )
    check_json_depth(request, what=f"The {kind} request", code="MEMORY_REQUEST_INVALID")
    try:
        json.dumps(request, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except (ValueError, TypeError) as exc:  # NaN/Infinity, lone surrogates, non-JSON values
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"The {kind} request is not plain JSON ({exc}). Use finite numbers and valid "
            "UTF-8 text.",
        ) from exc
    errors = sorted(
        _request_validator(kind).iter_errors(request), key=lambda e: [str(p) for p in e.path]
    )
    if errors:
        described = "; ".join(
            f"{'/'.join(str(p) for p in error.absolute_path) or '<request>'}: {error.message}"
            for error in errors[:3]
        )
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"The {kind} request does not match {title} (seed 003, "
            f"schemas/keyed-memory-requests.schema.json): {described}.",
        )
    return request


def parse_request_json(text: str, *, where: str = "the request") -> Any:
    """JSON text as a surface receives it; NaN and Infinity are refused (not JSON)."""

    def refuse(constant: str) -> Any:
        raise ValueError(f"{constant} is not JSON")

    try:
        return loads_bounded(
            text,
            what=where[:1].upper() + where[1:],
            code="MEMORY_REQUEST_INVALID",
            parse_constant=refuse,
        )
    except ValueError as exc:
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"{where} is not JSON ({exc}). Pass one JSON object, e.g. "
            '{"key": "k1", "memory": {"content": "Alice prefers tea"}}.',
        ) from exc


def as_int(value: Any) -> int | None:
    """Seed integers (2020-12 also counts 3.0 as an integer)."""
    return None if value is None else int(value)


def namespace_scope(namespace: str | None) -> tuple[str, str]:
    name = (namespace or DEFAULT_NAMESPACE).strip().lower()
    if not _NAMESPACE.match(name):
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"Namespace {namespace!r} is invalid: 1-61 lowercase letters, digits, '.', '_' or "
            "'-', starting with a letter or digit (its facts get the scope kv:<namespace>).",
        )
    return name, f"kv:{name}"


def has_control(text: str) -> bool:
    return any(unicodedata.category(ch) == "Cc" for ch in text)


def label(value: str, what: str) -> str:
    """A topic or a tag: trimmed, lowercased, NFC; 1 to 64 bytes, no control characters."""
    code = "MEMORY_TOPIC_INVALID" if what == "topic" else "MEMORY_TAGS_INVALID"
    text = unicodedata.normalize("NFC", value.strip().lower())
    size = len(text.encode("utf-8"))
    if not text or size > MAX_LABEL_BYTES or has_control(text):
        raise MemoryFailure(
            code,
            f"The {what} {value[:80]!r} is {size} bytes after trimming and lowercasing; a "
            f"{what} has 1 to {MAX_LABEL_BYTES} bytes of UTF-8 and no control characters.",
        )
    return text


def normalize_tags(values: list[str]) -> list[str]:
    tags = sorted({label(value, "tag") for value in values})
    if len(tags) > MAX_TAGS:
        raise MemoryFailure(
            "MEMORY_TAGS_INVALID",
            f"{len(tags)} distinct tags given; a memory has at most {MAX_TAGS} (after trimming, "
            "lowercasing and removing duplicates). Drop the least useful ones.",
        )
    return tags


def key_or_new(value: str | None) -> str:
    if value is None:
        return str(uuid.uuid4())
    size = len(value.encode("utf-8"))
    if not value or size > MAX_KEY_BYTES or has_control(value):
        raise MemoryFailure(
            "MEMORY_KEY_INVALID",
            f"The key is {size} bytes; a key has 1 to {MAX_KEY_BYTES} bytes of UTF-8 and no "
            "control characters. Omit it to get a new UUID.",
        )
    return value


@dataclass
class MemoryInput:
    content: str
    topic: str | None
    tags: list[str]
    metadata: dict[str, Any]
    occurred_at_ms: int | None


def memory_input(memory: dict[str, Any]) -> MemoryInput:
    content = memory["content"]
    size = len(content.encode("utf-8"))
    if size > MAX_CONTENT_BYTES:
        raise MemoryFailure(
            "MEMORY_CONTENT_TOO_LARGE",
            f"memory.content is {size} bytes of UTF-8; the limit is {MAX_CONTENT_BYTES} "
            "(16 KiB). Split it into smaller memories.",
        )
    if not content.strip():
        raise MemoryFailure(
            "MEMORY_TEXT_REQUIRED",
            "memory.content is empty; a memory needs some text, e.g. "
            '{"memory": {"content": "Alice prefers tea"}}.',
        )
    topic = label(memory["topic"], "topic") if memory.get("topic") is not None else None
    metadata = memory.get("metadata") or {}
    metadata_size = keyed_cursor.size_of(metadata)
    if metadata_size > MAX_METADATA_BYTES:
        raise MemoryFailure(
            "MEMORY_METADATA_TOO_LARGE",
            f"memory.metadata is {metadata_size} bytes as compact JSON; the limit is "
            f"{MAX_METADATA_BYTES} (8 KiB). Keep large payloads elsewhere and store a reference.",
        )
    occurred = as_int(memory.get("occurred_at_ms"))
    if occurred is not None and occurred > MAX_EVENT_MS:
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"memory.occurred_at_ms {occurred} is past the year 9999; pass Unix milliseconds.",
        )
    return MemoryInput(
        content=clean_text(content, max_bytes=MAX_CONTENT_BYTES),
        topic=topic,
        tags=normalize_tags(list(memory.get("tags") or [])),
        metadata=metadata,
        occurred_at_ms=occurred,
    )
