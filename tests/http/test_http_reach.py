"""A token's reach beyond recall: its egress ceiling on every verb, the keyed scopes kept to
--namespace, an open loopback server that still asks relayed requests for a token, request
ids holding a slash."""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path

import pytest
from http_harness import (
    CONSOLE_SCRIPT,
    SharedServer,
    child_env,
    cli,
    error_code,
    make_token,
    serve,
)
from mcp_over_http import call, mcp_session, structured_error

REMEMBER = "/api/memory/remember"


async def test_an_egress_ceiling_keeps_local_only_collections_out_of_every_verb(
    shared: SharedServer,
) -> None:
    secret = f"The alarm code is 4711 {uuid.uuid4().hex[:6]}"
    with shared.server.client(shared.writer) as http:
        stored = http.post(REMEMBER, json={"text": secret, "scopes": ["team:a"], "decision": "add"})
        assert stored.status_code == 201, stored.text
    uri = stored.json()["record"]["uri"]
    laptop = make_token(
        shared.home,
        f"laptop-{uuid.uuid4().hex[:6]}",
        "team:a",
        namespaces=["default"],
        egress="lan",
    )
    with shared.server.client(laptop) as http:
        # A propose in the local_only collection would answer `existing` with the text.
        asked = http.post(REMEMBER, json={"text": secret, "scopes": ["team:a"]})
        assert error_code(asked, 403) == "MEMORY_GRANT_MISSING"
        assert secret not in asked.text and "lan" in asked.json()["error"]["message"]
        keyed = http.get("/v1/namespaces/default/records")
        assert error_code(keyed, 403) == "MEMORY_GRANT_MISSING"
    async with mcp_session(shared.server, laptop) as session:
        propose = await call(session, "gno_remember", {"text": secret, "scopes": ["team:a"]})
        assert structured_error(propose) == "MEMORY_GRANT_MISSING"
        assert secret not in json.dumps(propose.structured_content)
        with pytest.raises(Exception) as refused:
            await session.read_resource(uri)
        assert secret not in str(refused.value)
        proposals = await session.read_resource("gno://review/proposals")
        assert secret not in str(proposals)
    # The same token reaches a collection the person opened to the LAN.
    cli(shared.home, "collection", "add", "shared-notes", "--policy", "lan")
    with shared.server.client(laptop) as http:
        body = {"text": secret, "scopes": ["team:a"], "collection": "shared-notes"}
        assert http.post(REMEMBER, json=body).status_code == 200


def test_kv_scopes_are_granted_by_namespace_only(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = subprocess.run(
        [
            str(CONSOLE_SCRIPT),
            *("--home", str(home), "token", "create", "sneaky", "--scope", "kv:notes", "--json"),
        ],
        env=child_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"]["code"] == "MEMORY_SCOPES_INVALID"
    assert "--namespace" in done.stdout


def test_an_open_loopback_server_asks_relayed_requests_for_a_token(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with serve(home, "--no-auth") as server, server.client() as http:
        body = {"query": "anything", "scopes": ["team:a"]}
        assert http.post("/api/memory/recall", json=body).status_code == 200
        relayed = http.post(
            "/api/memory/recall", json=body, headers={"X-Forwarded-For": "203.0.113.9"}
        )
        assert error_code(relayed, 401) == "MEMORY_AUTH_REQUIRED"
    refused = subprocess.run(
        [
            str(CONSOLE_SCRIPT),
            *("--home", str(home), "serve", "--no-auth", "--port", "0"),
            *("--allow-host", "memory.example"),
        ],
        env=child_env(home),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1 and "MEMORY_USAGE_INVALID" in refused.stderr


def test_a_request_id_with_a_slash_can_be_looked_up(shared: SharedServer) -> None:
    request_id = f"agent/{uuid.uuid4().hex[:8]}"
    text = f"Looked up by a slashed id {request_id}"
    with shared.server.client(shared.writer) as http:
        body = {"text": text, "scopes": ["team:a"], "decision": "add", "requestId": request_id}
        assert http.post(REMEMBER, json=body).status_code == 201
        status = http.get(f"/api/requests/{request_id}")
        assert status.status_code == 200, status.text
        assert status.json()["result"]["record"]["text"] == text
