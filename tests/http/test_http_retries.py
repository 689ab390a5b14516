"""Writes sent with a requestId are applied at most once per caller: a retry answers the first
outcome and status, the same id with another request is a conflict, GET /api/requests/{id}
says what became of it; two clients sending one id at once write once; the CLI's
--request-id and MCP's gno_remember requestId the same."""

from __future__ import annotations

import json
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx
import pg_homes
from http_harness import CONSOLE_SCRIPT, SharedServer, assert_valid, child_env, cli, error_code
from mcp_over_http import call, mcp_session, structured_ok

REMEMBER = "/api/memory/remember"


def stored_with(shared: SharedServer, marker: str) -> list[str]:
    """The texts of the facts stored on the shared home that hold `marker`, read from the
    store itself (its fact files, or the server database's export)."""
    texts = []
    for path in pg_homes.fact_files(shared.home):
        content = path.read_text(encoding="utf-8")
        if marker in content:
            texts.append(content)
    return texts


def add(text: str, request_id: str, scopes: tuple[str, ...] = ("team:a",)) -> dict[str, Any]:
    return {"text": text, "scopes": list(scopes), "decision": "add", "requestId": request_id}


def test_a_retry_answers_the_first_outcome_and_status(shared: SharedServer) -> None:
    body = add("Retry marker aardvark: the standup is at nine", "retry-aardvark-1")
    with shared.server.client(shared.writer) as http:
        first = http.post(REMEMBER, json=body)
        assert first.status_code == 201, first.text
        assert assert_valid("remember", first.json())["outcome"] == "added"
        again = http.post(REMEMBER, json=body)
    assert again.status_code == 201, again.text
    assert again.json() == first.json()
    assert len(stored_with(shared, "aardvark")) == 1


def test_the_same_id_with_another_request_is_a_conflict(shared: SharedServer) -> None:
    with shared.server.client(shared.writer) as http:
        first = http.post(REMEMBER, json=add("Retry marker badger: version one", "retry-badger"))
        assert first.status_code == 201, first.text
        other = http.post(REMEMBER, json=add("Retry marker badger: version two", "retry-badger"))
        assert error_code(other, 409) == "MEMORY_REQUEST_CONFLICT"
        widened = http.post(
            REMEMBER,
            json=add("Retry marker badger: version one", "retry-badger", ("team:a", "user:alice")),
        )
        assert error_code(widened, 409) == "MEMORY_REQUEST_CONFLICT"
    stored = stored_with(shared, "badger")
    assert len(stored) == 1 and "version one" in stored[0]


def test_the_request_status_says_what_became_of_a_write(shared: SharedServer) -> None:
    with shared.server.client(shared.writer) as http:
        first = http.post(REMEMBER, json=add("Retry marker civet: lunch at noon", "retry-civet"))
        assert first.status_code == 201, first.text
        status = http.get("/api/requests/retry-civet")
        assert status.status_code == 200, status.text
        document = assert_valid("request_status", status.json())
        assert (document["requestId"], document["verb"], document["status"]) == (
            "retry-civet",
            "remember",
            201,
        )
        assert document["result"] == first.json()
        unknown = http.get("/api/requests/never-sent")
        assert error_code(unknown, 404) == "MEMORY_REQUEST_NOT_FOUND"
        malformed = http.get("/api/requests/-not-an-id")
        assert error_code(malformed, 400) == "MEMORY_REQUEST_INVALID"
    # Another token's request ids are not this one's, even in the same scope.
    for token in (shared.curator, shared.outsider):
        with shared.server.client(token) as http:
            response = http.get("/api/requests/retry-civet")
        assert error_code(response, 404) == "MEMORY_REQUEST_NOT_FOUND"
        assert "civet" not in response.text.replace("retry-civet", "")


