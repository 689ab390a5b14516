"""Bearer tokens: made once, stored as digests, checked on every request, revoked at once.

A token is 256 random bits (`gno_` + URL-safe base64); only its SHA-256 is stored, so the
database, a backup or a log of it never holds a usable secret. A slow hash buys nothing for a
random 256-bit secret. A revocation made by any process is refused by every server at its
next request: on PostgreSQL each check reads the row; on SQLite a server keeps the grants it
verified while a stamp file beside the index is unchanged (GrantCache, below)."""

from __future__ import annotations

import hashlib
import re
import secrets
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import POLICY_STRICTNESS, check_utf8, normalize_scopes
from engine.keyed.requests import namespace_scope
from engine.storage.queries import access as access_queries
from engine.storage.schema import tables
from engine.storage.store import MemoryEngine

TOKEN_PREFIX = "gno_"
_NAME = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,63}$")
PRINCIPAL_PREFIX = "http:"


@dataclass(frozen=True)
class Grant:
    """What one token may do. `scopes` bound every read and write of the gno and OB1 routes
    (as `mcp --allow-scope` binds an MCP server); `namespaces` are the keyed API's."""

    token_id: str
    name: str
    scopes: tuple[str, ...]
    namespaces: tuple[str, ...]
    can_write: bool
    can_curate: bool
    egress: str = "local_only"  # the ceiling of its recalls (POLICIES' order)

    @property
    def caller(self) -> str:
        """Who the store records as the writer of this token's facts."""
        return PRINCIPAL_PREFIX + self.name


@dataclass(frozen=True)
class TokenInfo:
    """A token as `token list` shows it: never the token, never its digest."""

    id: str
    name: str
    scopes: list[str]
    namespaces: list[str]
    can_write: bool
    can_curate: bool
    egress: str
    created_at: str
    created_by: str
    revoked_at: str | None


def digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def check_name(name: str) -> str:
    check_utf8(name, "The token name")
    if not _NAME.match(name):
        raise MemoryFailure(
            "MEMORY_REQUEST_INVALID",
            f"The token name {name[:80]!r} is not a name: use 1 to 64 lowercase letters, "
            "digits, '.', '_' or '-', starting with a letter or digit (e.g. ci-bot).",
        )
    return name


def _namespaces(given: Iterable[str]) -> list[str]:
    found: list[str] = []
    for namespace in given:
        name = namespace_scope(check_utf8(namespace, "The namespace"))[0]
        if name not in found:
            found.append(name)
    return sorted(found)


def create(
    engine: MemoryEngine,
    name: str,
    *,
    scopes: Iterable[str],
    namespaces: Iterable[str] = (),
    can_write: bool = False,
    can_curate: bool = False,
    egress: str = "local_only",
    actor: str,
) -> tuple[str, TokenInfo]:
    """A new token for `name` (the token, shown once, and what was stored). A name may hold
    one live token at a time: revoke the old one to replace it."""
    check_name(name)
    given = list(scopes)
    bound = normalize_scopes(given) if given else []
    if reserved := [scope for scope in bound if scope.startswith("kv:")]:
        raise MemoryFailure(
            "MEMORY_SCOPES_INVALID",
            f"{', '.join(reserved)}: kv:<namespace> scopes hold the keyed API's memories; "
            "grant them with --namespace NAME instead of --scope.",
        )
    keyed = _namespaces(namespaces)
    if not bound and not keyed:
        raise MemoryFailure(
            "MEMORY_SCOPES_REQUIRED",
            "A token needs at least one --scope (facts it may read and write) or --namespace "
            "(keyed memories), e.g. `gno-tui token create ci-bot --scope project:gno`.",
        )
    if egress not in POLICY_STRICTNESS:
        raise MemoryFailure(
            "MEMORY_POLICY_INVALID",
            f"--egress {str(egress)[:40]!r} is not a policy: use local_only (no ceiling), lan "
            "or remote (only facts whose collection may leave for there).",
        )
    token = TOKEN_PREFIX + secrets.token_urlsafe(32)
    with engine.write_lock(), engine.session(expire_on_commit=False) as session:
        live = access_queries.live_token_named(session, name)
        if live is not None:
            raise MemoryFailure(
                "MEMORY_KEY_EXISTS",
                f"The token name {name!r} already has a live token (id {live.id}). Revoke it "
                f"first (`gno-tui token revoke {name}`) or choose another name.",
            )
        row = tables.ApiTokenRow(
            id=secrets.token_hex(6),
            name=name,
            digest=digest(token),
            scopes=bound,
            namespaces=keyed,
            can_write=can_write,
            can_curate=can_curate,
            egress=egress,
            created_at=engine.now(),
            created_by=actor,
        )
        session.add(row)
        session.commit()
        _touch_stamp(engine)
        return token, _info(row)


