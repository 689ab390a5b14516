"""Error codes of the memory contract and the CLI exit code each maps to."""

from typing import Any

# Codes that mean "someone else got there first": retrying after a refresh may succeed.
CONFLICT_CODES = frozenset(
    {
        "MEMORY_SUPERSEDE_CONFLICT",
        "MEMORY_WRITE_LEASE_BUSY",
        "MEMORY_KEY_EXISTS",
        "MEMORY_REVISION_CONFLICT",
        "MEMORY_REQUEST_CONFLICT",
    }
)
# Codes that mean the store, not the caller's input, is at fault.
FAILURE_CODES = frozenset(
    {
        "MEMORY_SYNC_FAILED",
        "MEMORY_QUERY_FAILED",
        "MEMORY_INTERNAL",
        "MEMORY_HOME_READ_ONLY",
        "MEMORY_HOME_DAMAGED",
    }
)

ERROR_CODES = frozenset(
    {
        "MEMORY_TEXT_REQUIRED",
        "MEMORY_TEXT_TOO_LARGE",
        "MEMORY_QUERY_REQUIRED",
        "MEMORY_BUDGET_INVALID",
        "MEMORY_COLLECTION_NOT_FOUND",
        "MEMORY_COLLECTION_INVALID",
        "MEMORY_POLICY_INVALID",
        "MEMORY_SCOPES_REQUIRED",
        "MEMORY_SCOPES_INVALID",
        "MEMORY_IDENTITY_REQUIRED",
        "MEMORY_DECISION_INVALID",
        "MEMORY_PREDECESSOR_REQUIRED",
        "MEMORY_PREDECESSOR_NOT_FOUND",
        "MEMORY_PREDECESSOR_HASH_MISMATCH",
        "MEMORY_SUPERSEDE_CONFLICT",
        "MEMORY_FENCED_REPLAY",
        "MEMORY_FENCED_DERIVED",
        "MEMORY_RECEIPT_INVALID",
        "MEMORY_WRITE_LEASE_BUSY",
        "MEMORY_SYNC_FAILED",
        "MEMORY_QUERY_FAILED",
        "MEMORY_NOT_FOUND",
        "MEMORY_PROPOSAL_NOT_FOUND",
        "MEMORY_PROPOSAL_DECIDED",
        "MEMORY_USAGE_INVALID",
        "MEMORY_IMPORT_INVALID",
        "MEMORY_INTERNAL",
        # Undo and redo in the workbench (engine/curation/undo.py).
        "MEMORY_NOTHING_TO_UNDO",
        "MEMORY_UNDO_UNSUPPORTED",
        "MEMORY_NOTHING_TO_REDO",
        # The keyed API (engine/keyed/service.py, docs/contract.md section 8).
        "MEMORY_REQUEST_INVALID",
        "MEMORY_KEY_INVALID",
        "MEMORY_CONTENT_TOO_LARGE",
        "MEMORY_TAGS_INVALID",
        "MEMORY_TOPIC_INVALID",
        "MEMORY_METADATA_TOO_LARGE",
        "MEMORY_QUERY_TOO_LARGE",
        "MEMORY_EXPANSION_INVALID",
        "MEMORY_RANGE_INVALID",
        "MEMORY_CURSOR_INVALID",
        "MEMORY_CURSOR_STALE",
        "MEMORY_RESPONSE_TOO_LARGE",
        "MEMORY_KEY_NOT_FOUND",
        "MEMORY_KEY_EXISTS",
        "MEMORY_REVISION_CONFLICT",
        # Text that is not valid UTF-8 (undecodable bytes, lone surrogates): fact text, stdin,
        # --caller, --session, --source (engine/contract/normalize.py check_utf8).
        "MEMORY_TEXT_INVALID",
        # A call naming a scope outside those an MCP server was bound to (`--allow-scope`).
        "MEMORY_SCOPE_FORBIDDEN",
        # Writes sent with a requestId (engine/access/write_requests.py).
        "MEMORY_REQUEST_CONFLICT",
        "MEMORY_REQUEST_NOT_FOUND",
        # The network server (gno_tui/http): no or unknown token, a grant the token lacks, a
        # Host or Origin a loopback server does not serve, a body too large or too slow.
        "MEMORY_AUTH_REQUIRED",
        "MEMORY_GRANT_MISSING",
        "MEMORY_ORIGIN_FORBIDDEN",
        "MEMORY_REQUEST_TOO_LARGE",
        "MEMORY_REQUEST_TIMEOUT",
        # Backup and restore (engine/storage/backup.py): a backup that is missing, damaged or
        # of a newer gno-tui; a restore aimed at a home or database that holds a store.
        "MEMORY_BACKUP_INVALID",
        "MEMORY_STORE_NOT_EMPTY",
        # The home (engine/storage/embedded/home.py): a --home that cannot be a store's folder
        # (exit 1); a home this process may not write (exit 2: reads still work); a collections.yaml
        # that does not parse or lists a collection wrongly (exit 2, naming the line).
        "MEMORY_HOME_INVALID",
        "MEMORY_HOME_READ_ONLY",
        "MEMORY_HOME_DAMAGED",
    }
)


class MemoryFailure(Exception):
    """A contract error: a code from ERROR_CODES and a message that says how to fix it."""

    def __init__(self, code: str, message: str) -> None:
        if code not in ERROR_CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message

    def to_json(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}

    @property
    def exit_code(self) -> int:
        return exit_code_for(self.code)


class ServerUnavailable(MemoryFailure):
    """MEMORY_QUERY_FAILED for a database server that is down, starting up, out of connection
    slots, or that lost the connection: the same call may succeed later, unlike a refused login
    or a failed statement."""

    def __init__(self, message: str) -> None:
        super().__init__("MEMORY_QUERY_FAILED", message)


def exit_code_for(code: str) -> int:
    if code in CONFLICT_CODES:
        return 4
    if code in FAILURE_CODES:
        return 2
    return 1
