"""The façade's keyed memory API (seed 003 requests, instantKV-shaped responses)."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from engine.contract.normalize import check_utf8
from engine.facade.namespace import Namespace
from engine.keyed import requests, service

if TYPE_CHECKING:
    from engine.contract.results import (
        KeyedHeld,
        KeyedHistoryResponse,
        KeyedHit,
        KeyedRecallResponse,
        KeyedRequest,
        KeyedSearchResponse,
    )

# The keyed service builds each answer as dict[str, Any] and validates it against its schema
# (schemas/keyed-memory-*.schema.json) before it returns: the casts below name that shape.


class KeyedApi(Namespace):
    def remember(
        self,
        request: KeyedRequest,
        *,
        namespace: str | None = None,
        caller: str = service.DEFAULT_CALLER,
        session: str = service.DEFAULT_CALLER,
    ) -> KeyedHit:
        return cast(
            "KeyedHit",
            service.remember(
                self._engine, request, namespace=namespace, caller=caller, session=session
            ),
        )

    def put(
        self,
        request: KeyedRequest,
        *,
        namespace: str | None = None,
        caller: str = service.DEFAULT_CALLER,
        session: str = service.DEFAULT_CALLER,
    ) -> tuple[KeyedHit, bool]:
        """`remember`, and whether it wrote a revision (False: a retried create answered with
        the stored head)."""
        return cast(
            "tuple[KeyedHit, bool]",
            service.put(self._engine, request, namespace=namespace, caller=caller, session=session),
        )

    def retire(
        self,
        key: str,
        *,
        namespace: str | None = None,
        actor: str,
        reason: str,
        if_revision: int | None = None,
    ) -> None:
        """Take the key's live head out of get, recall and search (HTTP DELETE): it is retired
        as a person retires a fact (logged, with `reason`; the file and every revision stay,
        `history` lists them, a restore brings it back), and the key is free for its next
        revision. With `if_revision`, only while that is the head's revision
        (MEMORY_REVISION_CONFLICT); MEMORY_KEY_NOT_FOUND without a live head."""
        from engine.curation import review  # it imports engine.keyed.service

        self._check_names(key, namespace)
        engine = self._engine
        with engine.write_lock():  # the check and the retire under one hold
            uri = service.head_to_retire(engine, key, namespace=namespace, if_revision=if_revision)
            review.retire(engine, ref=uri, actor=actor, reason=reason)

    def recall(self, request: KeyedRequest, *, namespace: str | None = None) -> KeyedRecallResponse:
        return cast(
            "KeyedRecallResponse", service.recall(self._engine, request, namespace=namespace)
        )

    def search(self, request: KeyedRequest, *, namespace: str | None = None) -> KeyedSearchResponse:
        return cast(
            "KeyedSearchResponse", service.search(self._engine, request, namespace=namespace)
        )

    def get(self, key: str, *, namespace: str | None = None) -> KeyedHit:
        self._check_names(key, namespace)
        return cast("KeyedHit", service.get(self._engine, key, namespace=namespace))

    def history(self, key: str, *, namespace: str | None = None) -> KeyedHistoryResponse:
        self._check_names(key, namespace)
        return cast("KeyedHistoryResponse", service.history(self._engine, key, namespace=namespace))

    @staticmethod
    def _check_names(key: str, namespace: str | None) -> None:
        """A key or namespace that is not UTF-8 can name nothing stored: say so, clearly."""
        check_utf8(key, "The key")
        if namespace is not None:
            check_utf8(namespace, "The namespace")

    def propose(
        self,
        request: KeyedRequest,
        *,
        namespace: str | None = None,
        caller: str,
        session: str,
        origin: str = "mcp",
    ) -> KeyedHeld | KeyedHit:
        """A keyed remember on a propose-only surface: queued for a person, not written. The
        held result (schemas/keyed-memory-held.schema.json), or the stored hit of a retried
        create. Accepting the proposal in review (`curation.decide`, action add) writes it."""
        held = service.propose(
            self._engine, request, namespace=namespace, caller=caller, session=session,
            origin=origin,
        )  # fmt: skip
        return cast("KeyedHeld | KeyedHit", held)

    @staticmethod
    def scope(namespace: str | None = None) -> str:
        """The scope a namespace's keyed memories carry (`kv:<namespace>`, `kv:default`)."""
        return requests.namespace_scope(namespace)[1]
