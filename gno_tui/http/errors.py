"""The HTTP status of each contract error. The body is always {"error": {"code", "message"}},
the same object the CLI prints with --json and MCP returns as a tool error."""

from __future__ import annotations

from starlette.responses import JSONResponse

from engine.facade import MemoryFailure

_STATUS: dict[str, int] = {
    "MEMORY_AUTH_REQUIRED": 401,
    "MEMORY_GRANT_MISSING": 403,
    "MEMORY_SCOPE_FORBIDDEN": 403,
    "MEMORY_ORIGIN_FORBIDDEN": 403,
    "MEMORY_COLLECTION_NOT_FOUND": 404,
    "MEMORY_PREDECESSOR_NOT_FOUND": 404,
    "MEMORY_KEY_NOT_FOUND": 404,
    "MEMORY_NOT_FOUND": 404,
    "MEMORY_PROPOSAL_NOT_FOUND": 404,
    "MEMORY_REQUEST_NOT_FOUND": 404,
    "MEMORY_REQUEST_TIMEOUT": 408,
    "MEMORY_SUPERSEDE_CONFLICT": 409,
    "MEMORY_PREDECESSOR_HASH_MISMATCH": 409,
    "MEMORY_WRITE_LEASE_BUSY": 409,
    "MEMORY_KEY_EXISTS": 409,
    "MEMORY_REVISION_CONFLICT": 409,
    "MEMORY_REQUEST_CONFLICT": 409,
    "MEMORY_PROPOSAL_DECIDED": 409,
    "MEMORY_CURSOR_STALE": 409,
    "MEMORY_REQUEST_TOO_LARGE": 413,
    "MEMORY_INTERNAL": 500,
    "MEMORY_SYNC_FAILED": 503,
    "MEMORY_QUERY_FAILED": 503,
    "MEMORY_HOME_READ_ONLY": 503,
    "MEMORY_HOME_DAMAGED": 503,
}


# Codes whose cause passes by itself (a database restarting, a connection slot or a lock
# freed): the answer says when to try again (RFC 9110 10.2.3), so a client's retry loop
# need not guess. The others wait for a person (a read-only or damaged home, a full disk).
_RETRY_AFTER_SECONDS = {"MEMORY_QUERY_FAILED": 2}


def status_for(code: str) -> int:
    """The status of an error code: 400 (the caller's input) unless listed above."""
    return _STATUS.get(code, 400)


def error_response(failure: MemoryFailure) -> JSONResponse:
    headers: dict[str, str] = {}
    if failure.code == "MEMORY_AUTH_REQUIRED":
        headers["WWW-Authenticate"] = "Bearer"
    if failure.code == "MEMORY_REQUEST_TIMEOUT":
        # The rest of a slow body is not waited for: the connection ends with the answer
        # (RFC 9110 15.5.9), rather than staying open to a client that holds it.
        headers["Connection"] = "close"
    if failure.code in _RETRY_AFTER_SECONDS:
        headers["Retry-After"] = str(_RETRY_AFTER_SECONDS[failure.code])
    return JSONResponse(failure.to_json(), status_code=status_for(failure.code), headers=headers)
