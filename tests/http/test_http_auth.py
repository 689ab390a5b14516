"""Who may reach the server and what it may see: the bearer token (none, unknown, revoked by
another process), the token's scopes (nothing of another scope shows through any answer),
its write grant (propose-only writes wait for a person), the caller it fixes (http:NAME,
whatever the body says), the token kept out of the database, the log and the listing; the
Host and Origin checks, --no-auth only on loopback, a slow body answered 408 and a slow or
silent request head closed, while the server goes on serving others."""

from __future__ import annotations

import socket
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pg_homes
import pytest
from http_harness import (
    CONSOLE_SCRIPT,
    SharedServer,
    assert_valid,
    child_env,
    cli,
    error_code,
    make_token,
    serve,
)
from mcp.shared.exceptions import MCPError
from mcp_over_http import call, mcp_session, structured_error, structured_ok

REMEMBER = "/api/memory/remember"
RECALL = "/api/memory/recall"


def recall_body(*scopes: str, query: str = "anything") -> dict[str, Any]:
    return {"query": query, "scopes": list(scopes)}


# -- the token ---------------------------------------------------------------------------


def test_no_token_is_401_with_a_bearer_challenge(shared: SharedServer) -> None:
    with shared.server.client() as http:
        response = http.post(RECALL, json=recall_body("team:a"))
        assert error_code(response, 401) == "MEMORY_AUTH_REQUIRED"
        assert response.headers["www-authenticate"] == "Bearer"
        basic = http.post(
            RECALL, json=recall_body("team:a"), headers={"Authorization": "Basic d3JpdGVyOng="}
        )
        assert error_code(basic, 401) == "MEMORY_AUTH_REQUIRED"


@pytest.mark.parametrize(
    "token",
    ["gno_" + "A" * 43, "not-a-gno-token", "gno_" + "x" * 500],
    ids=["unknown", "not a token", "overlong"],
)
def test_an_unknown_token_is_401(shared: SharedServer, token: str) -> None:
    with shared.server.client(token) as http:
        response = http.post(RECALL, json=recall_body("team:a"))
    assert error_code(response, 401) == "MEMORY_AUTH_REQUIRED"
    assert response.headers["www-authenticate"] == "Bearer"


async def test_a_token_revoked_by_another_process_is_refused_at_its_next_request(
    shared: SharedServer,
) -> None:
    token = make_token(shared.home, "short-lived", "team:a", write=True)
    with shared.server.client(token) as http:
        assert http.post(RECALL, json=recall_body("team:a")).status_code == 200
        async with mcp_session(shared.server, token) as session:
            structured_ok(await call(session, "gno_recall", recall_body("team:a")), "recall")
            revoked = cli(shared.home, "token", "revoke", "short-lived")
            assert revoked["revokedAt"] is not None
            # The open MCP session's next request is refused too (the SDK reports the 401
            # as an error response).
            with pytest.raises(MCPError):
                await call(session, "gno_recall", recall_body("team:a"))
        response = http.post(RECALL, json=recall_body("team:a"))
        assert error_code(response, 401) == "MEMORY_AUTH_REQUIRED"
        write = http.post(
            REMEMBER, json={"text": "After revocation", "scopes": ["team:a"], "decision": "add"}
        )
        assert error_code(write, 401) == "MEMORY_AUTH_REQUIRED"


# -- the token's scopes ------------------------------------------------------------------


