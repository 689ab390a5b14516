"""recall on the engine: scope isolation, budget, egress lineage, receipts, the empty answer."""

from __future__ import annotations

import hashlib
import json
import math

import pytest
from sqlalchemy.orm import Session

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import digest_of
from engine.storage.schema import tables


def canonical_sha256(value: object) -> str:
    """Independent of the engine: UTF-8, sorted keys, no whitespace between tokens."""
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def ids(result: dict) -> set[str]:
    return {fact["recordId"] for fact in result["facts"]}


# -- scope isolation --------------------------------------------------------------------------


def test_recall_in_a_scope_never_returns_facts_only_in_another(client):
    only_a = client.add("The deadline of project x is on friday", "a")["record"]["recordId"]
    only_b = client.add("The deadline of project y is on monday", "b")["record"]["recordId"]
    both = client.add("The deadline policy is strict", "a", "b")["record"]["recordId"]
    only_c = client.add("The deadline of project z is unknown", "c")["record"]["recordId"]

    assert ids(client.recall("deadline", ["a"])) == {only_a, both}
    assert ids(client.recall("deadline", ["b"])) == {only_b, both}
    # Visibility is any-intersection over the query's scopes.
    assert ids(client.recall("deadline", ["b", "c"])) == {only_b, both, only_c}
    assert ids(client.recall("deadline", ["a", "b", "c"])) == {only_a, only_b, both, only_c}
    nobody = client.recall("deadline", ["d"])
    assert nobody["facts"] == []
    # A returned fact always shares a scope with the query.
    for fact in client.recall("deadline", ["a", "c"])["facts"]:
        assert set(fact["scopes"]) & {"a", "c"}


def test_scope_filter_is_applied_before_the_ranking_window(client, engine):
    """Hundreds of better matches in another scope must not push the one visible fact out."""
    from engine.contract.normalize import content_hash, fact_uri, iso_utc
    from engine.storage.embedded.factfiles import FactFile
    from engine.storage.indexing import insert_fact_row
    from engine.storage.reads.records import row_from_file

    now = engine.now()
    with Session(engine.db, expire_on_commit=False) as session:
        for i in range(300):
            text = f"zebra stripes zebra savanna zebra {i}"
            record_id = f"mem-{i:016x}"
            fact = FactFile(
                record_id=record_id,
                scopes=["crowd"],
                caller="c",
                session="s",
                created_at=iso_utc(now),
                content_hash=content_hash(text),
                text=text,
            )
            row = row_from_file(
                fact,
                collection="memory",
                rel_path=f"facts/x/{record_id}.md",
                uri=fact_uri("memory", "2026-11-30", record_id),
                docid=f"#{i:08x}",
            )
            insert_fact_row(session, row, None, now)
        session.commit()
    mine = client.add("a quiet note that mentions a zebra once", "mine")["record"]["recordId"]
    result = client.recall("zebra stripes savanna", ["mine"], max_facts=1)
    assert ids(result) == {mine}
    crowd = client.recall("zebra stripes savanna", ["crowd"], max_facts=3)
    assert len(crowd["facts"]) == 3 and mine not in ids(crowd)


# -- budget -----------------------------------------------------------------------------------


