"""The keyed API over HTTP in instantKV's style (gno_tui/http/keyed_routes.py,
docs/keyed-api.md "Over HTTP"): a real `gno-tui serve`, httpx as the agent. The server is
shared by the module, so every test writes keys and topics of its own."""

from __future__ import annotations

import uuid
from typing import Any
from urllib.parse import quote

import httpx
from http_harness import SharedServer, assert_valid, error_code

NOTES = "/v1/namespaces/notes"
HELD = "keyed-memory-held.schema.json"


def record(key: str, namespace: str = "notes") -> str:
    return f"/v1/namespaces/{namespace}/records/{quote(key, safe='/')}"


def memory(content: str, **fields: Any) -> dict[str, Any]:
    return {"memory": {"content": content, **fields}}


def listed(http: httpx.Client, **params: str) -> dict[str, Any]:
    response = http.get(f"{NOTES}/records", params=params)
    assert response.status_code == 200, response.text
    return assert_valid("keyed_recall", response.json())


def test_a_create_its_retry_and_an_update_answer_201_200_200_with_the_revision_as_etag(
    shared: SharedServer,
) -> None:
    key = "prefs/alice/tea λ"
    with shared.server.client(shared.writer) as http:
        created = http.put(record(key), json=memory("Alice prefers green tea", tags=["Alice"]))
        assert created.status_code == 201, created.text
        hit = assert_valid("keyed_hit", created.json())
        assert (hit["key"], hit["revision"], hit["memory"]["tags"]) == (key, 1, ["alice"])
        assert created.headers["etag"] == '"1"'
        assert created.headers["location"] == record(key)

        retried = http.put(record(key), json=memory("Alice prefers green tea", tags=["alice"]))
        assert retried.status_code == 200, retried.text
        assert assert_valid("keyed_hit", retried.json()) == hit  # the stored head, unchanged
        assert retried.headers["etag"] == '"1"'

        updated = http.put(
            record(key), json=memory("Alice prefers black tea"), headers={"If-Match": '"1"'}
        )
        assert updated.status_code == 200, updated.text
        assert assert_valid("keyed_hit", updated.json())["revision"] == 2
        assert updated.headers["etag"] == '"2"'
        # a bare revision is accepted too, and the body may carry the same key
        bare = http.put(
            record(key),
            json={"key": key, **memory("Alice prefers oolong")},
            headers={"If-Match": "2"},
        )
        assert bare.status_code == 200, bare.text
        assert bare.headers["etag"] == '"3"'

        got = http.get(record(key))
        assert got.status_code == 200, got.text
        assert assert_valid("keyed_hit", got.json())["memory"]["content"] == "Alice prefers oolong"
        assert got.headers["etag"] == '"3"'
        history = http.get(f"{NOTES}/history/{quote(key, safe='/')}")
        assert history.status_code == 200, history.text
        items = assert_valid("keyed_history", history.json())["items"]
        assert [item["memory"]["content"] for item in items] == [
            "Alice prefers green tea",
            "Alice prefers black tea",
            "Alice prefers oolong",
        ]


def test_a_stale_if_match_is_a_409_conflict_that_leaves_the_head_alone(
    shared: SharedServer,
) -> None:
    key = "stale/deploy-window"
    with shared.server.client(shared.writer) as http:
        assert http.put(record(key), json=memory("Deploys on Tuesday")).status_code == 201
        assert (
            http.put(
                record(key), json=memory("Deploys on Wednesday"), headers={"If-Match": '"1"'}
            ).status_code
            == 200
        )
        late = http.put(record(key), json=memory("Deploys on Friday"), headers={"If-Match": '"1"'})
        assert error_code(late, 409) == "MEMORY_REVISION_CONFLICT"
        assert "revision 2" in late.json()["error"]["message"]
        # the same conflict through the body's if_revision
        body = http.put(record(key), json={"if_revision": 1, **memory("Deploys on Friday")})
        assert error_code(body, 409) == "MEMORY_REVISION_CONFLICT"
        head = http.get(record(key))
        assert head.json()["memory"]["content"] == "Deploys on Wednesday"
        assert head.headers["etag"] == '"2"'
        # If-Match on a key that holds nothing: there is nothing to update
        missing = http.put(
            record("stale/never-written"), json=memory("x"), headers={"If-Match": '"1"'}
        )
        assert error_code(missing, 404) == "MEMORY_KEY_NOT_FOUND"


