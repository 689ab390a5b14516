"""The façade's keyed memory API (seed 003 requests, instantKV-shaped responses)."""

from __future__ import annotations

from typing import Any

from engine.contract.normalize import check_utf8
from engine.facade.namespace import Namespace
from engine.keyed import requests, service


class KeyedApi(Namespace):
    @staticmethod
    def parse_request(text: str, *, where: str = "the request") -> Any:
        """A request as JSON text (NaN and Infinity refused), not yet validated."""
        return requests.parse_request_json(text, where=where)

    def remember(
        self,
        request: Any,
        *,
        namespace: str | None = None,
        caller: str = service.DEFAULT_CALLER,
        session: str = service.DEFAULT_CALLER,
    ) -> dict[str, Any]:
        return service.remember(
            self._engine, request, namespace=namespace, caller=caller, session=session
        )

    def recall(self, request: Any, *, namespace: str | None = None) -> dict[str, Any]:
        return service.recall(self._engine, request, namespace=namespace)

    def search(self, request: Any, *, namespace: str | None = None) -> dict[str, Any]:
        return service.search(self._engine, request, namespace=namespace)

    def get(self, key: str, *, namespace: str | None = None) -> dict[str, Any]:
        self._check_names(key, namespace)
        return service.get(self._engine, key, namespace=namespace)

    def history(self, key: str, *, namespace: str | None = None) -> dict[str, Any]:
        self._check_names(key, namespace)
        return service.history(self._engine, key, namespace=namespace)

    @staticmethod
    def _check_names(key: str, namespace: str | None) -> None:
        """A key or namespace that is not UTF-8 can name nothing stored: say so, clearly."""
        check_utf8(key, "The key")
        if namespace is not None:
            check_utf8(namespace, "The namespace")

    def propose(
        self,
        request: Any,
        *,
        namespace: str | None = None,
        caller: str,
        session: str,
        origin: str = "mcp",
    ) -> dict[str, Any]:
        """A keyed remember on a propose-only surface: queued for a person, not written. The
        held result (schemas/keyed-memory-held.schema.json), or the stored hit of a retried
        create. Accepting the proposal in review (`curation.decide`, action add) writes it."""
        return service.propose(
            self._engine, request, namespace=namespace, caller=caller, session=session,
            origin=origin,
        )  # fmt: skip

    @staticmethod
    def scope(namespace: str | None = None) -> str:
        """The scope a namespace's keyed memories carry (`kv:<namespace>`, `kv:default`)."""
        return requests.namespace_scope(namespace)[1]
