"""The server backend from the command line: `status` says which backend ranks, recall's
JSON still validates exactly against seed 001 (tests/conftest.py checks every result), and
asking for the server backend where it cannot be had is a clear error."""

from __future__ import annotations

from typing import Any


def test_status_and_recall_on_the_server_backend(cli: Any, pg_url: str) -> None:
    status = cli("--db", pg_url, "status", "--json")
    assert status.returncode == 0, status.stderr
    assert status.doc["database"] == "postgresql"
    assert status.doc["retrieval"]["backend"] == "postgres"
    assert "lexical" in status.doc["retrieval"]["capabilities"]
    added = cli(
        "--db", pg_url, "remember", "alice drinks green tea", "--scope", "s", "--add", "--json"
    )
    assert added.doc["outcome"] == "added"
    cli("--db", pg_url, "remember", "zebra tea", "--scope", "other", "--add", "--json")
    recalled = cli("--db", pg_url, "recall", "tea", "--scope", "s", "--max-facts", "1", "--json")
    assert [f["text"] for f in recalled.doc["facts"]] == ["alice drinks green tea"]
    assert recalled.doc["retrieval"]["mode"] == "lexical"  # no model in CLI tests


def test_the_server_backend_asked_for_on_sqlite_is_a_clear_error(cli: Any) -> None:
    env = cli.env(GNO_TUI_RETRIEVAL="postgres")
    result = cli("recall", "tea", "--scope", "s", "--json", env=env)
    assert result.returncode == 2
    assert result.error["code"] == "MEMORY_QUERY_FAILED"
    assert "postgresql://" in result.error["message"]
    memory = cli("status", "--json", env=cli.env(GNO_TUI_RETRIEVAL="memory"))
    assert memory.doc["retrieval"]["backend"] == "in-memory"
