from conftest import SharedServer
from http_harness import assert_valid, error_code


def test_a_write_then_a_recall_answer_the_seed_results(shared: SharedServer) -> None:
    with shared.server.client(shared.writer) as http:
        added = http.post(
            "/api/memory/remember",
            json={"text": "The deploy window is Tuesday", "scopes": ["team:a"], "decision": "add"},
        )
        assert added.status_code == 201, added.text
        assert_valid("remember", added.json())["outcome"] == "added"
        recalled = http.post("/api/memory/recall", json={"query": "deploy", "scopes": ["team:a"]})
        assert recalled.status_code == 200
        facts = assert_valid("recall", recalled.json())["facts"]
        assert [fact["text"] for fact in facts] == ["The deploy window is Tuesday"]
        assert facts[0]["caller"] == "http:writer"


def test_no_token_is_refused(shared: SharedServer) -> None:
    with shared.server.client() as http:
        response = http.post("/api/memory/recall", json={"query": "x", "scopes": ["team:a"]})
        assert error_code(response, 401) == "MEMORY_AUTH_REQUIRED"