async def test_nothing_of_another_scope_shows_through_any_answer(shared: SharedServer) -> None:
    secret = "Launch codename for the harbour project is Bluebird"
    held = "Held plan: the harbour project moves to Kestrel"
    with shared.server.client(shared.writer) as http:
        added = http.post(
            REMEMBER,
            json={"text": secret, "scopes": ["team:a"], "decision": "add",
                  "requestId": "harbour-secret"},
        )  # fmt: skip
    assert added.status_code == 201, added.text
    record = added.json()["record"]
    with shared.server.client(shared.proposer) as http:
        proposed = http.post(REMEMBER, json={"text": held, "scopes": ["team:a"], "decision": "add"})
    assert proposed.status_code == 200, proposed.text
    hidden = [secret, held, record["uri"], record["recordId"], record["contentHash"]]
    answers: list[str] = []
    made_up = record["uri"].rsplit("mem-", 1)[0] + "mem-0123456789abcdef.md"

    with shared.server.client(shared.outsider) as http:

        def post(path: str, body: dict[str, Any]) -> httpx.Response:
            response = http.post(path, json=body)
            answers.append(response.text)
            return response

        for scopes in (["team:a"], ["team:b", "team:a"], ["TEAM:A "]):
            response = post(RECALL, recall_body(*scopes, query="harbour codename"))
            assert error_code(response, 403) == "MEMORY_SCOPE_FORBIDDEN"
        response = post(REMEMBER, {"text": secret, "scopes": ["team:a"], "decision": "add"})
        assert error_code(response, 403) == "MEMORY_SCOPE_FORBIDDEN"
        own = post(RECALL, recall_body("team:b", query="harbour project codename Bluebird"))
        assert assert_valid("recall", own.json())["facts"] == []
        near = "The harbour project codename is Bluebird"
        proposal = post(REMEMBER, {"text": near, "scopes": ["team:b"]})
        assert assert_valid("remember", proposal.json())["candidates"] == []
        for predecessor in (record["uri"], made_up):
            response = post(
                REMEMBER,
                {"text": near, "scopes": ["team:b"], "decision": "supersede",
                 "predecessorUri": predecessor, "predecessorHash": record["contentHash"]},
            )  # fmt: skip
            assert error_code(response, 404) == "MEMORY_PREDECESSOR_NOT_FOUND"
        assert answers[-1] == answers[-2]  # another scope's fact: as if it did not exist
        status = http.get("/api/requests/harbour-secret")
        answers.append(status.text)
        assert error_code(status, 404) == "MEMORY_REQUEST_NOT_FOUND"

    async with mcp_session(shared.server, shared.outsider) as session:
        refused = await call(session, "gno_recall", recall_body("team:a", query="harbour"))
        answers.append(str(refused.structured_content))
        assert structured_error(refused) == "MEMORY_SCOPE_FORBIDDEN"
        own_recall = await call(session, "gno_recall", recall_body("team:b", query="harbour"))
        answers.append(str(own_recall.structured_content))
        proposals = await session.read_resource("gno://review/proposals")
        answers.append(str(proposals))
        refusals = []
        for uri in (record["uri"], record["uri"].removesuffix(".md") + ".json", made_up):
            with pytest.raises(MCPError) as error:
                await session.read_resource(uri)
            # The refusal names the uri the caller sent (as .md or .json), nothing else.
            shown = str(error.value.error)
            for form in (uri, uri.removesuffix(".json") + ".md"):
                shown = shown.replace(form, "URI")
            answers.append(shown)
            refusals.append(shown)
        assert refusals[0] == refusals[2]
    for answer in answers:
        for value in hidden:
            assert value not in answer, (value, answer)


async def test_a_propose_only_tokens_add_is_held_for_a_person(shared: SharedServer) -> None:
    text = "Proposal: the team lunch moves to the okapi cafe"
    with shared.server.client(shared.proposer) as http:
        response = http.post(REMEMBER, json={"text": text, "scopes": ["team:a"], "decision": "add"})
        assert response.status_code == 200, response.text
        assert assert_valid("remember", response.json())["outcome"] == "candidates"
    pending = [p for p in cli(shared.home, "review", "--list")["proposals"] if p["text"] == text]
    assert len(pending) == 1, pending
    assert (pending[0]["caller"], pending[0]["origin"], pending[0]["scopes"]) == (
        "http:proposer",
        "http",
        ["team:a"],
    )
    with shared.server.client(shared.writer) as http:
        recalled = http.post(RECALL, json=recall_body("team:a", query="team lunch okapi cafe"))
    facts = assert_valid("recall", recalled.json())["facts"]
    assert text not in [fact["text"] for fact in facts]


# -- identity ----------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["caller", "session", "createdBy", "principal"])
def test_a_body_cannot_choose_who_writes(shared: SharedServer, field: str) -> None:
    body = {"text": "Written as someone else", "scopes": ["team:a"], "decision": "add"}
    with shared.server.client(shared.writer) as http:
        response = http.post(REMEMBER, json={**body, field: "cli:root"})
        assert error_code(response, 400) == "MEMORY_USAGE_INVALID"
        assert field in response.json()["error"]["message"]
        read = http.post(RECALL, json={**recall_body("team:a"), field: "cli:root"})
        assert error_code(read, 400) == "MEMORY_USAGE_INVALID"


def test_the_caller_is_the_tokens_whatever_else_the_request_says(shared: SharedServer) -> None:
    text = "The caller of this fact is the token's principal"
    headers = {"X-Caller": "cli:root", "X-Gno-Caller": "cli:root", "User-Agent": "cli:root"}
    with shared.server.client(shared.writer) as http:
        added = http.post(
            f"{REMEMBER}?caller=cli:root&session=mine",
            json={"text": text, "scopes": ["team:a"], "decision": "add"},
            headers=headers,
        )
    assert added.status_code == 201, added.text
    assert added.json()["record"]["caller"] == "http:writer"
    assert added.json()["record"]["session"].startswith("http-")