def test_if_none_match_star_creates_only(shared: SharedServer) -> None:
    key = "create-only/door-code"
    create_only = {"If-None-Match": "*"}
    with shared.server.client(shared.writer) as http:
        first = http.put(record(key), json=memory("The door code is 4411"), headers=create_only)
        assert first.status_code == 201, first.text
        same = http.put(record(key), json=memory("The door code is 4411"), headers=create_only)
        assert same.status_code == 200 and same.json()["revision"] == 1  # a retry
        other = http.put(record(key), json=memory("The door code is 9999"), headers=create_only)
        assert error_code(other, 409) == "MEMORY_KEY_EXISTS"
        assert http.get(record(key)).json()["memory"]["content"] == "The door code is 4411"


def test_conditions_that_contradict_each_other_are_a_coded_400(shared: SharedServer) -> None:
    key = "contradictions/k"
    with shared.server.client(shared.writer) as http:
        assert http.put(record(key), json=memory("v1")).status_code == 201
        cases = [
            ({"if_revision": 2, **memory("v2")}, {"If-Match": '"1"'}),  # header vs body
            ({"key": "another/key", **memory("v2")}, {}),  # body key vs path
            (memory("v2"), {"If-Match": '"1"', "If-None-Match": "*"}),
            ({"if_revision": 1, **memory("v2")}, {"If-None-Match": "*"}),
            (memory("v2"), {"If-Match": 'W/"1"'}),
            (memory("v2"), {"If-Match": "one"}),
            (memory("v2"), {"If-None-Match": '"1"'}),
        ]
        for body, headers in cases:
            response = http.put(record(key), json=body, headers=headers)
            assert error_code(response, 400) == "MEMORY_REQUEST_INVALID", (body, headers)
        head = http.get(record(key))
        assert (head.json()["memory"]["content"], head.headers["etag"]) == ("v1", '"1"')


def test_a_key_with_no_live_head_is_404(shared: SharedServer) -> None:
    with shared.server.client(shared.writer) as http:
        assert error_code(http.get(record("nothing/here")), 404) == "MEMORY_KEY_NOT_FOUND"
        history = http.get(f"{NOTES}/history/nothing/here")
        assert error_code(history, 404) == "MEMORY_KEY_NOT_FOUND"


def test_the_list_pages_newest_first_and_every_item_comes_once(shared: SharedServer) -> None:
    topic = "paging"
    keys = [f"paging/{n}" for n in range(7)]
    with shared.server.client(shared.writer) as http:
        for n, key in enumerate(keys):
            body = memory(f"Paging note {n}", topic=topic, occurred_at_ms=1_700_000_000_000 + n)
            assert http.put(record(key), json=body).status_code == 201
        seen: list[str] = []
        cursor = ""
        pages = 0
        while True:
            page = listed(http, topic=topic, limit="3", cursor=cursor)
            seen += [item["key"] for item in page["items"]]
            pages += 1
            if page["next_cursor"] is None:
                break
            cursor = page["next_cursor"]
        assert pages >= 3
        assert seen == list(reversed(keys))  # newest event first, each exactly once
        # the same list as the keyed recall body says it
        recalled = http.post(f"{NOTES}/recall", json={"topic": topic, "limit": 100})
        assert [item["key"] for item in recalled.json()["items"]] == seen
        # and the query filters as recall's does
        one = listed(http, topic=topic, query="note 4")
        assert [item["key"] for item in one["items"]] == ["paging/4"]


def test_list_parameters_that_are_not_numbers_or_not_known_are_a_coded_400(
    shared: SharedServer,
) -> None:
    with shared.server.client(shared.writer) as http:
        for params in ({"limit": "ten"}, {"limit": "-1"}, {"since_ms": "1e3"}, {"lmit": "5"}):
            response = http.get(f"{NOTES}/records", params=params)
            assert error_code(response, 400) == "MEMORY_REQUEST_INVALID", params
        # in range is the engine's check, as recall's: limit is 1 to 100
        assert error_code(http.get(f"{NOTES}/records?limit=0"), 400) == "MEMORY_REQUEST_INVALID"
        garbage = http.get(f"{NOTES}/records?cursor=not-a-cursor")
        assert error_code(garbage, 400) == "MEMORY_CURSOR_INVALID"