def test_budget_skips_a_fact_that_does_not_fit_and_keeps_filling(client):
    big_text = "zebra stripes savanna " + "with a very long tail of words " * 8
    big = client.add(big_text, "s")["record"]
    small = client.add("zebra note", "s")["record"]
    tiny = client.add("zebra é", "s")["record"]  # multi-byte: tokens count bytes, not characters
    client.add("nothing relevant here", "s")
    cost = {
        r["recordId"]: math.ceil(len(r["text"].encode("utf-8")) / 4) for r in (big, small, tiny)
    }

    everything = client.recall("zebra stripes savanna", max_tokens=4096)
    order = [f["recordId"] for f in everything["facts"]]
    assert set(order) == set(cost)
    assert order[0] == big["recordId"], "precondition: the big fact ranks first"
    assert everything["budget"] == {
        "maxFacts": 8,
        "maxTokens": 4096,
        "usedTokens": sum(cost.values()),
        "omitted": 0,
    }

    limit = cost[small["recordId"]] + cost[tiny["recordId"]]
    assert limit < cost[big["recordId"]]
    squeezed = client.recall("zebra stripes savanna", max_tokens=limit)
    assert [f["recordId"] for f in squeezed["facts"]] == order[1:]
    assert (
        squeezed["budget"]["usedTokens"]
        == sum(math.ceil(len(f["text"].encode("utf-8")) / 4) for f in squeezed["facts"])
        == limit
    )
    assert squeezed["budget"]["omitted"] == 1
    assert squeezed["budget"]["maxTokens"] == limit

    one = client.recall("zebra stripes savanna", max_facts=1, max_tokens=4096)
    assert [f["recordId"] for f in one["facts"]] == order[:1]
    assert one["budget"]["omitted"] == 2
    assert one["budget"]["usedTokens"] == cost[big["recordId"]]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_facts", 0),
        ("max_facts", -1),
        ("max_tokens", "abc"),
        ("max_tokens", 0),
        ("max_facts", 1.5),
        ("max_tokens", True),
        ("max_facts", 10**9),
        ("max_facts", "²"),  # a digit to str.isdigit, not to int()
        ("max_tokens", "١٢"),  # Arabic-Indic digits: whole numbers are written 0-9 here
    ],
)
def test_bad_budget_is_rejected(client, field, value):
    with pytest.raises(MemoryFailure) as caught:
        client.recall("anything", **{field: value})
    assert caught.value.code == "MEMORY_BUDGET_INVALID"
    assert "whole number from 1" in caught.value.message
    with Session(client.engine.db) as session:
        assert session.query(tables.ReceiptRow).count() == 0


@pytest.mark.parametrize(
    ("fields", "code"),
    [
        ({"query": "  "}, "MEMORY_QUERY_REQUIRED"),
        ({"scopes": []}, "MEMORY_SCOPES_REQUIRED"),
        ({"scopes": ["Bad Scope"]}, "MEMORY_SCOPES_INVALID"),
        ({"collection": "nope"}, "MEMORY_COLLECTION_NOT_FOUND"),
        ({"caller": ""}, "MEMORY_IDENTITY_REQUIRED"),
    ],
)
def test_bad_recall_is_rejected(client, fields, code):
    query = fields.pop("query", "anything")
    scopes = fields.pop("scopes", ["s"])
    with pytest.raises(MemoryFailure) as caught:
        client.recall(query, scopes, **fields)
    assert caught.value.code == code


# -- egress -----------------------------------------------------------------------------------


def test_egress_ceiling_and_lineage(client, engine):
    engine.add_collection("zz-shared", policy="lan")
    engine.add_collection("aa-private", policy="local_only")
    engine.add_collection("mm-public", policy="remote")
    shared = client.add("Coffee is on the team budget", "team", collection="zz-shared")
    private = client.add("Coffee is my guilty pleasure", "team", collection="aa-private")
    public = client.add("Coffee machine is on floor two", "team", collection="mm-public")
    default = client.add("Coffee beans are in the cupboard", "team")

    everything = client.recall("coffee", ["team"])
    assert len(everything["facts"]) == 4
    lineage = everything["egressLineage"]
    assert lineage["effectivePolicy"] == "local_only"
    assert [s["collection"] for s in lineage["sources"]] == [
        "aa-private",
        "memory",
        "mm-public",
        "zz-shared",
    ]
    assert lineage["sources"][1] == {
        "collection": "memory",
        "policy": "local_only",
        "source": "config_default",
    }
    assert lineage["sources"][3] == {
        "collection": "zz-shared",
        "policy": "lan",
        "source": "explicit",
    }
    assert (
        lineage["digest"] == canonical_sha256(lineage["sources"]) == digest_of(lineage["sources"])
    )
    for fact in everything["facts"]:
        (source,) = fact["egressLineage"]["sources"]
        assert fact["uri"].startswith(f"gno://{source['collection']}/")
        assert fact["egressLineage"]["effectivePolicy"] == source["policy"]
        assert fact["egressLineage"]["digest"] == canonical_sha256([source])

    lan = client.recall("coffee", ["team"], egress="lan")
    assert ids(lan) == {shared["record"]["recordId"], public["record"]["recordId"]}
    assert lan["egressLineage"]["effectivePolicy"] == "lan"
    assert [s["collection"] for s in lan["egressLineage"]["sources"]] == ["mm-public", "zz-shared"]
    assert lan["egressLineage"]["digest"] == canonical_sha256(lan["egressLineage"]["sources"])

    remote = client.recall("coffee", ["team"], egress="remote")
    assert ids(remote) == {public["record"]["recordId"]}
    assert remote["egressLineage"]["effectivePolicy"] == "remote"

    assert ids(client.recall("coffee", ["team"], egress="local_only")) == ids(everything)
    only_private = client.recall("coffee", ["team"], collection="aa-private")
    assert ids(only_private) == {private["record"]["recordId"]}
    assert default["record"]["recordId"] in ids(everything)

    with pytest.raises(MemoryFailure) as caught:
        client.recall("coffee", ["team"], egress="internet")
    assert caught.value.code == "MEMORY_POLICY_INVALID"