# -- the token is never stored or shown --------------------------------------------------


def database_rows(home: Path) -> Iterator[tuple[str, str]]:
    """(table, row as text) for every row of every table of the home's database."""
    if pg_homes.server_mode():
        url = pg_homes.database_of(home)
        assert url is not None
        for table, rows in pg_homes.rows_of(url).items():
            for row in rows:
                yield table, row
        return
    index = sqlite3.connect(home / "index.sqlite")
    try:
        query = "SELECT name FROM sqlite_master WHERE type = 'table'"
        for (table,) in index.execute(query).fetchall():
            for row in index.execute(f'SELECT * FROM "{table}"'):
                yield table, repr(row)
    finally:
        index.close()


async def test_the_token_is_never_stored_logged_or_listed(shared: SharedServer) -> None:
    tokens = [shared.writer, shared.proposer, shared.curator, shared.outsider]
    for token in tokens:  # every token used: REST, a refusal, MCP
        with shared.server.client(token) as http:
            http.post(RECALL, json=recall_body("team:a", query="token check"))
            http.post(REMEMBER, json={"text": "Token check", "scopes": ["team:z"]})
        async with mcp_session(shared.server, token) as session:
            await call(session, "gno_recall", recall_body("team:a", query="token check"))
    secrets = [token.removeprefix("gno_") for token in tokens]
    rows = list(database_rows(shared.home))
    assert any(table == "api_tokens" for table, _ in rows)
    for table, row in rows:
        for secret in secrets:
            assert secret not in row, table
    if not pg_homes.server_mode():  # every byte of the home: the database, its WAL, files
        for path in shared.home.rglob("*"):
            if path.is_file():
                content = path.read_bytes()
                assert not any(s.encode() in content for s in secrets), path
    log = "".join(shared.server.log)
    assert "listening on" in log
    assert not any(secret in log for secret in secrets)
    listings = [
        str(cli(shared.home, "token", "list")),
        str(cli(shared.home, "token", "list", "--all")),
        subprocess.run(
            [str(CONSOLE_SCRIPT), "--home", str(shared.home), "token", "list", "--all"],
            env=child_env(shared.home),
            capture_output=True,
            text=True,
            timeout=120,
            check=True,
        ).stdout,
    ]
    assert "writer" in listings[0]
    for listing in listings:
        assert not any(secret in listing for secret in secrets)


# -- Host and Origin ---------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/api/memory/recall", "/mcp", "/healthz"])
def test_a_foreign_host_is_403(shared: SharedServer, path: str) -> None:
    with shared.server.client(shared.writer) as http:
        response = http.post(path, json=recall_body("team:a"), headers={"Host": "evil.example"})
        assert error_code(response, 403) == "MEMORY_ORIGIN_FORBIDDEN"
        rebinding = http.post(
            path, json=recall_body("team:a"), headers={"Host": f"evil.example:{shared.server.port}"}
        )
        assert error_code(rebinding, 403) == "MEMORY_ORIGIN_FORBIDDEN"
        local = http.post(
            RECALL, json=recall_body("team:a"), headers={"Host": f"localhost:{shared.server.port}"}
        )
        assert local.status_code == 200, local.text


@pytest.mark.parametrize("origin", ["https://evil.example", "null", "http://evil.example:80"])
def test_a_foreign_origin_is_403(shared: SharedServer, origin: str) -> None:
    with shared.server.client(shared.writer) as http:
        response = http.post(RECALL, json=recall_body("team:a"), headers={"Origin": origin})
        assert error_code(response, 403) == "MEMORY_ORIGIN_FORBIDDEN"
        mcp = http.post("/mcp", json={}, headers={"Origin": origin})
        assert error_code(mcp, 403) == "MEMORY_ORIGIN_FORBIDDEN"
        own = http.post(
            RECALL,
            json=recall_body("team:a"),
            headers={"Origin": f"http://127.0.0.1:{shared.server.port}"},
        )
        assert own.status_code == 200, own.text


# -- --no-auth ---------------------------------------------------------------------------