def test_one_id_sent_by_two_clients_at_once_writes_once(shared: SharedServer) -> None:
    pairs = 12
    barriers = [threading.Barrier(2) for _ in range(pairs)]

    def send(index: int) -> httpx.Response:
        pair = index // 2
        body = add(f"Retry marker dugong {pair}: sent twice at once", f"retry-dugong-{pair}")
        with shared.server.client(shared.writer) as http:
            http.get("/healthz")  # connected before the race starts
            barriers[pair].wait(timeout=60)
            return http.post(REMEMBER, json=body)

    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(send, range(pairs * 2)))
    for pair in range(pairs):
        a, b = responses[2 * pair], responses[2 * pair + 1]
        assert (a.status_code, b.status_code) == (201, 201), (a.text, b.text)
        assert a.json() == b.json()
    stored = stored_with(shared, "dugong")
    assert len(stored) == pairs, stored


def test_a_held_write_retried_at_once_is_held_once(shared: SharedServer) -> None:
    pairs = 4
    barriers = [threading.Barrier(2) for _ in range(pairs)]

    def send(index: int) -> httpx.Response:
        pair = index // 2
        body = add(f"Retry marker eland {pair}: held for review", f"retry-eland-{pair}")
        with shared.server.client(shared.proposer) as http:
            http.get("/healthz")
            barriers[pair].wait(timeout=60)
            return http.post(REMEMBER, json=body)

    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(send, range(pairs * 2)))
    assert all(r.status_code == 200 for r in responses), [r.text for r in responses]
    proposals = cli(shared.home, "review", "--list")["proposals"]
    held = sorted(p["text"] for p in proposals if "eland" in p["text"])
    assert held == [f"Retry marker eland {pair}: held for review" for pair in range(pairs)]


def test_the_clis_request_id_writes_once_and_request_show_answers(shared: SharedServer) -> None:
    args = ("remember", "Retry marker fossa: from the CLI", "--scope", "team:a", "--add")
    first = cli(shared.home, *args, "--request-id", "retry-fossa")
    assert assert_valid("remember", first)["outcome"] == "added"
    again = cli(shared.home, *args, "--request-id", "retry-fossa")
    assert again == first
    assert len(stored_with(shared, "fossa")) == 1
    shown = assert_valid("request_status", cli(shared.home, "request", "show", "retry-fossa"))
    assert (shown["status"], shown["verb"], shown["result"]) == (201, "remember", first)
    conflict = subprocess.run(
        [str(CONSOLE_SCRIPT), "--home", str(shared.home), "remember", "Retry marker fossa: other",
         "--scope", "team:a", "--add", "--request-id", "retry-fossa", "--json"],
        env=child_env(shared.home),
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert conflict.returncode != 0
    assert json.loads(conflict.stdout)["error"]["code"] == "MEMORY_REQUEST_CONFLICT"
    # The CLI's caller is not the token's: the server knows no such request of http:writer.
    with shared.server.client(shared.writer) as http:
        response = http.get("/api/requests/retry-fossa")
    assert error_code(response, 404) == "MEMORY_REQUEST_NOT_FOUND"


async def test_mcp_gno_remember_with_a_request_id_writes_once(shared: SharedServer) -> None:
    arguments = add("Retry marker genet: over MCP", "retry-genet")
    async with mcp_session(shared.server, shared.writer) as session:
        first = structured_ok(await call(session, "gno_remember", arguments), "remember")
        assert first["outcome"] == "added"
        again = structured_ok(await call(session, "gno_remember", arguments), "remember")
        assert again == first
    async with mcp_session(shared.server, shared.writer) as session:  # a new connection
        third = structured_ok(await call(session, "gno_remember", arguments), "remember")
        assert third == first
    assert len(stored_with(shared, "genet")) == 1
    # MCP and REST are one caller for one token: the status route and a REST retry see it.
    with shared.server.client(shared.writer) as http:
        status = assert_valid("request_status", http.get("/api/requests/retry-genet").json())
        assert (status["status"], status["result"]) == (201, first)
        rest = http.post(REMEMBER, json=arguments)
        assert rest.status_code == 201, rest.text
        assert rest.json() == first
