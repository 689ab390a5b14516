"""What every store command does before its verb: open the store (a database that cannot be
reached said as such, passwords hidden) and read what the command line hands in as text
(arguments, stdin, a receipt file) strictly as UTF-8 and bounded JSON.

Split from gno_tui.commands so that gno_tui.cli_transfer and gno_tui.commands share it
without importing each other. The store's code (database, model, index) loads inside
open_store, when a command opens the store, not with this module."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from engine.facade import MemoryFailure
from gno_tui.cli_io import hide_password, read_stdin_bytes

if TYPE_CHECKING:
    from engine.facade import MemoryService, RecallService

Opened = TypeVar("Opened")

# How long a serving process (`gno-tui mcp`, `gno-tui serve`) waits at start for a database
# server that is down, starting up or out of connection slots, before it exits with the error.
SERVER_START_PATIENCE = 60.0
# How deeply arrays and objects may nest in a receipt file (as in every JSON the engine takes).
MAX_JSON_DEPTH = 32
# Options that name files or URLs: bytes that are not UTF-8 are legal in a POSIX path.
_PATH_OPTIONS = frozenset({"home", "db", "model", "path", "output", "request", "receipt"})


def _is_database_error(exc: BaseException) -> bool:
    """Raised by the database layer (SQLAlchemy, psycopg, sqlite3): the store, not the input."""
    return any(
        cls.__module__.split(".")[0] in ("sqlalchemy", "psycopg", "sqlite3", "_sqlite3")
        for cls in type(exc).__mro__
    )


def open_store(args: argparse.Namespace, *, reading: bool = False) -> MemoryService:
    """`reading`: the command only reads (it need not wait for a process creating a new home)."""
    from engine.facade import open_service

    return _opened(
        lambda: open_service(home=args.home, db_url=args.db, model=args.model, reading=reading),
        args,
    )


def open_store_patiently(args: argparse.Namespace, program: str) -> MemoryService:
    """open_store for `gno-tui mcp`: a database server restarting as it starts is waited for
    (SERVER_START_PATIENCE), as `gno-tui serve` waits for it."""
    from engine.facade import open_service_patiently

    url = args.db or os.environ.get("GNO_TUI_DB") or ""
    return _opened(
        lambda: open_service_patiently(
            said_once(program, url),
            patience=SERVER_START_PATIENCE,
            home=args.home,
            db_url=args.db,
            model=args.model,
        ),
        args,
    )


def said_once(program: str, url: str) -> Callable[[MemoryFailure, float], None]:
    """The line a serving process writes to stderr, once, when it starts waiting for the
    database server (the pauses that follow say nothing: the operator knows)."""
    said = False

    def waiting(failure: MemoryFailure, seconds_left: float) -> None:
        nonlocal said
        if not said:
            said = True
            sys.stderr.write(
                f"gno-tui {program}: waiting up to {seconds_left:.0f} s for the database "
                f"server {hide_password(url)}: {_without_password(failure.message, url)}\n"
            )
            sys.stderr.flush()

    return waiting


def open_recall(args: argparse.Namespace) -> RecallService:
    """The store for a call that only recalls or proposes: on a sound SQLite home it reads
    through sqlite3 and loads no ORM (engine.facade.open_recall_service)."""
    from engine.facade import open_recall_service

    return _opened(
        lambda: open_recall_service(home=args.home, db_url=args.db, model=args.model), args
    )


def _opened(opener: Callable[[], Opened], args: argparse.Namespace) -> Opened:
    try:
        return opener()
    except Exception as exc:
        url = args.db or os.environ.get("GNO_TUI_DB") or ""
        if isinstance(exc, MemoryFailure):
            if url and exc.code == "MEMORY_QUERY_FAILED":
                message = exc.message
                if hide_password(url) not in message:  # the server's answer names no URL
                    message += f" (database: {hide_password(url)})"
                raise MemoryFailure(exc.code, _without_password(message, url)) from None
            raise
        if not _is_database_error(exc):
            raise
        detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        if not url:  # the home's own SQLite file: no server or URL to check
            raise MemoryFailure(
                "MEMORY_QUERY_FAILED",
                f"Cannot open the SQLite index of the home {args.home or 'in use'} "
                f"(index.sqlite): {detail}. Check that this user can read and write the home "
                "folder and its index.sqlite files, and that its disk works; `gno-tui reindex` "
                "rebuilds the index from the fact files.",
            ) from None
        raise MemoryFailure(
            "MEMORY_QUERY_FAILED",
            _without_password(
                f"Cannot reach the index database {hide_password(url)}: {detail}. Check that "
                "the database server is running and the URL (--db or $GNO_TUI_DB) is right, or "
                "leave --db out to use the SQLite index in the home.",
                url,
            ),
        ) from None


def _without_password(message: str, url: str) -> str:
    from urllib.parse import unquote, urlsplit

    message = message.replace(url, hide_password(url))
    try:
        password = urlsplit(url).password
    except ValueError:
        return message
    for secret in {password, unquote(password)} if password else set():
        message = message.replace(secret, "***")
    return message


def check_text_arguments(args: argparse.Namespace) -> None:
    """Text options (not paths) must be UTF-8; a byte that is not arrives as a surrogate."""
    for dest, value in vars(args).items():
        if dest in _PATH_OPTIONS:
            continue
        for item in value if isinstance(value, list) else [value]:
            if not isinstance(item, str):
                continue
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                flag = {
                    "text": "TEXT",
                    "query": "QUERY",
                    "scopes": "--scope",
                    "allow_scopes": "--allow-scope",
                }.get(dest, "--" + dest.replace("_", "-"))
                raise MemoryFailure(
                    "MEMORY_TEXT_INVALID",
                    f"{flag} is not valid UTF-8 text: character {exc.start + 1} is a byte that "
                    "does not decode. Pass UTF-8 (use a UTF-8 locale, or re-encode the input, "
                    "e.g. `iconv -f latin1 -t utf-8`).",
                ) from None


def stdin_text(what: str, code: str, fix: str) -> str:
    """stdin decoded as strict UTF-8; bytes that are not are `code`, saying where and how."""
    data = read_stdin_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryFailure(
            code,
            f"{what} is not valid UTF-8: byte 0x{data[exc.start]:02X} at offset {exc.start} "
            f"does not decode. {fix}",
        ) from None


def _json_depth_over(value: Any, limit: int) -> bool:
    """Does `value` nest arrays and objects deeper than `limit`? (No recursion.)"""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            if depth > limit:
                return True
            stack.extend((child, depth + 1) for child in item)
    return False


def read_receipt(path: str | None) -> Any:
    if path is None:
        return None
    fix = "Pass the saved output of `gno-tui recall ... --json` (UTF-8 JSON) or its receipt."
    try:
        data = read_stdin_bytes() if path == "-" else Path(path).read_bytes()
    except OSError as exc:
        raise MemoryFailure(
            "MEMORY_RECEIPT_INVALID",
            f"Cannot read the receipt file {path}: {exc.strerror}. Save a recall "
            "with `gno-tui recall ... --json > receipt.json` and pass that file.",
        ) from exc
    try:
        raw = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MemoryFailure(
            "MEMORY_RECEIPT_INVALID",
            f"The receipt file {path} is not UTF-8 (byte 0x{data[exc.start]:02X} at offset "
            f"{exc.start}). {fix}",
        ) from None
    try:
        receipt = json.loads(raw)
    except RecursionError:
        raise MemoryFailure(
            "MEMORY_RECEIPT_INVALID",
            f"The receipt file {path} nests arrays and objects too deep. {fix}",
        ) from None
    except json.JSONDecodeError as exc:
        raise MemoryFailure(
            "MEMORY_RECEIPT_INVALID",
            f"The receipt file {path} is not JSON ({exc.msg} at line {exc.lineno}). Pass the "
            "saved output of `gno-tui recall ... --json` or its receipt object.",
        ) from exc
    if _json_depth_over(receipt, MAX_JSON_DEPTH):
        raise MemoryFailure(
            "MEMORY_RECEIPT_INVALID",
            f"The receipt file {path} nests arrays and objects more than {MAX_JSON_DEPTH} "
            f"deep. {fix}",
        )
    if not isinstance(receipt, dict):
        # A `null` would otherwise read as "no receipt" and silently skip the fence.
        raise MemoryFailure(
            "MEMORY_RECEIPT_INVALID",
            f"The receipt file {path} holds JSON {type(receipt).__name__}, not an object. Pass "
            "the saved output of `gno-tui recall ... --json` or its receipt object.",
        )
    return receipt