def test_a_stricter_policy_applies_at_once(client, engine):
    engine.add_collection("shared", policy="lan")
    client.add("Lunch is at noon", "team", collection="shared")
    assert len(client.recall("lunch", ["team"], egress="lan")["facts"]) == 1
    engine.set_policy("shared", "local_only", actor="person:test")
    tightened = client.recall("lunch", ["team"], egress="lan")
    assert tightened["facts"] == [] and "egressLineage" not in tightened


# -- receipts ---------------------------------------------------------------------------------


def test_receipt_is_content_free_and_its_digest_verifies_independently(client, engine):
    first = client.add("Alice drinks green tea", "user:alice")["record"]
    second = client.add("Alice likes black tea too", "user:alice")["record"]
    result = client.recall("tea", ["user:alice"], caller="agent:one", session="sess-42")
    receipt = result["receipt"]
    assert set(receipt) == {"caller", "session", "issuedAt", "memoryIds", "spanHashes", "digest"}
    assert (receipt["caller"], receipt["session"]) == ("agent:one", "sess-42")
    assert receipt["memoryIds"] == [f["recordId"] for f in result["facts"]]
    assert set(receipt["memoryIds"]) == {first["recordId"], second["recordId"]}
    assert receipt["spanHashes"] == [f["contentHash"] for f in result["facts"]]
    assert [f["spanHash"] for f in result["facts"]] == receipt["spanHashes"]
    body = {k: receipt[k] for k in ("caller", "session", "issuedAt", "memoryIds", "spanHashes")}
    assert receipt["digest"] == canonical_sha256(body)
    assert "tea" not in json.dumps(receipt)  # content-free
    # Every issued receipt is stored.
    with Session(engine.db) as session:
        stored = session.get(tables.ReceiptRow, receipt["digest"])
        assert stored is not None
        assert stored.memory_ids == receipt["memoryIds"]


def test_empty_recall_has_a_hint_and_no_lineage(client):
    client.add("Alice drinks green tea", "user:alice")
    result = client.recall("berlin weather", ["user:alice"])
    assert result["facts"] == []
    assert "gno-tui remember" in result["hint"]
    assert "egressLineage" not in result
    assert result["budget"]["usedTokens"] == 0 and result["budget"]["omitted"] == 0
    assert result["receipt"]["memoryIds"] == [] and result["receipt"]["spanHashes"] == []
    # A recall that finds something carries no hint.
    assert "hint" not in client.recall("green tea", ["user:alice"])


def test_empty_store_recall(client):
    result = client.recall("anything at all", ["fresh"])
    assert result["facts"] == [] and "gno-tui remember" in result["hint"]


def test_ob1_recall_validates(client, memory, valid):
    from engine.memory.recall import RecallRequest

    client.add("Alice drinks green tea", "user:alice")
    ob1 = memory.recall_ob1(
        RecallRequest(query="tea", scopes=["user:alice"], caller="c", session="s")
    )
    valid("ob1_recall", ob1)
    assert [m["content"] for m in ob1["memories"]] == ["Alice drinks green tea"]