def test_recall_and_search_take_the_seed_bodies_unchanged(shared: SharedServer) -> None:
    with shared.server.client(shared.writer) as http:
        for key, text in (
            ("cars/alice", "Alice bought a red automobile in March"),
            ("cars/bob", "Bob rides a bicycle to work"),
        ):
            body = memory(text, topic="vehicles", tags=["people"], metadata={"source": "chat"})
            assert http.put(record(key), json=body).status_code == 201
        recall = http.post(
            f"{NOTES}/recall",
            json={"query": "alice automobile", "tag": "people", "limit": 5, "max_bytes": 4096},
        )
        assert recall.status_code == 200, recall.text
        items = assert_valid("keyed_recall", recall.json())["items"]
        assert [item["key"] for item in items] == ["cars/alice"]
        assert items[0]["memory"]["metadata"] == {"source": "chat"}

        search = http.post(
            f"{NOTES}/search", json={"query": "car", "expand": True, "topic": "vehicles"}
        )
        assert search.status_code == 200, search.text
        found = assert_valid("keyed_search", search.json())["items"]
        assert [item["key"] for item in found] == ["cars/alice"]  # car ~ automobile
        assert found[0]["score"] > 0
        plain = http.post(f"{NOTES}/search", json={"query": "car", "topic": "vehicles"})
        assert assert_valid("keyed_search", plain.json())["items"] == []


def test_a_namespace_the_token_lacks_is_403_and_shows_none_of_its_content(
    shared: SharedServer,
) -> None:
    key = "secrets/launch"
    content = "The launch codename is BLUEHERON"
    with shared.server.client(shared.writer) as http:
        assert http.put(record(key), json=memory(content, topic="launch")).status_code == 201
        refused = http.put(record("mine", "other"), json=memory("x"))
        assert error_code(refused, 403) == "MEMORY_GRANT_MISSING"
    with shared.server.client(shared.outsider) as http:
        attempts = [
            http.get(record(key)),
            http.get(f"{NOTES}/records", params={"topic": "launch"}),
            http.get(f"{NOTES}/history/{key}"),
            http.post(f"{NOTES}/recall", json={"query": "launch"}),
            http.post(f"{NOTES}/search", json={"query": "launch codename"}),
            http.put(record(key), json=memory("overwritten"), headers={"If-Match": '"1"'}),
            http.delete(record(key)),
            http.get(record(key, "NOTES")),  # the namespace as the engine names it
        ]
        for response in attempts:
            assert error_code(response, 403) == "MEMORY_GRANT_MISSING"
            assert "BLUEHERON" not in response.text and "launch" not in response.text.lower()
        # its own namespace holds nothing of notes
        own = http.post("/v1/namespaces/other/search", json={"query": "launch codename"})
        assert assert_valid("keyed_search", own.json())["items"] == []
        assert error_code(http.get(record(key, "other")), 404) == "MEMORY_KEY_NOT_FOUND"
    with shared.server.client(shared.writer) as http:
        head = http.get(record(key))
        assert (head.json()["memory"]["content"], head.headers["etag"]) == (content, '"1"')


def test_a_propose_only_token_has_its_put_held_for_a_person(shared: SharedServer) -> None:
    key = "held/standup"
    with shared.server.client(shared.proposer) as http:
        held = http.put(record(key), json=memory("Standup moves to 10:00", topic="held"))
        assert held.status_code == 202, held.text
        result = assert_valid(HELD, held.json())
        assert (result["status"], result["key"], result["if_revision"]) == ("held", key, None)
        again = http.put(record(key), json=memory("Standup moves to 10:00", topic="held"))
        assert again.status_code == 202
        assert again.json()["proposal_id"] == result["proposal_id"]  # the same proposal
        assert error_code(http.get(record(key)), 404) == "MEMORY_KEY_NOT_FOUND"
        assert listed(http, topic="held")["items"] == []
    with shared.server.client(shared.writer) as http:
        assert error_code(http.get(record(key)), 404) == "MEMORY_KEY_NOT_FOUND"


