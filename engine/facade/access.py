"""The façade's network access: bearer tokens and writes done at most once (engine/access)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import cached_property
from typing import TYPE_CHECKING, TypeVar

from engine.access import tokens, write_requests
from engine.access.tokens import Grant, GrantCache, TokenInfo
from engine.access.write_requests import RequestRecord
from engine.facade.namespace import Namespace

if TYPE_CHECKING:
    from engine.contract.results import JsonValue

# The answer of a write done at most once: a JSON object (a remember result, a keyed hit...).
Answer = TypeVar("Answer", bound=Mapping[str, object])


class AccessApi(Namespace):
    def create_token(
        self,
        name: str,
        *,
        scopes: Iterable[str],
        namespaces: Iterable[str] = (),
        can_write: bool = False,
        can_curate: bool = False,
        egress: str = "local_only",
        actor: str,
    ) -> tuple[str, TokenInfo]:
        """A new token (shown once: only its digest is stored) and what it grants."""
        return tokens.create(
            self._engine, name, scopes=scopes, namespaces=namespaces, can_write=can_write,
            can_curate=can_curate, egress=egress, actor=actor,
        )  # fmt: skip

    def tokens(self, *, include_revoked: bool = False) -> list[TokenInfo]:
        return tokens.listing(self._engine, include_revoked=include_revoked)

    def revoke_token(self, ref: str, *, actor: str) -> TokenInfo:
        return tokens.revoke(self._engine, ref, actor=actor)

    def verify_token(self, token: str) -> Grant | None:
        """The grant of a live token; None when unknown or revoked. A revocation by any
        process holds at the next call (tokens.GrantCache says how, on SQLite, without a
        read each time)."""
        return self._grants.verify(token)

    def cached_grant(self, token: str) -> Grant | None:
        """The grant of a token verified before and unchanged since, without reading the
        database (a file's stat on SQLite); None: ask `verify_token`."""
        return self._grants.cached(token)

    @cached_property
    def _grants(self) -> GrantCache:
        return GrantCache(self._engine)

    def once(
        self,
        *,
        caller: str,
        request_id: str,
        verb: str,
        body: JsonValue,
        run: Callable[[], Answer],
        status: Callable[[Answer], int] | None = None,
    ) -> tuple[Answer, bool]:
        """`run()` applied at most once per (caller, request_id): (result, replayed); a
        replay answers the JSON stored from the first `run()`. `body`: what identifies the
        request (without its id). `status`: the HTTP status of the answer, kept for a replay
        and `request`."""
        return write_requests.once(
            self._engine, caller=caller, request_id=request_id, verb=verb, body=body, run=run,
            status=status,
        )  # fmt: skip

    def request(self, *, caller: str, request_id: str) -> RequestRecord:
        """What became of a write `caller` sent with `request_id` (MEMORY_REQUEST_NOT_FOUND)."""
        return write_requests.lookup(self._engine, caller=caller, request_id=request_id)

    @staticmethod
    def check_request_id(request_id: object) -> str:
        return write_requests.check_request_id(request_id)
