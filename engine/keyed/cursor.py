"""Cursors and byte budgets of the keyed API (engine/keyed/service.py, docs/keyed-api.md).

A cursor is opaque base64url: a 16-byte HMAC-SHA256 tag, then canonical JSON
`{"k": kind, "f": fingerprint, "p": position, ...}`. The tag is keyed by a per-store secret
(`<home>/.keyed-secret`, created on first use with 0600 permissions), so an altered cursor or
one from another store fails the check; the fingerprint binds it to the request's query and
filters (and namespace); a search cursor also carries the index generation it was cut from.

A page is serialized as compact JSON (`dumps`), and `PageBudget` keeps its size, cursor
included, within the request's `max_bytes`."""

from __future__ import annotations

import base64
import binascii
import contextlib
import errno
import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import canonical_json

SECRET_FILE = ".keyed-secret"
# The cursor keys of read-only homes, for this process only (store_secret).
_PROCESS_SECRETS: dict[str, bytes] = {}
MAX_CURSOR_CHARS = 4096
_TAG_BYTES = 16


def dumps(document: Any) -> str:
    """The serialization `max_bytes` is measured on: compact, UTF-8, keys in their order."""
    return json.dumps(document, ensure_ascii=False, separators=(",", ":"))


def size_of(document: Any) -> int:
    return len(dumps(document).encode("utf-8"))


def store_secret(home: Path) -> bytes:
    """The store's cursor key, made on first use. Created whole or not at all (a temp file
    hard-linked into place), so racing processes all end up reading the same secret. A home
    this process may not write (or whose secret it may not read) has none it can keep: this
    process's own then, so its cursors hold for as long as it runs."""
    path = Path(home) / SECRET_FILE
    for _ in range(50):
        try:
            value = path.read_text(encoding="ascii").strip()
        except FileNotFoundError:
            value = ""
        except PermissionError:
            return _PROCESS_SECRETS.setdefault(str(path), secrets.token_bytes(32))
        if len(value) == 64:
            return bytes.fromhex(value)
        if not path.exists():
            temp = path.with_name(f"{SECRET_FILE}.{os.getpid()}.{secrets.token_hex(4)}")
            try:
                descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except OSError as exc:
                if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                    raise
                return _PROCESS_SECRETS.setdefault(str(path), secrets.token_bytes(32))
            try:
                with os.fdopen(descriptor, "w", encoding="ascii") as out:
                    out.write(secrets.token_hex(32) + "\n")
                    out.flush()
                    os.fsync(out.fileno())
                with contextlib.suppress(FileExistsError):  # another process won: read it
                    os.link(temp, path)
            finally:
                temp.unlink(missing_ok=True)
            continue
        raise MemoryFailure(
            "MEMORY_INTERNAL",
            f"The cursor secret {path} is not 64 hex digits. Remove it (cursors issued "
            "before become invalid) and run the request again.",
        )
    raise MemoryFailure("MEMORY_INTERNAL", f"Could not create the cursor secret {path}.")


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
