"""The façade's keyed memory API (seed 003 requests, instantKV-shaped responses)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.facade.namespace import Namespace
from engine.keyed import requests, service

if TYPE_CHECKING:
    pass


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
        return service.get(self._engine, key, namespace=namespace)

    def history(self, key: str, *, namespace: str | None = None) -> dict[str, Any]:
        return service.history(self._engine, key, namespace=namespace)