def verify(engine: MemoryEngine, token: str) -> Grant | None:
    """The grant of a live token; None for an unknown or revoked one. One indexed read per
    request (engine/storage/queries/access.py says why it is a Core read)."""
    if not token.startswith(TOKEN_PREFIX) or len(token) > 200:
        return None
    row = access_queries.live_grant_row(engine.db, digest(token))
    if row is None:
        return None
    return Grant(
        token_id=row.id,
        name=row.name,
        scopes=tuple(row.scopes),
        namespaces=tuple(row.namespaces),
        can_write=bool(row.can_write),
        can_curate=bool(row.can_curate),
        egress=row.egress,
    )


def listing(engine: MemoryEngine, *, include_revoked: bool = False) -> list[TokenInfo]:
    with engine.session() as session:
        rows = access_queries.tokens_by_name(session, include_revoked=include_revoked)
        return [_info(row) for row in rows]


def revoke(engine: MemoryEngine, ref: str, *, actor: str) -> TokenInfo:
    """Revoke the live token named `ref` (or with id `ref`): refused at once by every server."""
    check_utf8(ref, "The token name or id")
    with engine.write_lock(), engine.session(expire_on_commit=False) as session:
        rows = access_queries.live_tokens(session)
        row = next((r for r in rows if r.name == ref), None) or next(
            (r for r in rows if r.id == ref), None
        )
        if row is None:
            raise MemoryFailure(
                "MEMORY_NOT_FOUND",
                f"No live token is named {ref[:80]!r} or has that id. `gno-tui token list` "
                "shows the live ones.",
            )
        row.revoked_at = engine.now()
        row.revoked_by = actor
        session.add(row)
        session.commit()
        _touch_stamp(engine)  # after the commit: a server that re-reads then finds it revoked
        return _info(row)


def _info(row: tables.ApiTokenRow) -> TokenInfo:
    from engine.contract.normalize import iso_utc

    assert row.created_at is not None
    return TokenInfo(
        id=row.id,
        name=row.name,
        scopes=list(row.scopes),
        namespaces=list(row.namespaces),
        can_write=row.can_write,
        can_curate=row.can_curate,
        egress=row.egress,
        created_at=iso_utc(row.created_at),
        created_by=row.created_by,
        revoked_at=iso_utc(row.revoked_at) if row.revoked_at else None,
    )


# -- the embedded mode's cache of live grants -------------------------------------------------
#
# A server answers many requests per token, and one read of the token's row (plus the worker
# thread it runs in) was a fifth of an HTTP write's CPU. On a SQLite store every process
# that makes or revokes a token replaces a stamp file beside the index after its commit; a
# server keeps the grants it verified while the stamp is the one it saw, and drops them all
# when it changes. Checking the stamp is one stat, so a revocation by any process still holds
# at the next request. On PostgreSQL (servers on many machines share no folder) every request
# reads the row.

STAMP_FILE = ".tokens-stamp"
_CACHED_GRANTS = 1024  # tokens kept per process; more are read each time


def _stamp_path(engine: MemoryEngine) -> Path | None:
    index = engine.sqlite_path
    return None if index is None else index.parent / STAMP_FILE


def _touch_stamp(engine: MemoryEngine) -> None:
    path = _stamp_path(engine)
    if path is None:
        return
    try:
        temporary = path.with_name(f"{STAMP_FILE}.{secrets.token_hex(4)}")
        temporary.write_text(secrets.token_hex(16), encoding="utf-8")
        temporary.replace(path)  # whole at once: a reader never sees it half written
    except OSError as exc:
        raise MemoryFailure(
            "MEMORY_SYNC_FAILED",
            f"The token change is stored, but {path} could not be replaced ({exc}), so a "
            "running `gno-tui serve` on this store may still accept a revoked token: restart "
            "it, and make the folder writable.",
        ) from exc


def _stamp(path: Path) -> str | None:
    """The stamp's random contents (a file's inode and time can repeat after a quick
    replace; 64 random bits do not)."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None


class GrantCache:
    """Live grants this process verified, valid while the stamp file is unchanged."""

    def __init__(self, engine: MemoryEngine) -> None:
        self._engine = engine
        self._path = _stamp_path(engine)
        self._guard = threading.Lock()
        self._seen: str | None = None
        self._grants: dict[str, Grant] = {}

    def cached(self, token: str) -> Grant | None:
        """The grant, if verified since the last change of any token (no database read)."""
        if self._path is None:
            return None
        stamp = _stamp(self._path)
        with self._guard:
            if stamp != self._seen:
                self._grants.clear()
                self._seen = stamp
                return None
            return self._grants.get(digest(token))

    def verify(self, token: str) -> Grant | None:
        """The grant of a live token, from the cache or the database (then kept)."""
        if self._path is None:
            return verify(self._engine, token)
        stamp = _stamp(self._path)  # before the read: a change after it drops what it finds
        grant = verify(self._engine, token)
        with self._guard:
            if stamp != self._seen:
                self._grants.clear()
                self._seen = stamp
            if grant is not None and len(self._grants) < _CACHED_GRANTS:
                self._grants[digest(token)] = grant
        return grant
