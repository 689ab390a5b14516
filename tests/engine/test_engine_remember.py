"""remember on the engine: outcomes, identity, fact files, validation errors, matching modes."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from typing import Any

import pytest
import yaml

from engine.contract.errors import MemoryFailure

HEX64 = re.compile(r"^[0-9a-f]{64}$")


def _fail(call: Any, code: str) -> MemoryFailure:
    with pytest.raises(MemoryFailure) as caught:
        call()
    assert caught.value.code == code, caught.value
    return caught.value


# -- outcomes ---------------------------------------------------------------------------------


def test_add_writes_one_file_and_one_row_with_gno_identity(client, probe, home):
    result = client.add("Alice prefers green tea", "user:alice", source="chat 2026-11-30")
    record = result["record"]
    assert re.fullmatch(r"mem-[0-9a-f]{16}", record["recordId"])
    day = record["createdAt"][:10]
    assert record["uri"] == f"gno://memory/facts/{day}/{record['recordId']}.md"
    assert record["docid"] == "#" + record["recordId"][4:12]
    assert record["supersedes"] == []
    assert record["source"] == "chat 2026-11-30"
    assert (record["caller"], record["session"]) == ("test:agent", "test-session")
    assert result["absPath"] == probe.abs_path(record)
    (path,) = probe.files()  # the home's file, or in the server mode its mirror
    assert path.relative_to(path.parents[2]).as_posix() == f"facts/{day}/{record['recordId']}.md"
    assert probe.rows() == [(record["recordId"], "Alice prefers green tea")]

    front, body = path.read_text(encoding="utf-8").split("---\n")[1:3]
    meta = yaml.safe_load(front)
    assert meta["title"] == "Alice prefers green tea"
    assert meta["memory"]["recordId"] == record["recordId"]
    assert meta["memory"]["scopes"] == ["user:alice"]
    assert meta["memory"]["contentHash"] == record["contentHash"]
    assert meta["memory"]["source"] == "chat 2026-11-30"
    assert "relations" not in meta
    assert body.strip() == "Alice prefers green tea"


def test_content_hash_is_sha256_of_nfc_collapsed_text(client):
    text = "  Cafe\u0301   au\tlait \n is   fine  "
    record = client.add(text, "s")["record"]
    expected_text = " ".join(unicodedata.normalize("NFC", text).split())
    assert record["contentHash"] == hashlib.sha256(expected_text.encode("utf-8")).hexdigest()
    assert HEX64.match(record["contentHash"])
    # The same statement with other whitespace and composition is the same fact.
    again = client.remember("Café au lait is fine", ["s"])
    assert again["outcome"] == "existing"
    assert again["record"]["recordId"] == record["recordId"]


def test_scopes_are_trimmed_lowercased_and_deduplicated(client):
    record = client.add("Scopes get normalised", " User:Alice ", "user:alice", "PROJECT/Gno")[
        "record"
    ]
    assert record["scopes"] == ["user:alice", "project/gno"]
    # Nine given, eight after deduplication: allowed (counted after deduplication).
    eight = [f"s{i}" for i in range(8)]
    ok = client.add("Eight distinct scopes", *eight, "S0")
    assert ok["record"]["scopes"] == eight


def test_same_text_in_intersecting_scope_is_existing_and_writes_nothing(client, probe):
    first = client.add("Bob lives in Berlin", "user:bob", "team:x")
    before = probe.state()
    again = client.remember("Bob lives in Berlin", ["team:x", "other"])
    assert again["outcome"] == "existing"
    assert again["record"] == first["record"]
    # A propose of the same text also answers existing.
    assert (
        client.remember("Bob lives in Berlin", ["user:bob"], decision="propose")["outcome"]
        == "existing"
    )
    assert probe.state() == before == (1, 1)


def test_same_text_in_disjoint_scope_is_added(client, probe):
    first = client.add("Bob lives in Berlin", "user:bob")
    second = client.add("Bob lives in Berlin", "user:carol")
    assert second["record"]["recordId"] != first["record"]["recordId"]
    assert second["record"]["contentHash"] == first["record"]["contentHash"]
    assert probe.state() == (2, 2)


def test_same_text_in_another_collection_is_added(client, engine, probe):
    engine.add_collection("work")
    client.add("Deadline is on Friday", "project:x")
    other = client.add("Deadline is on Friday", "project:x", collection="work")
    assert other["record"]["uri"].startswith("gno://work/facts/")
    assert probe.state() == (2, 2)


def test_propose_writes_nothing_and_lists_candidates(client, probe):
    client.add("Alice drinks green tea every morning", "user:alice")
    before = probe.state()
    result = client.remember(
        "Alice drinks green tea each morning", ["user:alice"], decision="propose"
    )
    assert result["outcome"] == "candidates"
    assert [c["text"] for c in result["candidates"]] == ["Alice drinks green tea every morning"]
    assert result["candidates"][0]["match"] in ("exact", "likely")
    # Out of scope, the same fact is no candidate.
    elsewhere = client.remember(
        "Alice drinks green tea each morning", ["user:bob"], decision="propose"
    )
    assert elsewhere["candidates"] == []
    assert probe.state() == before
    # The default decision is propose.
    default = client.remember("Alice drinks green tea each day", ["user:alice"], decision=None)
    assert default["outcome"] == "candidates"
    assert probe.state() == before


def test_text_limit_is_4096_bytes_after_normalisation(client, probe):
    client.add("é" * 2048, "s")  # 4096 bytes of UTF-8
    client.add("a" + " " * 6000 + "b", "s")  # collapses to 3 bytes
    failure = _fail(lambda: client.remember("é" * 2048 + "x", ["s"]), "MEMORY_TEXT_TOO_LARGE")
    assert "4097" in failure.message
    assert probe.state() == (2, 2)


# -- validation errors ------------------------------------------------------------------------

# (label, request fields, code, a phrase of the message that says how to fix it)
BAD_REQUESTS: list[tuple[str, dict[str, Any], str, str]] = [
    ("empty text", {"text": " \n\t "}, "MEMORY_TEXT_REQUIRED", "gno-tui remember"),
    ("no text", {"text": None}, "MEMORY_TEXT_REQUIRED", "gno-tui remember"),
    ("oversized text", {"text": "x" * 4097}, "MEMORY_TEXT_TOO_LARGE", "split"),
    ("no scopes", {"scopes": None}, "MEMORY_SCOPES_REQUIRED", "--scope"),
    ("empty scope list", {"scopes": []}, "MEMORY_SCOPES_REQUIRED", "--scope"),
    ("nine scopes", {"scopes": [f"s{i}" for i in range(9)]}, "MEMORY_SCOPES_INVALID", "at most 8"),
    (
        "malformed scope",
        {"scopes": ["-leading-dash"]},
        "MEMORY_SCOPES_INVALID",
        "starts with a letter or digit",
    ),
    (
        "scope with space",
        {"scopes": ["user alice"]},
        "MEMORY_SCOPES_INVALID",
        "starts with a letter or digit",
    ),
    (
        "65-char scope",
        {"scopes": ["a" * 65]},
        "MEMORY_SCOPES_INVALID",
        "starts with a letter or digit",
    ),
    (
        "unknown collection",
        {"collection": "nope"},
        "MEMORY_COLLECTION_NOT_FOUND",
        "gno-tui collection add nope",
    ),
    ("unknown decision", {"decision": "delete"}, "MEMORY_DECISION_INVALID", "add or supersede"),
    (
        "predecessor with add",
        {"predecessor": "PRED"},
        "MEMORY_DECISION_INVALID",
        "--decision supersede",
    ),
    (
        "supersede without hash",
        {"decision": "supersede", "predecessor": "PRED"},
        "MEMORY_PREDECESSOR_REQUIRED",
        "--predecessor-hash",
    ),
    (
        "supersede with stale hash",
        {"decision": "supersede", "predecessor": "PRED", "predecessor_hash": "0" * 64},
        "MEMORY_PREDECESSOR_HASH_MISMATCH",
        "recall it again",
    ),
    (
        "supersede of unknown uri",
        {
            "decision": "supersede",
            "predecessor": "gno://memory/facts/2026-01-01/mem-0000000000000000.md",
            "predecessor_hash": "0" * 64,
        },
        "MEMORY_PREDECESSOR_NOT_FOUND",
        "recall it again",
    ),
    ("empty caller", {"caller": " "}, "MEMORY_IDENTITY_REQUIRED", "--caller"),
    ("empty session", {"session": ""}, "MEMORY_IDENTITY_REQUIRED", "--session"),
]


@pytest.mark.parametrize(
    ("fields", "code", "hint"),
    [case[1:] for case in BAD_REQUESTS],
    ids=[case[0] for case in BAD_REQUESTS],
)
def test_bad_remember_is_an_error_that_writes_nothing(client, probe, fields, code, hint):
    existing = client.add("Carol moved to Lyon", "user:carol")["record"]
    before = probe.state()
    fields = {k: existing["uri"] if v == "PRED" else v for k, v in fields.items()}
    request: dict[str, Any] = {
        "text": "A brand new statement",
        "scopes": ["user:carol"],
        "decision": "add",
        **fields,
    }
    text, scopes = request.pop("text"), request.pop("scopes")
    failure = _fail(lambda: client.remember(text, scopes, **request), code)
    assert hint.lower() in failure.message.lower(), failure.message
    assert failure.exit_code == (4 if code == "MEMORY_SUPERSEDE_CONFLICT" else 1)
    probe.assert_nothing_written(before, "A brand new statement")


def test_exit_codes_follow_the_contract():
    from engine.contract.errors import ERROR_CODES, exit_code_for

    assert exit_code_for("MEMORY_SUPERSEDE_CONFLICT") == 4
    assert exit_code_for("MEMORY_WRITE_LEASE_BUSY") == 4
    assert exit_code_for("MEMORY_SYNC_FAILED") == 2
    assert exit_code_for("MEMORY_QUERY_FAILED") == 2
    assert exit_code_for("MEMORY_KEY_EXISTS") == exit_code_for("MEMORY_REVISION_CONFLICT") == 4
    assert exit_code_for("MEMORY_REQUEST_CONFLICT") == 4
    # The home cannot be written, or its collections.yaml is damaged: the store, not the input.
    assert exit_code_for("MEMORY_HOME_READ_ONLY") == exit_code_for("MEMORY_HOME_DAMAGED") == 2
    ones = ERROR_CODES - {
        "MEMORY_REQUEST_CONFLICT",
        "MEMORY_SUPERSEDE_CONFLICT",
        "MEMORY_WRITE_LEASE_BUSY",
        "MEMORY_KEY_EXISTS",
        "MEMORY_REVISION_CONFLICT",
        "MEMORY_SYNC_FAILED",
        "MEMORY_QUERY_FAILED",
        "MEMORY_INTERNAL",
        "MEMORY_HOME_READ_ONLY",
        "MEMORY_HOME_DAMAGED",
    }
    assert {exit_code_for(code) for code in ones} == {1}


# -- matching and retrieval modes -------------------------------------------------------------


def test_without_a_model_matching_and_retrieval_are_lexical_and_say_why(client, engine):
    reason = engine.embedder_status.unavailable_reason
    assert reason
    added = client.add("Alice drinks green tea", "user:alice")
    assert added["matching"]["mode"] == "lexical"
    assert added["matching"]["semanticUnavailable"] == reason
    proposed = client.remember("Alice drinks green tea daily", ["user:alice"], decision="propose")
    assert proposed["matching"] == added["matching"]
    recalled = client.recall("green tea", ["user:alice"])
    assert recalled["retrieval"] == {"mode": "lexical", "semanticUnavailable": reason}
    assert [f["recordId"] for f in recalled["facts"]] == [added["record"]["recordId"]]


def test_semantic_mode_with_the_tiny_model(semantic_client, probe):
    added = semantic_client.add("Alice drinks green tea", "user:alice")
    assert added["matching"]["mode"] == "semantic"
    assert "semanticUnavailable" not in added["matching"]
    assert 0 < added["matching"]["threshold"] <= 1
    # Word order does not change a static embedding: the reordered text is an exact candidate.
    proposed = semantic_client.remember(
        "green tea Alice drinks", ["user:alice"], decision="propose"
    )
    assert proposed["matching"]["mode"] == "semantic"
    assert [c["recordId"] for c in proposed["candidates"]] == [added["record"]["recordId"]]
    assert proposed["candidates"][0]["match"] == "exact"
    assert proposed["candidates"][0]["similarity"] == pytest.approx(1.0, abs=1e-3)
    recalled = semantic_client.recall("what does alice drink", ["user:alice"])
    assert recalled["retrieval"] == {"mode": "hybrid"}
    assert [f["recordId"] for f in recalled["facts"]] == [added["record"]["recordId"]]
    assert probe.state() == (1, 1)


def test_docid_grows_on_a_collision(client, monkeypatch):
    ids = iter(["mem-abcdef0100000001", "mem-abcdef0100000002", "mem-abcdef0100000003"])
    monkeypatch.setattr(client.engine, "_ids", ids.__next__)  # as open_engine(ids=...) would
    docids = [client.add(f"Fact number {i}", "s")["record"]["docid"] for i in range(3)]
    assert docids == ["#abcdef01", "#abcdef010", "#abcdef0100"]
    assert len(set(docids)) == 3