def test_no_auth_off_loopback_is_refused_at_start(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = subprocess.run(
        [str(CONSOLE_SCRIPT), "--home", str(home), "serve", "--host", "0.0.0.0", "--port", "0",
         "--no-auth"],
        env=child_env(home),
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode != 0
    assert "listening on" not in done.stderr
    assert "MEMORY_USAGE_INVALID" in done.stderr
    assert "--no-auth" in done.stderr and "0.0.0.0" in done.stderr
    assert "loopback" in done.stderr


def test_no_auth_on_loopback_answers_as_http_local_and_holds_writes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with serve(home, "--no-auth") as server, server.client() as http:
        text = "Written without a token on loopback"
        response = http.post(REMEMBER, json={"text": text, "scopes": ["s"], "decision": "add"})
        assert response.status_code == 200, response.text
        assert assert_valid("remember", response.json())["outcome"] == "candidates"
        pending = cli(home, "review", "--list")["proposals"]
        assert [(p["text"], p["caller"]) for p in pending] == [(text, "http:local")]
        assert error_code(
            http.post(RECALL, json=recall_body("s"), headers={"Host": "evil.example"}), 403
        ) == "MEMORY_ORIGIN_FORBIDDEN"  # fmt: skip


# -- a slow body -------------------------------------------------------------------------


def read_response(sock: socket.socket) -> tuple[int, bytes]:
    """One HTTP/1.1 response from `sock`: its status and body (by Content-Length)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, f"the connection closed without an answer: {data!r}"
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(":", 1) for line in lines[1:])
    length = int(next(v for k, v in headers.items() if k.strip().lower() == "content-length"))
    while len(body) < length:
        chunk = sock.recv(65536)
        assert chunk, "the connection closed inside the answer"
        body += chunk
    return int(lines[0].split()[1]), body


def test_a_slow_body_is_408_within_the_body_timeout_while_others_are_served(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    token = make_token(home, "slow", "team:a", write=True)
    with serve(home, "--body-timeout", "1") as server:
        request = (
            "POST /api/memory/recall HTTP/1.1\r\n"
            f"Host: 127.0.0.1:{server.port}\r\n"
            f"Authorization: Bearer {token}\r\n"
            "Content-Type: application/json\r\n"
            "Content-Length: 200\r\n\r\n"
            '{"query": "sl'
        ).encode()
        with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
            sock.sendall(request)
            # Meanwhile the server answers everyone else.
            with server.client(token) as http:
                for _ in range(3):
                    other = http.post(RECALL, json=recall_body("team:a", query="slow"))
                    assert other.status_code == 200, other.text
            status, body = read_response(sock)
            assert status == 408, body  # the body's deadline answered, not a client timeout
            assert httpx.Response(408, content=body).json()["error"]["code"] == (
                "MEMORY_REQUEST_TIMEOUT"
            )
            assert sock.recv(1) == b""  # and the connection is closed, not left to the client
        with server.client(token) as http:
            assert http.post(RECALL, json=recall_body("team:a")).status_code == 200


def test_a_slow_or_silent_head_is_closed_within_the_deadline(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    token = make_token(home, "slow", "team:a")
    with serve(home, "--body-timeout", "1") as server:
        partial = f"POST /api/memory/recall HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        silent = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        slow = socket.create_connection(("127.0.0.1", server.port), timeout=30)
        with silent, slow:
            slow.sendall(partial.encode())
            with server.client(token) as http:  # served meanwhile
                assert http.post(RECALL, json=recall_body("team:a")).status_code == 200
            # Both are closed by the server, neither answered nor kept open (uvicorn alone
            # keeps them open: the recv would time out after 30 s and fail the test).
            assert slow.recv(65536) == b""
            assert silent.recv(65536) == b""


def test_a_tokens_egress_ceiling_bounds_every_recall(shared: SharedServer) -> None:
    """A token made for another machine (--egress lan) never gets a fact of a local_only
    collection, whatever its request asks; one without a ceiling does."""
    text = "The vault code is on the office whiteboard"
    with shared.server.client(shared.writer) as http:
        added = http.post(
            "/api/memory/remember",
            json={"text": text, "scopes": ["team:a"], "decision": "add"},
        )
        assert added.status_code == 201, added.text
        assert added.json()["absPath"] == added.json()["record"]["uri"]  # no server path
        seen = http.post(RECALL, json=recall_body("team:a", query="vault code whiteboard"))
        assert text in [fact["text"] for fact in seen.json()["facts"]]
    remote = make_token(shared.home, "laptop", "team:a", egress="lan")
    with shared.server.client(remote) as http:
        for asked in (None, "local_only"):
            body = recall_body("team:a", query="vault code whiteboard")
            if asked:
                body["egress"] = asked
            facts = assert_valid("recall", http.post(RECALL, json=body).json())["facts"]
            assert text not in [fact["text"] for fact in facts]
        ob1 = http.post("/recall", json={"query": "vault code whiteboard"})
        assert ob1.status_code == 200, ob1.text
        assert text not in ob1.text
