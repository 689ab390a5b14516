"""Identity and normalisation rules of docs/contract.md section 4, shared by every surface."""

import hashlib
import itertools
import json
import os
import re
import threading
import unicodedata
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from functools import lru_cache
from typing import Any

from engine.contract.errors import MemoryFailure

MAX_TEXT_BYTES = 4096
# How deeply arrays and objects may nest in any JSON a surface receives (keyed requests and
# their metadata, receipts, import lines): deeper input is refused before anything recurses.
MAX_JSON_DEPTH = 32
MAX_SCOPES = 8
MAX_SCOPE_CHARS = 64
POLICIES = ("local_only", "lan", "remote")
POLICY_SOURCES = ("explicit", "config_default", "legacy_default")
# Strictest first: a recall's lineage is the first of these that any returned fact carries.
POLICY_STRICTNESS = {"local_only": 0, "lan": 1, "remote": 2}

_WHITESPACE_RUN = re.compile(r"\s+")
_COLLECTION_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")
_RECORD_ID = re.compile(r"^mem-[0-9a-f]{16}$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_SCOPE_EXTRA_CHARS = set("._:/@-")


def canonical_json(value: Any) -> str:
    """UTF-8-safe JSON with sorted keys and no whitespace: the input of every digest."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def digest_of(value: Any) -> str:
    return sha256_hex(canonical_json(value))


def collapse_text(text: str) -> str:
    """NFC, whitespace runs collapsed to one space, trimmed: what the content hash is taken of."""
    return _WHITESPACE_RUN.sub(" ", unicodedata.normalize("NFC", text)).strip()


def content_hash(text: str) -> str:
    return sha256_hex(collapse_text(text))


def check_utf8(value: str, what: str) -> str:
    """`value` if it encodes as UTF-8; else MEMORY_TEXT_INVALID naming `what` (e.g. "The fact
    text", "--caller") and the first bad character: a byte that did not decode (Python keeps
    it as a surrogate escape, U+DC80..U+DCFF) or a lone surrogate from a JSON \\u escape."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = ord(value[exc.start])
        detail = (
            f"the byte 0x{bad - 0xDC00:02X} at character {exc.start + 1} is not UTF-8"
            if 0xDC80 <= bad <= 0xDCFF
            else f"it holds a lone surrogate U+{bad:04X} at character {exc.start + 1}"
        )
        raise MemoryFailure(
            "MEMORY_TEXT_INVALID",
            f"{what} is not valid UTF-8 text: {detail}. Pass UTF-8 (use a UTF-8 locale, or "
            "re-encode the input, e.g. `iconv -f latin1 -t utf-8`; in JSON, escape whole "
            "characters, never half a surrogate pair).",
        ) from None
    return value


# Characters that show nothing: zero-width and other format characters (category Cf: ZWSP,
# ZWJ, soft hyphen, BOM, bidi marks, word joiner...), controls (Cc) and a few letters and
# marks that render blank (Hangul fillers, the Braille blank, variation selectors, CGJ).
_BLANK_EXTRA = frozenset(
    "\u034f\u115f\u1160\u17b4\u17b5\u180b\u180c\u180d\u180e\u180f\u2800\u3164\uffa0"
    + "".join(chr(c) for c in range(0xFE00, 0xFE10))
)


def is_invisible(ch: str) -> bool:
    """A character that shows nothing and is not whitespace."""
    if ch in _BLANK_EXTRA or 0xE0100 <= ord(ch) <= 0xE01EF:  # variation selectors supplement
        return True
    return unicodedata.category(ch) in ("Cc", "Cf")


def has_visible(text: str) -> bool:
    return any(not ch.isspace() and not is_invisible(ch) for ch in text)


def clean_text(text: str | None, *, max_bytes: int = MAX_TEXT_BYTES) -> str:
    """The text as stored: NFC and trimmed (inner newlines kept), validated for encoding,
    content (at least one visible character) and size (`max_bytes`: the keyed API allows
    larger contents and checks its own limit first)."""
    collapsed = collapse_text(text) if text is not None else ""
    if text is None or not collapsed:
        raise MemoryFailure(
            "MEMORY_TEXT_REQUIRED",
            "The fact text is empty. Pass the fact as the TEXT argument, e.g. "
            "gno-tui remember 'Alice prefers tea' --scope user:alice.",
        )
    check_utf8(text, "The fact text")
    if not has_visible(text):
        raise MemoryFailure(
            "MEMORY_TEXT_REQUIRED",
            "The fact text has no visible character: it is only whitespace, control (e.g. NUL) "
            "or zero-width characters. Pass the fact itself, e.g. "
            "gno-tui remember 'Alice prefers tea' --scope user:alice.",
        )
    size = len(collapsed.encode("utf-8"))
    if size > max_bytes:
        raise MemoryFailure(
            "MEMORY_TEXT_TOO_LARGE",
            f"The fact is {size} bytes after normalisation; the limit is {max_bytes}. "
            "Split it into smaller facts, one statement each.",
        )
    return unicodedata.normalize("NFC", text).strip()


# -- the fence form: what a person would read as the same text ----------------------------------
#
# Letters of other scripts that look like Latin ones (Cyrillic and Greek, a few Armenian and
# IPA), and typographic quotes and dashes, mapped before casefolding (so that Greek capital Eta
# is H while small eta is n). A small hand list of the common confusables, not all of UTS #39.
_CONFUSABLES = str.maketrans(
    {
        # Cyrillic capitals, then small letters
        **dict(zip("АВЕЅІЈКМНОРСТХУҮҺӀԚԜ", "ABESIJKMHOPCTXYYHIQW", strict=True)),
        **dict(zip("аеѕіјорсхуүһӏԁԛԝ", "aesijopcxyyhldqw", strict=True)),
        # Greek capitals, then small letters
        **dict(zip("ΑΒΕΖΗΙΚΜΝΟΡΤΥΧϜ", "ABEZHIKMNOPTYXF", strict=True)),
        **dict(zip("αβεικνορτυχγω", "abeiknoptuxyw", strict=True)),
        # Armenian and Latin look-alikes
        **dict(zip("օսհոıɑɡʏ", "ouhniagy", strict=True)),
        # quotes and dashes
        **dict.fromkeys("‘’‚‛′ʼ`´", "'"),
        **dict.fromkeys("“”„‟″«»", '"'),
        **dict.fromkeys("‐‑‒–—―−⁃", "-"),
    }
)


def _is_edge(ch: str) -> bool:
    """Punctuation, quotes and modifier symbols (` ^), stripped from the ends of a fence form."""
    category = unicodedata.category(ch)
    return ch.isspace() or category[0] == "P" or category == "Sk"


@lru_cache(maxsize=8192)
def fence_form(text: str) -> str:
    """The text as the replay fence compares it (docs/contract.md section 5): NFKC (fullwidth,
    ligatures, compatibility spaces), invisible characters removed (zero-width, soft hyphen,
    BOM, bidi marks, controls), Cyrillic/Greek look-alikes and typographic quotes and dashes
    mapped to ASCII, casefolded, whitespace runs collapsed, and punctuation and quotes stripped
    from both ends. Two texts with the same form read as the same sentence."""
    form = unicodedata.normalize("NFKC", text)
    form = "".join(" " if ch.isspace() else "" if is_invisible(ch) else ch for ch in form)
    form = unicodedata.normalize("NFKC", form.translate(_CONFUSABLES).casefold())
    form = _WHITESPACE_RUN.sub(" ", form)
    start, end = 0, len(form)
    while start < end and _is_edge(form[start]):
        start += 1
    while end > start and _is_edge(form[end - 1]):
        end -= 1
    return form[start:end]


# -- JSON depth ---------------------------------------------------------------------------------


def json_depth(value: Any, *, limit: int | None = None) -> int:
    """How deeply arrays and objects nest in `value` (a scalar is 0, `[]` is 1), counted
    without recursion; the count stops once it passes `limit`."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Iterable[Any] = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if limit is not None and deepest > limit:
            break
        stack.extend((child, depth + 1) for child in children)
    return deepest


def too_deep(what: str, code: str, limit: int = MAX_JSON_DEPTH) -> MemoryFailure:
    return MemoryFailure(
        code,
        f"{what} nests arrays and objects too deep; at most {limit} levels are allowed. "
        "Flatten it (e.g. store a nested document as a string or a reference).",
    )


def check_json_depth(value: Any, *, what: str, code: str, limit: int = MAX_JSON_DEPTH) -> Any:
    """`value` if it nests at most `limit` deep; else `code` (a MEMORY_*_INVALID)."""
    if json_depth(value, limit=limit) > limit:
        raise too_deep(what, code, limit)
    return value


def loads_bounded(text: str, *, what: str, code: str, **options: Any) -> Any:
    """json.loads, but input nested deeper than MAX_JSON_DEPTH is `code` (a RecursionError in
    the decoder included); a JSONDecodeError (a ValueError) is left to the caller."""
    try:
        value = json.loads(text, **options)
    except RecursionError:
        raise too_deep(what, code) from None
    return check_json_depth(value, what=what, code=code)


def _is_scope(scope: str) -> bool:
    if not scope or len(scope) > MAX_SCOPE_CHARS or not scope[0].isalnum():
        return False
    return all(ch.isalnum() or ch in _SCOPE_EXTRA_CHARS for ch in scope)


def normalize_scopes(scopes: Iterable[str] | None) -> list[str]:
    """Trim, lowercase, NFC, deduplicate (first occurrence wins); 1..8 scopes in the grammar."""
    cleaned: list[str] = []
    for raw in scopes or []:
        if not isinstance(raw, str):
            raise MemoryFailure("MEMORY_SCOPES_INVALID", f"Scope {raw!r} is not a string.")
        scope = unicodedata.normalize("NFC", raw.strip().lower())
        if not _is_scope(scope):
            raise MemoryFailure(
                "MEMORY_SCOPES_INVALID",
                f"Scope {raw!r} is malformed: a scope starts with a letter or digit, then up to 63 "
                "letters, digits or . _ : / @ - (e.g. user:alice, project/gno).",
            )
        if scope not in cleaned:
            cleaned.append(scope)
    if not cleaned:
        raise MemoryFailure(
            "MEMORY_SCOPES_REQUIRED",
            "At least one scope is required (there is no global scope). Add --scope, "
            "e.g. --scope user:alice.",
        )
    if len(cleaned) > MAX_SCOPES:
        raise MemoryFailure(
            "MEMORY_SCOPES_INVALID",
            f"{len(cleaned)} distinct scopes given; at most {MAX_SCOPES} are allowed. "
            "Drop the broadest ones.",
        )
    return cleaned


def check_collection_name(name: str) -> str:
    if not isinstance(name, str) or not _COLLECTION_NAME.match(name):
        raise MemoryFailure(
            "MEMORY_COLLECTION_INVALID",
            f"Collection name {name!r} is invalid: use 1-64 lowercase letters, digits, _ or -, "
            "starting with a letter or digit (e.g. work-notes).",
        )
    return name


def check_policy(policy: str) -> str:
    if policy not in POLICIES:
        raise MemoryFailure(
            "MEMORY_POLICY_INVALID",
            f"Egress policy {policy!r} is unknown; use one of {', '.join(POLICIES)}.",
        )
    return policy


def check_identity(caller: str | None, session: str | None) -> tuple[str, str]:
    for label, value in (("caller", caller), ("session", session)):
        if value is None or not value.strip():
            raise MemoryFailure(
                "MEMORY_IDENTITY_REQUIRED",
                f"The {label} is empty. Pass --{label} ID or set $GNO_TUI_{label.upper()}.",
            )
        check_utf8(value, f"The {label} (--{label} or $GNO_TUI_{label.upper()})")
    assert caller is not None and session is not None
    return caller.strip(), session.strip()


def is_record_id(value: str) -> bool:
    return bool(_RECORD_ID.match(value))


def is_sha256(value: str) -> bool:
    return isinstance(value, str) and bool(_SHA256.match(value))


class _RandomIds:
    """Random bytes for record ids, drawn from the OS 4 KiB at a time. One os.urandom call per
    id was a tenth of a 100k import: each call is a system call, and each gave the GIL to the
    import's row inserts and waited to get it back. A child made by fork starts with an empty
    pool, so parent and child never hand out the same ids."""

    SIZE = 4096

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool = b""
        self._used = 0

    def take(self) -> bytes:
        with self._lock:
            if self._used + 8 > len(self._pool):
                self._pool, self._used = os.urandom(self.SIZE), 0
            self._used += 8
            return self._pool[self._used - 8 : self._used]

    def forget(self) -> None:
        self._lock = threading.Lock()
        self._pool, self._used = b"", 0


_RANDOM_IDS = _RandomIds()
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_RANDOM_IDS.forget)


def new_record_id() -> str:
    """A fresh record id: `mem-` and 16 hex digits from the OS's random source (64 bits, so
    two writers of the same text in the same millisecond still get distinct files). The
    default id generator of a MemoryEngine (`ids=`); the engine mints ids only through it."""
    return "mem-" + _RANDOM_IDS.take().hex()


def counted_record_ids(seed: str = "") -> Callable[[], str]:
    """A reproducible record-id generator, for `open_engine(ids=...)` in tests and the demo:
    the n-th id (n from 1) is `mem-` + the first 16 hex of sha256(seed + n), so the ids
    spread like random ones and their docids (the first 8 hex) rarely collide."""
    counter = itertools.count(1)
    return lambda: "mem-" + sha256_hex(f"{seed}{next(counter)}")[:16]


def fact_uri(collection: str, day: str, record_id: str) -> str:
    return f"gno://{collection}/facts/{day}/{record_id}.md"


def utc_now() -> datetime:
    """Now, truncated to milliseconds so that it survives an ISO round trip exactly."""
    now = datetime.now(UTC)
    return now.replace(microsecond=now.microsecond // 1000 * 1000)


def iso_utc(moment: datetime) -> str:
    """ISO 8601 in UTC with milliseconds and a Z, as JavaScript's toISOString writes it."""
    # isoformat is C code (strftime and an f-string were 3 % of a bulk import); its year is
    # four digits, as JavaScript's.
    return moment.astimezone(UTC).isoformat(timespec="milliseconds")[:-6] + "Z"


def parse_iso(value: str) -> datetime:
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def estimate_tokens(text: str) -> int:
    return -(-len(text.encode("utf-8")) // 4)
