"""The Python client (gno_tui.client.MemoryClient) against a real server, and the HTTP form of
`gno-tui mcp --print-config` that connects an agent host to one."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
from http_harness import CONSOLE_SCRIPT, SharedServer, assert_valid, child_env

from gno_tui.client import MemoryClient, MemoryClientError


def test_the_client_remembers_and_recalls_the_seed_results(shared: SharedServer) -> None:
    text = f"The client writes fact {uuid.uuid4().hex[:8]}"
    with MemoryClient(shared.server.url, shared.writer) as memory:
        added = assert_valid("remember", memory.remember(text, ["team:a"], decision="add"))
        assert added["outcome"] == "added" and added["record"]["caller"] == "http:writer"
        again = memory.remember(text, ["team:a"], decision="add")
        assert again["outcome"] == "existing"
        recalled = assert_valid("recall", memory.recall(text, ["team:a"], max_facts=3))
        assert text in [fact["text"] for fact in recalled["facts"]]
        assert memory.health()["status"] == "ok"


def test_a_retried_write_is_answered_once_and_can_be_looked_up(shared: SharedServer) -> None:
    text = f"Written once by request id {uuid.uuid4().hex[:8]}"
    request_id = str(uuid.uuid4())
    with MemoryClient(shared.server.url, shared.writer) as memory:
        first = memory.remember(text, ["team:a"], decision="add", request_id=request_id)
        second = memory.remember(text, ["team:a"], decision="add", request_id=request_id)
        assert first == second and first["outcome"] == "added"
        status = assert_valid("request_status", memory.request_status(request_id))
        assert status["status"] == 201 and status["result"] == first


def test_refusals_raise_the_contract_code_and_status(shared: SharedServer) -> None:
    with MemoryClient(shared.server.url, shared.outsider) as memory:
        with pytest.raises(MemoryClientError) as refused:
            memory.recall("anything", ["team:a"])
        assert (refused.value.code, refused.value.status) == ("MEMORY_SCOPE_FORBIDDEN", 403)
        with pytest.raises(MemoryClientError) as unknown:
            memory.request_status("never-sent")
        assert (unknown.value.code, unknown.value.status) == ("MEMORY_REQUEST_NOT_FOUND", 404)
    with MemoryClient(shared.server.url, "gno_not-a-token") as memory:
        with pytest.raises(MemoryClientError) as anonymous:
            memory.recall("anything", ["team:a"])
        assert (anonymous.value.code, anonymous.value.status) == ("MEMORY_AUTH_REQUIRED", 401)


def test_a_server_that_is_not_there_is_a_coded_error() -> None:
    with MemoryClient("http://127.0.0.1:9", "gno_x", timeout=5) as memory:
        with pytest.raises(MemoryClientError) as failed:
            memory.health()
        assert failed.value.code == "MEMORY_CONNECTION_FAILED" and failed.value.status == 0


def _print_config(home: Path, client: str, url: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            str(CONSOLE_SCRIPT),
            "--home",
            str(home),
            "mcp",
            "--print-config",
            client,
            "--http",
            "--url",
            url,
        ],
        env=child_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_print_config_http_names_the_url_and_never_a_token(tmp_path: Path) -> None:
    url = "https://memory.example/mcp"
    done = _print_config(tmp_path / "home", "json", url)
    assert done.returncode == 0, done.stderr
    entry = json.loads(done.stdout)["mcpServers"]["gno-memory"]
    assert entry == {
        "type": "http",
        "url": url,
        "headers": {"Authorization": "Bearer ${GNO_TUI_TOKEN}"},
    }
    claude = _print_config(tmp_path / "home", "claude-code", url).stdout
    assert claude.startswith("claude mcp add --transport http --scope user gno-memory " + url)
    assert '--header "Authorization: Bearer $GNO_TUI_TOKEN"' in claude
    codex = _print_config(tmp_path / "home", "codex", url).stdout
    assert f'url = "{url}"' in codex and 'bearer_token_env_var = "GNO_TUI_TOKEN"' in codex
    assert "${env:GNO_TUI_TOKEN}" in _print_config(tmp_path / "home", "cursor", url).stdout
    refused = _print_config(tmp_path / "home", "json", "memory.example/mcp")
    assert refused.returncode == 1 and "MEMORY_USAGE_INVALID" in refused.stderr
