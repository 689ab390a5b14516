"""GNO's memory routes over HTTP, as an agent uses them: remember (201 added or superseded,
200 existing or candidates), recall, supersede by predecessorUri + predecessorHash, and every
refusal as a coded error {"error": {"code", "message"}} with the status of its code; a bad
body gets the same code as `gno-tui remember --json` gives for the same input."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from http_harness import CONSOLE_SCRIPT, SharedServer, assert_valid, child_env, error_code

REMEMBER = "/api/memory/remember"
RECALL = "/api/memory/recall"


def remember(shared: SharedServer, body: dict[str, Any], token: str | None = None) -> Any:
    with shared.server.client(token or shared.writer) as http:
        return http.post(REMEMBER, json=body)


def recall_texts(shared: SharedServer, query: str, scopes: list[str] | None = None) -> list[str]:
    with shared.server.client(shared.writer) as http:
        response = http.post(RECALL, json={"query": query, "scopes": scopes or ["team:a"]})
    assert response.status_code == 200, response.text
    return [fact["text"] for fact in assert_valid("recall", response.json())["facts"]]


def cli_error(home: Path, *args: str, stdin: bytes = b"") -> str:
    """The error code `gno-tui --home HOME ARGS --json` answers (it must fail)."""
    done = subprocess.run(
        [str(CONSOLE_SCRIPT), "--home", str(home), *args, "--json"],
        env=child_env(home),
        input=stdin,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode != 0, done.stdout
    document = json.loads(done.stdout)
    assert set(document) == {"error"} and set(document["error"]) == {"code", "message"}
    return str(document["error"]["code"])


# -- writes and reads ----------------------------------------------------------------------


def test_a_write_then_a_recall_answer_the_seed_results(shared: SharedServer) -> None:
    added = remember(
        shared,
        {"text": "The deploy window is Tuesday", "scopes": ["team:a"], "decision": "add"},
    )
    assert added.status_code == 201, added.text
    result = assert_valid("remember", added.json())
    assert result["outcome"] == "added"
    assert result["record"]["caller"] == "http:writer"
    with shared.server.client(shared.writer) as http:
        recalled = http.post(RECALL, json={"query": "deploy window", "scopes": ["team:a"]})
    assert recalled.status_code == 200, recalled.text
    facts = assert_valid("recall", recalled.json())["facts"]
    assert [fact["uri"] for fact in facts] == [result["record"]["uri"]]
    assert facts[0]["text"] == "The deploy window is Tuesday"
    assert facts[0]["caller"] == "http:writer"


def test_the_same_fact_again_is_200_existing_and_stored_once(shared: SharedServer) -> None:
    body = {"text": "The office plant is a ficus", "scopes": ["team:a"], "decision": "add"}
    first = remember(shared, body)
    assert first.status_code == 201, first.text
    again = remember(shared, body)
    assert again.status_code == 200, again.text
    result = assert_valid("remember", again.json())
    assert result["outcome"] == "existing"
    assert result["record"]["uri"] == first.json()["record"]["uri"]
    assert recall_texts(shared, "office plant ficus") == ["The office plant is a ficus"]


def test_a_propose_is_200_candidates_and_writes_nothing(shared: SharedServer) -> None:
    stored = remember(
        shared,
        {"text": "The build server is named hopper", "scopes": ["team:a"], "decision": "add"},
    )
    assert stored.status_code == 201, stored.text
    proposed = remember(shared, {"text": "The build server is hopper", "scopes": ["team:a"]})
    assert proposed.status_code == 200, proposed.text
    result = assert_valid("remember", proposed.json())
    assert result["outcome"] == "candidates"
    assert stored.json()["record"]["uri"] in [c["uri"] for c in result["candidates"]]
    assert recall_texts(shared, "build server hopper") == ["The build server is named hopper"]


def test_a_recall_bounded_by_max_facts_answers_the_seed_result(shared: SharedServer) -> None:
    for n in range(3):
        added = remember(
            shared,
            {"text": f"Standup note number {n} about quokkas", "scopes": ["user:alice"],
             "decision": "add"},
        )  # fmt: skip
        assert added.status_code == 201, added.text
    with shared.server.client(shared.writer) as http:
        response = http.post(
            RECALL, json={"query": "quokkas", "scopes": ["user:alice"], "maxFacts": 2}
        )
    assert response.status_code == 200, response.text
    result = assert_valid("recall", response.json())
    assert len(result["facts"]) == 2
    assert all("quokkas" in fact["text"] for fact in result["facts"])


def test_supersede_by_predecessor_uri_and_hash_replaces_the_fact(shared: SharedServer) -> None:
    old = remember(
        shared, {"text": "The release train leaves on Monday", "scopes": ["team:a"],
                 "decision": "add"},
    )  # fmt: skip
    assert old.status_code == 201, old.text
    record = old.json()["record"]
    new = remember(
        shared,
        {
            "text": "The release train leaves on Thursday",
            "scopes": ["team:a"],
            "decision": "supersede",
            "predecessorUri": record["uri"],
            "predecessorHash": record["contentHash"],
        },
    )
    assert new.status_code == 201, new.text
    result = assert_valid("remember", new.json())
    assert result["outcome"] == "superseded"
    assert record["uri"] in result["record"]["supersedes"]
    assert recall_texts(shared, "release train leaves") == ["The release train leaves on Thursday"]


def test_supersede_with_a_stale_hash_is_409_and_changes_nothing(shared: SharedServer) -> None:
    old = remember(
        shared, {"text": "The coffee machine is on floor two", "scopes": ["team:a"],
                 "decision": "add"},
    )  # fmt: skip
    assert old.status_code == 201, old.text
    response = remember(
        shared,
        {
            "text": "The coffee machine is on floor three",
            "scopes": ["team:a"],
            "decision": "supersede",
            "predecessorUri": old.json()["record"]["uri"],
            "predecessorHash": "0" * 64,
        },
    )
    assert error_code(response, 409) in (
        "MEMORY_PREDECESSOR_HASH_MISMATCH",
        "MEMORY_SUPERSEDE_CONFLICT",
    )
    assert recall_texts(shared, "coffee machine floor") == ["The coffee machine is on floor two"]


def test_an_unknown_collection_is_404(shared: SharedServer) -> None:
    response = remember(
        shared,
        {"text": "Filed nowhere", "scopes": ["team:a"], "decision": "add", "collection": "nope"},
    )
    assert error_code(response, 404) == "MEMORY_COLLECTION_NOT_FOUND"
    assert cli_error(
        shared.home, "remember", "Filed nowhere", "--scope", "team:a", "--add",
        "--collection", "nope",
    ) == "MEMORY_COLLECTION_NOT_FOUND"  # fmt: skip


def test_an_unknown_predecessor_is_404(shared: SharedServer) -> None:
    response = remember(
        shared,
        {
            "text": "Replaces a fact that never was",
            "scopes": ["team:a"],
            "decision": "supersede",
            "predecessorUri": "gno://memory/facts/2026-01-01/mem-0123456789abcdef.md",
            "predecessorHash": "a" * 64,
        },
    )
    assert error_code(response, 404) == "MEMORY_PREDECESSOR_NOT_FOUND"


# -- bad bodies: coded 400s, the CLI's codes ----------------------------------------------

# (name, raw body, code, the CLI's arguments for the same input or None, its stdin)
BAD_BODIES: list[tuple[str, bytes, str, tuple[str, ...] | None, bytes]] = [
    (
        "missing text",
        b'{"scopes": ["team:a"], "decision": "add"}',
        "MEMORY_TEXT_REQUIRED",
        ("remember", "--scope", "team:a", "--add"),
        b"",
    ),
    (
        "empty text",
        b'{"text": "", "scopes": ["team:a"], "decision": "add"}',
        "MEMORY_TEXT_REQUIRED",
        ("remember", "", "--scope", "team:a", "--add"),
        b"",
    ),
    (
        "missing scopes",
        b'{"text": "No scope given", "decision": "add"}',
        "MEMORY_SCOPES_REQUIRED",
        ("remember", "No scope given", "--add"),
        b"",
    ),
    (
        "no scope in the list",
        b'{"text": "An empty scope list", "scopes": [], "decision": "add"}',
        "MEMORY_SCOPES_REQUIRED",
        None,
        b"",
    ),
    (
        "a malformed scope",
        b'{"text": "A bad scope", "scopes": ["Team A!"], "decision": "add"}',
        "MEMORY_SCOPES_INVALID",
        ("remember", "A bad scope", "--scope", "Team A!", "--add"),
        b"",
    ),
    (
        "an unknown decision",
        b'{"text": "Delete it", "scopes": ["team:a"], "decision": "delete"}',
        "MEMORY_DECISION_INVALID",
        ("remember", "Delete it", "--scope", "team:a", "--decision", "delete"),
        b"",
    ),
    (
        "a text over 4 KiB",
        b'{"text": "' + b"a" * 5000 + b'", "scopes": ["team:a"], "decision": "add"}',
        "MEMORY_TEXT_TOO_LARGE",
        ("remember", "a" * 5000, "--scope", "team:a", "--add"),
        b"",
    ),
    (
        "text of another type",
        b'{"text": 5, "scopes": ["team:a"], "decision": "add"}',
        "MEMORY_USAGE_INVALID",
        None,
        b"",
    ),
    (
        "scopes of another type",
        b'{"text": "Scopes as a string", "scopes": "team:a", "decision": "add"}',
        "MEMORY_SCOPES_INVALID",
        None,
        b"",
    ),
    (
        "a decision of another type",
        b'{"text": "x", "scopes": ["team:a"], "decision": true}',
        "MEMORY_DECISION_INVALID",
        None,
        b"",
    ),
    ("not JSON", b"text=hello&scopes=team:a", "MEMORY_USAGE_INVALID", None, b""),
    ("no body", b"", "MEMORY_USAGE_INVALID", None, b""),
    ("a JSON array", b'["hello", ["team:a"]]', "MEMORY_USAGE_INVALID", None, b""),
    (
        "NaN",
        b'{"text": "Not a number", "scopes": ["team:a"], "decision": "add", "source": NaN}',
        "MEMORY_USAGE_INVALID",
        None,
        b"",
    ),
    (
        "Infinity",
        b'{"text": "Too big", "scopes": ["team:a"], "decision": "add", "source": Infinity}',
        "MEMORY_USAGE_INVALID",
        None,
        b"",
    ),
    (
        "nested too deep",
        b'{"text": "Deep", "scopes": ["team:a"], "receipt": ' + b"[" * 5000 + b"]" * 5000 + b"}",
        "MEMORY_USAGE_INVALID",
        None,
        b"",
    ),
    (
        "a lone surrogate escape",
        b'{"text": "half \\ud800 a pair", "scopes": ["team:a"], "decision": "add"}',
        "MEMORY_TEXT_INVALID",
        # An argument's bytes that do not decode reach the CLI as lone surrogates.
        ("remember", "half \udced\udca0\udc80 a pair", "--scope", "team:a", "--add"),
        b"",
    ),
    (
        "invalid UTF-8",
        b'{"text": "caf\xe9 au lait", "scopes": ["team:a"], "decision": "add"}',
        "MEMORY_TEXT_INVALID",
        ("remember", "-", "--scope", "team:a", "--add"),
        b"caf\xe9 au lait",
    ),
]


@pytest.mark.parametrize(
    ("body", "code", "cli_args", "stdin"),
    [pytest.param(*case[1:], id=case[0]) for case in BAD_BODIES],
)
def test_a_bad_body_is_a_coded_400_as_the_cli_codes_it(
    shared: SharedServer,
    body: bytes,
    code: str,
    cli_args: tuple[str, ...] | None,
    stdin: bytes,
) -> None:
    with shared.server.client(shared.writer) as http:
        response = http.post(REMEMBER, content=body, headers={"Content-Type": "application/json"})
    assert error_code(response, 400) == code
    if cli_args is not None:
        assert cli_error(shared.home, *cli_args, stdin=stdin) == code


def test_a_lone_surrogate_is_refused_where_it_is(shared: SharedServer) -> None:
    body = b'{"text": "fine", "scopes": ["team:a"], "source": "half \\udfff"}'
    with shared.server.client(shared.writer) as http:
        response = http.post(REMEMBER, content=body, headers={"Content-Type": "application/json"})
    assert error_code(response, 400) == "MEMORY_TEXT_INVALID"
    assert "`body/source`" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        pytest.param({"scopes": ["team:a"]}, "MEMORY_QUERY_REQUIRED", id="missing query"),
        pytest.param({"query": "x"}, "MEMORY_SCOPES_REQUIRED", id="missing scopes"),
        pytest.param(
            {"query": "x", "scopes": ["team:a"], "maxFacts": "ten"},
            "MEMORY_BUDGET_INVALID",
            id="maxFacts of another type",
        ),
        pytest.param(
            {"query": "x", "scopes": ["team:a"], "maxTokens": 0},
            "MEMORY_BUDGET_INVALID",
            id="maxTokens out of range",
        ),
        pytest.param(
            {"query": "x", "scopes": ["team:a"], "egress": "anywhere"},
            "MEMORY_POLICY_INVALID",
            id="an unknown egress",
        ),
    ],
)
def test_a_bad_recall_is_a_coded_400(shared: SharedServer, body: Any, code: str) -> None:
    with shared.server.client(shared.writer) as http:
        assert error_code(http.post(RECALL, json=body), 400) == code


def test_a_body_over_the_limit_is_413_and_writes_nothing(shared: SharedServer) -> None:
    body = {
        "text": "The oversized request marker okapi",
        "scopes": ["team:a"],
        "decision": "add",
        "source": "x" * (300 * 1024),
    }
    encoded = json.dumps(body).encode()
    with shared.server.client(shared.writer) as http:
        declared = http.post(
            REMEMBER, content=encoded, headers={"Content-Type": "application/json"}
        )
        assert error_code(declared, 413) == "MEMORY_REQUEST_TOO_LARGE"
        # Without a Content-Length (chunked): refused as the bytes arrive.
        chunks = (encoded[i : i + 16384] for i in range(0, len(encoded), 16384))
        streamed = http.post(REMEMBER, content=chunks, headers={"Content-Type": "application/json"})
        assert error_code(streamed, 413) == "MEMORY_REQUEST_TOO_LARGE"
    assert recall_texts(shared, "oversized request marker okapi") == []


def test_an_unknown_route_or_method_is_a_coded_error(shared: SharedServer) -> None:
    with shared.server.client(shared.writer) as http:
        missing = http.get("/api/memory/forget")
        assert error_code(missing, 404) == "MEMORY_NOT_FOUND"
        wrong = http.get(REMEMBER)
        assert error_code(wrong, 405) == "MEMORY_USAGE_INVALID"
        assert "POST" in wrong.headers["allow"]


def test_health_and_the_openapi_document_need_no_token(shared: SharedServer) -> None:
    with shared.server.client() as http:
        health = http.get("/healthz")
        assert health.status_code == 200
        assert health.json()["status"] == "ok"
        document = http.get("/openapi.json").json()
    assert document["openapi"].startswith("3.1")
    assert {"/api/memory/remember", "/api/memory/recall", "/api/requests/{requestId}"} <= set(
        document["paths"]
    )
