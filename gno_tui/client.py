"""A typed Python client of `gno-tui serve` (docs/server.md): what an agent on another machine
uses instead of the database URL.

    from gno_tui.client import MemoryClient, MemoryClientError

    with MemoryClient("http://127.0.0.1:8765", token) as memory:
        result = memory.remember("Alice prefers tea", ["user:alice"], decision="add")
        facts = memory.recall("what does alice drink", ["user:alice"])["facts"]

Results are the server's JSON (the seed results for remember and recall); a refused request
raises `MemoryClientError` with the contract's code, message and HTTP status. Every add and
supersede carries a requestId (a new UUID unless given), so the client resends it once when
the connection drops before an answer, and the server applies it at most once; keyed writes
(`put`, `delete`) are sent once. Standard library
only (http.client), one keep-alive connection per client; a client is not shared between
threads without its lock, which it takes itself."""

from __future__ import annotations

import http.client
import json
import threading
import uuid
from types import TracebackType
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

JsonObject = dict[str, Any]


class MemoryClientError(Exception):
    """A request the server refused (or could not be reached): `code` is the contract's."""

    def __init__(self, code: str, message: str, status: int) -> None:
        super().__init__(f"{code} ({status}): {message}")
        self.code = code
        self.message = message
        self.status = status


class MemoryClient:
    def __init__(self, url: str, token: str | None = None, *, timeout: float = 30.0) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{url!r} is not an http(s) URL of a gno-tui server")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")
        self._token = token
        self._timeout = timeout
        self._lock = threading.Lock()
        self._connection: http.client.HTTPConnection | None = None

    # -- GNO's memory routes ------------------------------------------------------------

    def remember(
        self,
        text: str,
        scopes: list[str] | None = None,
        *,
        decision: str | None = None,
        predecessor_uri: str | None = None,
        predecessor_hash: str | None = None,
        collection: str | None = None,
        source: str | None = None,
        receipt: JsonObject | None = None,
        derived_from: str | None = None,
        request_id: str | None = None,
    ) -> JsonObject:
        """The memory-remember@1.0 result. Without the token's write grant an add or
        supersede is held for a person (outcome `candidates`)."""
        body = _present(
            text=text,
            scopes=scopes,
            decision=decision,
            predecessorUri=predecessor_uri,
            predecessorHash=predecessor_hash,
            collection=collection,
            source=source,
            receipt=receipt,
            derivedFrom=derived_from,
        )
        if decision in ("add", "supersede"):
            body["requestId"] = request_id or str(uuid.uuid4())
        elif request_id is not None:
            body["requestId"] = request_id
        return self._call("POST", "/api/memory/remember", body, retry="requestId" in body)

    def recall(
        self,
        query: str,
        scopes: list[str],
        *,
        max_facts: int | None = None,
        max_tokens: int | None = None,
        collection: str | None = None,
        egress: str | None = None,
    ) -> JsonObject:
        """The memory-recall@1.0 result; its receipt is stored by the server."""
        body = _present(
            query=query,
            scopes=scopes,
            maxFacts=max_facts,
            maxTokens=max_tokens,
            collection=collection,
            egress=egress,
        )
        return self._call("POST", "/api/memory/recall", body, retry=True)

    def request_status(self, request_id: str) -> JsonObject:
        """What became of a write sent with `request_id` (MEMORY_REQUEST_NOT_FOUND if none)."""
        return self._call("GET", f"/api/requests/{quote(request_id, safe='')}", retry=True)

    # -- the keyed API --------------------------------------------------------------------

    def get(self, namespace: str, key: str) -> JsonObject:
        return self._call("GET", self._record(namespace, key), retry=True)

    def put(
        self,
        namespace: str,
        key: str,
        memory: JsonObject,
        *,
        if_revision: int | None = None,
        create_only: bool = False,
        ttl_seconds: int | None = None,
    ) -> JsonObject:
        """Save `memory` ({content, tags?, topic?, metadata?, occurred_at_ms?}) under `key`:
        an update of revision `if_revision`, or (create_only) only if the key is new."""
        headers = {}
        if if_revision is not None:
            headers["If-Match"] = f'"{if_revision}"'
        if create_only:
            headers["If-None-Match"] = "*"
        body = _present(memory=memory, ttl_seconds=ttl_seconds)
        return self._call("PUT", self._record(namespace, key), body, headers=headers)

    def delete(self, namespace: str, key: str, *, if_revision: int | None = None) -> None:
        headers = {"If-Match": f'"{if_revision}"'} if if_revision is not None else {}
        self._call("DELETE", self._record(namespace, key), headers=headers)

    def list(self, namespace: str, **query: Any) -> JsonObject:
        """A page of the namespace's memories, newest first (cursor=..., limit=..., ...)."""
        given = {name: value for name, value in query.items() if value is not None}
        suffix = f"?{urlencode(given)}" if given else ""
        return self._call("GET", f"{self._namespace(namespace)}/records{suffix}", retry=True)

    def keyed_recall(self, namespace: str, request: JsonObject) -> JsonObject:
        """A seed-003 MemoryQuery, unchanged."""
        return self._call("POST", f"{self._namespace(namespace)}/recall", request, retry=True)

    def search(self, namespace: str, request: JsonObject) -> JsonObject:
        """A seed-003 SearchQuery, unchanged."""
        return self._call("POST", f"{self._namespace(namespace)}/search", request, retry=True)

    # -- the server ---------------------------------------------------------------------

    def health(self) -> JsonObject:
        return self._call("GET", "/healthz", retry=True)

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    def __enter__(self) -> MemoryClient:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- the wire -------------------------------------------------------------------------

    def _namespace(self, namespace: str) -> str:
        return f"/v1/namespaces/{quote(namespace, safe='')}"

    def _record(self, namespace: str, key: str) -> str:
        return f"{self._namespace(namespace)}/records/{quote(key, safe='')}"

    def _connect(self) -> http.client.HTTPConnection:
        if self._connection is None:
            kind = (
                http.client.HTTPSConnection
                if self._scheme == "https"
                else http.client.HTTPConnection
            )
            self._connection = kind(self._host, self._port, timeout=self._timeout)
        return self._connection

    def _call(
        self,
        method: str,
        path: str,
        body: JsonObject | None = None,
        *,
        headers: dict[str, str] | None = None,
        retry: bool = False,
    ) -> JsonObject:
        sent = {"Accept": "application/json", **(headers or {})}
        if self._token:
            sent["Authorization"] = f"Bearer {self._token}"
        payload = None
        if body is not None:
            payload = json.dumps(body, ensure_ascii=False).encode("utf-8")
            sent["Content-Type"] = "application/json"
        with self._lock:
            for attempt in (1, 2):
                try:
                    connection = self._connect()
                    connection.request(method, self._prefix + path, payload, sent)
                    response = connection.getresponse()
                    status, raw = response.status, response.read()
                    break
                except (OSError, http.client.HTTPException) as exc:
                    if self._connection is not None:
                        self._connection.close()
                        self._connection = None
                    if attempt == 2 or not retry:
                        raise MemoryClientError(
                            "MEMORY_CONNECTION_FAILED",
                            f"{method} {path}: {type(exc).__name__}: {exc}. Is the server "
                            "running at that address?",
                            0,
                        ) from exc
        if status == 204 or not raw:
            return {}
        try:
            document = json.loads(raw)
        except ValueError:
            raise MemoryClientError(
                "MEMORY_INTERNAL", f"{method} {path} answered {status} without JSON", status
            ) from None
        if status >= 400:
            error = document.get("error", {}) if isinstance(document, dict) else {}
            raise MemoryClientError(
                str(error.get("code", "MEMORY_INTERNAL")), str(error.get("message", "")), status
            )
        return document if isinstance(document, dict) else {"items": document}


def _present(**fields: Any) -> JsonObject:
    return {name: value for name, value in fields.items() if value is not None}