def test_delete_retires_the_head_and_keeps_its_history(shared: SharedServer) -> None:
    key = "retire/wifi"
    with shared.server.client(shared.writer) as http:
        assert http.put(record(key), json=memory("Wifi password is hunter2", topic="wifi"))
        assert (
            http.put(
                record(key), json=memory("Wifi password is hunter3"), headers={"If-Match": "1"}
            ).status_code
            == 200
        )
        stale = http.delete(record(key), headers={"If-Match": '"1"'})
        assert error_code(stale, 409) == "MEMORY_REVISION_CONFLICT"
        assert http.get(record(key)).status_code == 200
    with shared.server.client(shared.proposer) as http:
        refused = http.delete(record(key))
        assert error_code(refused, 403) == "MEMORY_GRANT_MISSING"
        assert http.get(record(key)).status_code == 200

    with shared.server.client(shared.writer) as http:
        deleted = http.delete(record(key), headers={"If-Match": '"2"'})
        assert deleted.status_code == 204, deleted.text
        assert deleted.content == b""
        assert error_code(http.get(record(key)), 404) == "MEMORY_KEY_NOT_FOUND"
        assert listed(http, query="hunter3")["items"] == []
        search = http.post(f"{NOTES}/search", json={"query": "wifi password"})
        assert key not in [item["key"] for item in search.json()["items"]]
        history = http.get(f"{NOTES}/history/{key}")
        contents = [item["memory"]["content"] for item in history.json()["items"]]
        assert contents == ["Wifi password is hunter2", "Wifi password is hunter3"]
        assert error_code(http.delete(record(key)), 404) == "MEMORY_KEY_NOT_FOUND"
        # the key is free again: its next revision
        again = http.put(record(key), json=memory("Wifi password is hunter4"))
        assert again.status_code == 201, again.text
        assert (again.json()["revision"], again.headers["etag"]) == (3, '"3"')


def test_malformed_bodies_are_a_coded_400(shared: SharedServer) -> None:
    json_header = {"Content-Type": "application/json"}
    with shared.server.client(shared.writer) as http:
        cases = [
            http.put(record("bad/1"), content=b"{not json", headers=json_header),
            http.put(record("bad/1"), json=["a", "list"]),
            http.put(record("bad/1"), json={"memory": {"content": 42}}),
            http.put(record("bad/1"), json={"memory": {"content": "x"}, "ttl_seconds": "1h"}),
            http.put(record("bad/1"), json={"memory": {"content": "x"}, "extra": True}),
            http.put(record("bad/1")),  # no body at all
            http.post(f"{NOTES}/recall", content=b"\xff\xfe", headers=json_header),
            http.post(f"{NOTES}/recall", json={"limit": "ten"}),
            http.post(f"{NOTES}/search", json={"query": "x", "expand": "yes"}),
            http.post(f"{NOTES}/search", json="query"),
        ]
        for response in cases:
            assert error_code(response, 400).startswith("MEMORY_"), response.request.content
        assert error_code(http.get(record("bad/1")), 404) == "MEMORY_KEY_NOT_FOUND"


def test_the_openapi_document_describes_the_keyed_routes(shared: SharedServer) -> None:
    with shared.server.client() as http:
        document = http.get("/openapi.json").json()
    item = document["paths"]["/v1/namespaces/{namespace}/records/{key}"]
    assert set(item) == {"get", "put", "delete"}
    assert {"200", "201", "202"} <= set(item["put"]["responses"])
    assert "requestBody" in item["put"] and "requestBody" not in item["get"]
    assert {p["name"] for p in item["put"]["parameters"]} >= {"namespace", "key", "if-match"}
    listing = document["paths"]["/v1/namespaces/{namespace}/records"]["get"]
    assert {p["name"] for p in listing["parameters"]} >= {"cursor", "limit", "query", "tag"}
    for name in ("recall", "search"):
        assert "requestBody" in document["paths"][f"/v1/namespaces/{{namespace}}/{name}"]["post"]


def test_an_idempotency_key_makes_a_keyed_update_safe_to_retry(shared: SharedServer) -> None:
    suffix = uuid.uuid4().hex[:8]
    key = f"retry/{suffix}"
    path = f"/v1/namespaces/notes/records/{key}"
    with shared.server.client(shared.writer) as http:
        created = http.put(path, json={"memory": {"content": "first words"}})
        assert created.status_code == 201, created.text
        update = {"memory": {"content": "second words"}}
        headers = {"If-Match": '"1"', "Idempotency-Key": f"upd-{suffix}"}
        first = http.put(path, json=update, headers=headers)
        again = http.put(path, json=update, headers=headers)
        assert first.status_code == again.status_code == 200, again.text
        assert first.json() == again.json() and again.json()["revision"] == 2
        assert again.headers["etag"] == '"2"'
        assert http.get(path).json()["revision"] == 2  # written once: no third revision
        other = http.put(path, json={"memory": {"content": "third"}}, headers=headers)
        assert error_code(other, 409) == "MEMORY_REQUEST_CONFLICT"
        status = http.get(f"/api/requests/upd-{suffix}").json()
        assert (status["verb"], status["status"]) == ("keyed-put", 200)
        gone = {"Idempotency-Key": f"del-{suffix}"}
        assert http.delete(path, headers=gone).status_code == 204
        assert http.delete(path, headers=gone).status_code == 204  # the first answer again
        assert http.get(path).status_code == 404
