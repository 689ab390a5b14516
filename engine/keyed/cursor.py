"""Cursors and byte budgets of the keyed API (engine/keyed/service.py, docs/keyed-api.md).

A cursor is opaque base64url: a 16-byte HMAC-SHA256 tag, then canonical JSON
`{"k": kind, "f": fingerprint, "p": position, ...}`. The tag is keyed by a per-store secret
(the store's: engine/storage/mode.py `cursor_secret`), so an altered cursor or
one from another store fails the check; the fingerprint binds it to the request's query and
filters (and namespace); a search cursor also carries the index generation it was cut from.

A page is serialized as compact JSON (`dumps`), and `PageBudget` keeps its size, cursor
included, within the request's `max_bytes`."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from typing import Any

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import canonical_json

MAX_CURSOR_CHARS = 4096
_TAG_BYTES = 16


def dumps(document: Any) -> str:
    """The serialization `max_bytes` is measured on: compact, UTF-8, keys in their order."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def size_of(document: Any) -> int:
    return len(dumps(document).encode("utf-8"))


def fingerprint(document: Any) -> str:
    return hashlib.sha256(canonical_json(document).encode("utf-8")).hexdigest()[:32]


def encode(secret: bytes, payload: dict[str, Any]) -> str:
    body = canonical_json(payload).encode("utf-8")
    tag = hmac.new(secret, body, hashlib.sha256).digest()[:_TAG_BYTES]
    return base64.urlsafe_b64encode(tag + body).decode("ascii").rstrip("=")


_FOREIGN = (
    "The cursor is not one this store issued, or it was altered (cursors are opaque: pass "
    "next_cursor back unchanged, to the same store). Drop it to start from the first page."
)


def decode(secret: bytes, cursor: str, *, kind: str, bound_to: str) -> dict[str, Any]:
    """The payload of a cursor this store issued for the same kind of request and the same
    query and filters; anything else is MEMORY_CURSOR_INVALID with the reason."""
    if not cursor or len(cursor) > MAX_CURSOR_CHARS:
        raise MemoryFailure("MEMORY_CURSOR_INVALID", _FOREIGN)
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (binascii.Error, ValueError) as exc:
        raise MemoryFailure("MEMORY_CURSOR_INVALID", _FOREIGN) from exc
    tag, body = raw[:_TAG_BYTES], raw[_TAG_BYTES:]
    expected = hmac.new(secret, body, hashlib.sha256).digest()[:_TAG_BYTES]
    if len(tag) != _TAG_BYTES or not hmac.compare_digest(tag, expected):
        raise MemoryFailure("MEMORY_CURSOR_INVALID", _FOREIGN)
    try:
        payload = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:  # pragma: no cover - MAC'd
        raise MemoryFailure("MEMORY_CURSOR_INVALID", _FOREIGN) from exc
    if not isinstance(payload, dict) or payload.get("k") != kind:
        other = payload.get("k") if isinstance(payload, dict) else None
        raise MemoryFailure(
            "MEMORY_CURSOR_INVALID",
            f"This is a {other} cursor; a {kind} request only takes the next_cursor of a "
            f"previous {kind} page. Drop it to start from the first page.",
        )
    if payload.get("f") != bound_to:
        raise MemoryFailure(
            "MEMORY_CURSOR_INVALID",
            f"The cursor belongs to another {kind}: pass the same namespace, query and "
            "filters (tag, topic, since_ms, until_ms"
            + (", expand, expansion_terms" if kind == "search" else "")
            + ") as the first page (limit and max_bytes may change), or drop the cursor.",
        )
    return payload


class PageBudget:
    """Items of a page, with their serialized sizes, checked against `max_bytes`.

    A page is `{"items": [...], <tail>}`; its compact size is computed from the parts, so
    adding an item costs the item's own serialization, not the whole page's."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.items: list[dict[str, Any]] = []
        self._item_bytes = 0

    def size(self, tail: dict[str, Any], extra: int | None = None) -> int:
        count = len(self.items) + (extra is not None)
        items = self._item_bytes + (extra or 0) + max(count - 1, 0)
        # '{"items":[' + items + '],' + tail without its leading '{'
        return len('{"items":[') + items + len("],") + size_of(tail) - 1

    def try_add(self, item: dict[str, Any], tail: dict[str, Any]) -> bool:
        """Add `item` if the page with it and `tail` (cursor included) fits."""
        cost = size_of(item)
        if self.size(tail, cost) > self.max_bytes:
            return False
        self.items.append(item)
        self._item_bytes += cost
        return True

    def page(self, tail: dict[str, Any]) -> dict[str, Any]:
        return {"items": list(self.items), **tail}

    def too_large(self, needed: int, what: str) -> MemoryFailure:
        return MemoryFailure(
            "MEMORY_RESPONSE_TOO_LARGE",
            f"max_bytes is {self.max_bytes}, but {what} takes {needed} bytes as compact JSON "
            "(cursor included). Raise max_bytes to at least that; nothing is cut silently.",
        )
