"""OB1's agent-memory routes on a real `gno-tui serve`: recall as seed 002 in the token's
scopes, a write-back held as evidence until a curator decides it, the review queue per scope,
and usage reported against a recall's receipt (docs/ob1-mapping.md, "The HTTP routes")."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from http_harness import SharedServer, assert_valid, cli, error_code
from jsonschema import Draft202012Validator

from gno_tui.http.ob1_routes import USAGE_ANSWER


def unique(words: str) -> str:
    """A text no other test of the shared server writes."""
    return f"{words} {uuid.uuid4().hex[:10]}"


def add_fact(http: httpx.Client, text: str, scopes: list[str]) -> dict[str, Any]:
    response = http.post(
        "/api/memory/remember", json={"text": text, "scopes": scopes, "decision": "add"}
    )
    assert response.status_code == 201, response.text
    return dict(response.json()["record"])


def ob1_recall(http: httpx.Client, query: str, **fields: Any) -> dict[str, Any]:
    body = {"schema_version": "openbrain.openclaw.recall.v1", "query": query, **fields}
    response = http.post("/recall", json=body)
    assert response.status_code == 200, response.text
    return assert_valid("ob1_recall", response.json())


def writeback(http: httpx.Client, *texts: str, **fields: Any) -> dict[str, Any]:
    body = {
        "schema_version": "openbrain.agent_memory.writeback.v1",
        "workspace_id": "memory",
        "runtime": {"name": "pytest"},
        "memory_payload": {"decisions": list(texts)},
        **fields,
    }
    response = http.post("/writeback", json=body)
    assert response.status_code == 202, response.text
    return assert_valid("ob1_writeback", response.json())


def contents(recalled: dict[str, Any]) -> list[str]:
    return [memory["content"] for memory in recalled["memories"]]


def review_ids(http: httpx.Client, **params: str) -> list[int]:
    response = http.get("/memories/review", params=params)
    assert response.status_code == 200, response.text
    return [item["proposal_id"] for item in assert_valid("ob1_review", response.json())["memories"]]


def cli_proposal(shared: SharedServer, proposal_id: int) -> dict[str, Any]:
    """The proposal as a person sees it with `gno-tui review --list --all --json`."""
    proposals = cli(shared.home, "review", "--list", "--all")["proposals"]
    return next(p for p in proposals if p["id"] == proposal_id)


def test_recall_answers_seed_002_in_the_tokens_scopes_only(shared: SharedServer) -> None:
    word = unique("kettle")
    with (
        shared.server.client(shared.writer) as writer,
        shared.server.client(shared.outsider) as outsider,
    ):
        team = add_fact(writer, f"Team A descales the {word} weekly", ["team:a"])
        alice = add_fact(writer, f"Alice fills the {word} herself", ["user:alice"])
        add_fact(outsider, f"Team B never touches the {word}", ["team:b"])

        recalled = ob1_recall(writer, word, limits={"max_items": 10, "max_tokens": 4000})
        assert recalled["schema_version"] == "openbrain.openclaw.recall_response.v1"
        assert len(recalled["request_id"]) == 64  # the recall receipt's digest
        assert sorted(m["memory_id"] for m in recalled["memories"]) == sorted(
            [team["recordId"], alice["recordId"]]
        )
        first = next(m for m in recalled["memories"] if m["memory_id"] == team["recordId"])
        assert first["source"]["uri"] == team["uri"]
        assert first["scope"]["workspace_id"] == "memory"
        # An agent's own add is evidence, not an instruction, until a person confirms it.
        assert first["use_policy"]["can_use_as_instruction"] is False

        only_team = ob1_recall(writer, word, scopes=["team:a"])
        assert contents(only_team) == [f"Team A descales the {word} weekly"]
        assert contents(ob1_recall(outsider, word)) == [f"Team B never touches the {word}"]
        assert ob1_recall(writer, word, limits={"max_items": 1})["memories"].__len__() == 1

        asked_other = writer.post("/recall", json={"query": word, "scopes": ["team:b"]})
        assert error_code(asked_other, 403) == "MEMORY_SCOPE_FORBIDDEN"
        # project_id stands for the scope project:<id>, which this token does not hold.
        project = writer.post("/recall", json={"query": word, "project_id": "elsewhere"})
        assert error_code(project, 403) == "MEMORY_SCOPE_FORBIDDEN"
        unknown = writer.post("/recall", json={"query": word, "workspace_id": "no-such-place"})
        assert error_code(unknown, 404) == "MEMORY_COLLECTION_NOT_FOUND"


def test_a_writeback_waits_for_a_curator_and_is_recalled_once_confirmed(
    shared: SharedServer,
) -> None:
    text = unique("Ship the release on Thursdays")
    with (
        shared.server.client(shared.writer) as writer,
        shared.server.client(shared.curator) as curator,
    ):
        # Held even though this token may write: a write-back is evidence for a person.
        answer = writeback(writer, text, scopes=["team:a"], source_refs=[{"kind": "chat"}])
        assert answer["status"] == "held"
        [held] = answer["memories"]
        assert held["state"] == "pending" and held["memory_type"] == "decision"
        assert held["use_policy"]["can_use_as_instruction"] is False
        proposal_id = held["proposal_id"]

        assert text not in contents(ob1_recall(writer, text))
        assert proposal_id in review_ids(curator)
        person_sees = cli_proposal(shared, proposal_id)
        assert (person_sees["state"], person_sees["text"]) == ("pending", text)
        assert (person_sees["caller"], person_sees["origin"]) == ("http:writer", "http")

        decided = curator.patch(f"/memories/{proposal_id}/review", json={"action": "confirm"})
        assert decided.status_code == 200, decided.text
        body = assert_valid("ob1_review_decision", decided.json())
        assert (body["state"], body["decided_by"]) == ("added", "http:curator")
        assert body["use_policy"]["can_use_as_instruction"] is True

        [memory] = [m for m in ob1_recall(writer, text)["memories"] if m["content"] == text]
        assert memory["memory_id"] == body["memory_id"]
        assert memory["provenance"]["status"] == "user_confirmed"
        assert memory["use_policy"]["can_use_as_instruction"] is True
        logged = cli_proposal(shared, proposal_id)
        assert (logged["state"], logged["decidedBy"]) == ("added", "http:curator")
        assert proposal_id not in review_ids(curator)

        again = curator.patch(f"/memories/{proposal_id}/review", json={"action": "confirm"})
        assert error_code(again, 409) == "MEMORY_PROPOSAL_DECIDED"


def test_evidence_only_edit_and_reject_map_onto_the_curation_verbs(shared: SharedServer) -> None:
    kept, edited, dropped = (unique(t) for t in ("Use tabs", "Use spaces", "Use neither"))
    rewritten = unique("Use four spaces")
    with (
        shared.server.client(shared.proposer) as proposer,
        shared.server.client(shared.curator) as curator,
    ):
        # No scopes named: a token with one scope (team:a) writes there.
        ids = [m["proposal_id"] for m in writeback(proposer, kept, edited, dropped)["memories"]]
        review = curator.get("/memories/review").json()["memories"]
        assert {item["scope"]["scopes"][0] for item in review if item["proposal_id"] in ids} == {
            "team:a"
        }

        approved = curator.patch(f"/memories/{ids[0]}/review", json={"action": "evidence_only"})
        assert approved.status_code == 200, approved.text
        assert approved.json()["use_policy"]["can_use_as_instruction"] is False
        [memory] = [m for m in ob1_recall(curator, kept)["memories"] if m["content"] == kept]
        assert memory["use_policy"]["can_use_as_instruction"] is False
        assert memory["provenance"]["status"] == "observed"

        no_text = curator.patch(f"/memories/{ids[1]}/review", json={"action": "edit"})
        assert error_code(no_text, 400) == "MEMORY_TEXT_REQUIRED"
        edit = curator.patch(
            f"/memories/{ids[1]}/review", json={"action": "edit", "content": rewritten}
        )
        assert edit.status_code == 200 and edit.json()["state"] == "added", edit.text
        assert rewritten in contents(ob1_recall(curator, rewritten))
        assert edited not in contents(ob1_recall(curator, edited))

        no_reason = curator.patch(f"/memories/{ids[2]}/review", json={"action": "reject"})
        assert error_code(no_reason, 400) == "MEMORY_DECISION_INVALID"
        stale = curator.patch(f"/memories/{ids[2]}/review", json={"action": "mark_stale"})
        assert error_code(stale, 400) == "MEMORY_DECISION_INVALID"
        rejected = curator.patch(
            f"/memories/{ids[2]}/review", json={"action": "reject", "notes": "not a rule here"}
        )
        assert rejected.status_code == 200, rejected.text
        assert assert_valid("ob1_review_decision", rejected.json())["state"] == "rejected"
        assert dropped not in contents(ob1_recall(curator, dropped))
        assert cli_proposal(shared, ids[2])["resolution"] == "not a rule here"


def test_only_a_curate_token_decides_a_review(shared: SharedServer) -> None:
    text = unique("Rotate the on-call weekly")
    with (
        shared.server.client(shared.proposer) as proposer,
        shared.server.client(shared.writer) as writer,
    ):
        [held] = writeback(proposer, text)["memories"]
        for http in (proposer, writer):
            refused = http.patch(
                f"/memories/{held['proposal_id']}/review", json={"action": "confirm"}
            )
            assert error_code(refused, 403) == "MEMORY_GRANT_MISSING"
        assert cli_proposal(shared, held["proposal_id"])["state"] == "pending"


def test_the_review_queue_shows_only_the_tokens_scopes(shared: SharedServer) -> None:
    ours, theirs = unique("Team A budget review"), unique("Team B budget review")
    with (
        shared.server.client(shared.writer) as writer,
        shared.server.client(shared.curator) as curator,
        shared.server.client(shared.outsider) as outsider,
    ):
        [our] = writeback(writer, ours, scopes=["team:a"])["memories"]
        [their] = writeback(outsider, theirs)["memories"]

        seen = outsider.get("/memories/review").json()["memories"]
        assert [item["proposal_id"] for item in seen] == [their["proposal_id"]]
        shown = str(seen)
        assert "team:a" not in shown and ours not in shown
        assert our["proposal_id"] in review_ids(curator)
        assert their["proposal_id"] not in review_ids(curator)
        assert review_ids(curator, workspace_id="elsewhere") == []

        # Another scope's proposal is not found, as if it did not exist.
        other = curator.patch(
            f"/memories/{their['proposal_id']}/review", json={"action": "confirm"}
        )
        assert error_code(other, 404) == "MEMORY_PROPOSAL_NOT_FOUND"
        missing = curator.patch("/memories/999999/review", json={"action": "confirm"})
        assert error_code(missing, 404) == "MEMORY_PROPOSAL_NOT_FOUND"
        outside = writer.post(
            "/writeback", json={"scopes": ["team:b"], "memory_payload": {"lessons": [ours]}}
        )
        assert error_code(outside, 403) == "MEMORY_SCOPE_FORBIDDEN"


def test_a_writeback_is_checked_whole_repeats_safely_and_knows_stored_memories(
    shared: SharedServer,
) -> None:
    good, stored = unique("Backups run at 2am"), unique("Backups live in the vault")
    with shared.server.client(shared.writer) as writer:
        bad = writer.post(
            "/writeback", json={"scopes": ["team:a"], "memory_payload": {"lessons": [good, "  "]}}
        )
        assert error_code(bad, 400) == "MEMORY_TEXT_REQUIRED"
        assert good not in str(writer.get("/memories/review").json())  # nothing was held

        key = {"idempotency_key": f"wb-{uuid.uuid4()}"}
        first = writeback(writer, good, scopes=["team:a"], **key)
        assert writeback(writer, good, scopes=["team:a"], **key) == first
        conflict = writer.post(
            "/writeback",
            json={"scopes": ["team:a"], "memory_payload": {"decisions": [stored]}, **key},
        )
        assert error_code(conflict, 409) == "MEMORY_REQUEST_CONFLICT"
        # The same memory sent again while it waits is the same proposal.
        assert writeback(writer, good, scopes=["team:a"])["memories"] == first["memories"]

        record = add_fact(writer, stored, ["team:a"])
        response = writer.post(
            "/writeback", json={"scopes": ["team:a"], "memory_payload": {"outputs": [stored]}}
        )
        assert response.status_code == 200, response.text
        answer = assert_valid("ob1_writeback", response.json())
        assert answer["status"] == "stored"
        assert answer["memories"][0]["state"] == "existing"
        assert answer["memories"][0]["memory_id"] == record["recordId"]


def test_usage_is_recorded_against_the_recalls_receipt(shared: SharedServer) -> None:
    word = unique("lanyard")
    with (
        shared.server.client(shared.writer) as writer,
        shared.server.client(shared.outsider) as outsider,
    ):
        used = add_fact(writer, f"The {word} is blue", ["team:a"])["recordId"]
        ignored = add_fact(writer, f"The {word} hangs by the door", ["team:a"])["recordId"]
        request_id = ob1_recall(writer, word)["request_id"]
        path = f"/recall/{request_id}/usage"

        reported = writer.post(
            path,
            json={"used_memory_ids": [used], "ignored": [{"memory_id": ignored, "reason": "old"}]},
        )
        assert reported.status_code == 200, reported.text
        Draft202012Validator(USAGE_ANSWER).validate(reported.json())
        assert reported.json() == {"request_id": request_id, "used": [used], "ignored": [ignored]}
        again = writer.post(path, json={"used_memory_ids": [ignored]})
        assert (again.json()["used"], again.json()["ignored"]) == (sorted([used, ignored]), [])

        stranger = add_fact(writer, unique("Unrelated to that recall"), ["team:a"])["recordId"]
        not_returned = writer.post(path, json={"used_memory_ids": [stranger]})
        assert error_code(not_returned, 400) == "MEMORY_USAGE_INVALID"
        unknown = writer.post(f"/recall/{'0' * 64}/usage", json={"used_memory_ids": [used]})
        assert error_code(unknown, 404) == "MEMORY_REQUEST_NOT_FOUND"
        not_theirs = outsider.post(path, json={"used_memory_ids": [used]})
        assert error_code(not_theirs, 404) == "MEMORY_REQUEST_NOT_FOUND"


@pytest.mark.parametrize(
    ("method", "path", "body", "code"),
    [
        ("POST", "/recall", {"limits": {"max_items": 3}}, "MEMORY_QUERY_REQUIRED"),
        ("POST", "/recall", {"query": "x", "limits": {"max_items": 0}}, "MEMORY_BUDGET_INVALID"),
        ("POST", "/recall", {"query": "x", "top_k": 3}, "MEMORY_USAGE_INVALID"),
        ("POST", "/recall", {"query": "x", "scopes": "team:a"}, "MEMORY_SCOPES_INVALID"),
        ("POST", "/recall", ["not", "an", "object"], "MEMORY_USAGE_INVALID"),
        ("POST", "/writeback", {"scopes": ["team:a"]}, "MEMORY_USAGE_INVALID"),
        ("POST", "/writeback", {"memory_payload": {}}, "MEMORY_TEXT_REQUIRED"),
        ("POST", "/writeback", {"memory_payload": {"decisions": "x"}}, "MEMORY_USAGE_INVALID"),
        ("POST", "/writeback", {"memory_payload": {"lessons": ["x"]}}, "MEMORY_SCOPES_REQUIRED"),
        ("PATCH", "/memories/1/review", {"action": "approve"}, "MEMORY_USAGE_INVALID"),
        ("PATCH", "/memories/1/review", {}, "MEMORY_USAGE_INVALID"),
        ("POST", f"/recall/{'0' * 64}/usage", {"used_memory_ids": "x"}, "MEMORY_USAGE_INVALID"),
    ],
)
def test_malformed_bodies_are_coded_400s(
    shared: SharedServer, method: str, path: str, body: Any, code: str
) -> None:
    # The curator may decide (so a review body is checked); the writer holds two scopes (so a
    # write-back must name one).
    token = shared.curator if method == "PATCH" else shared.writer
    with shared.server.client(token) as http:
        assert error_code(http.request(method, path, json=body), 400) == code


def test_a_body_that_is_not_json_is_a_coded_400(shared: SharedServer) -> None:
    with shared.server.client(shared.writer) as http:
        response = http.post("/writeback", content=b"{not json", headers={"Content-Type": "x"})
        assert error_code(response, 400) == "MEMORY_USAGE_INVALID"


def test_the_openapi_document_describes_every_ob1_route(shared: SharedServer) -> None:
    with shared.server.client() as http:
        paths = http.get("/openapi.json").json()["paths"]
    for path, method, status in [
        ("/recall", "post", "200"),
        ("/writeback", "post", "202"),
        ("/memories/review", "get", "200"),
        ("/memories/{id}/review", "patch", "200"),
        ("/recall/{request_id}/usage", "post", "200"),
    ]:
        operation = paths[path][method]
        assert "schema" in operation["responses"][status]["content"]["application/json"]
        assert operation["security"] == [{"bearer": []}]
        if method != "get":
            assert "requestBody" in operation
