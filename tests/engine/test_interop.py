"""Import and export: every format in, round trips that compare every field, all-or-nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.contract.errors import MemoryFailure
from engine.contract.validation import schema_errors
from engine.curation import review
from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.interop import transfer as interop
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage import proposals


def fresh(tmp_path: Path, name: str):
    return open_engine(home=tmp_path / name, embedder_status=EmbedderStatus(None, "tests"))


def seed(client) -> None:
    tea = client.add("Alice likes green tea", "user:alice", source="chat 2026-11-01")
    coffee = client.supersede(tea, "Alice switched to coffee")
    client.supersede(coffee, "Alice drinks only water now")
    client.add("The deploy runs on Fridays", "project:gno", "team:infra")
    bob = client.add("Bob lives in Lyon", "user:bob")
    review.retire(client.engine, ref=bob["record"]["uri"], actor="tui:test", reason="moved")
    review.confirm(client.engine, ref=bob["record"]["uri"], actor="tui:test")


def test_jsonl_round_trip_reproduces_every_field(client, tmp_path):
    seed(client)
    exported = interop.export_jsonl_items(client.engine)
    assert len(exported) == 5
    path = tmp_path / "facts.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in exported), encoding="utf-8")
    target = fresh(tmp_path, "copy")
    report = interop.run_import(target, path)
    assert (report.count("add"), report.count("skip"), report.count("propose")) == (5, 0, 0)
    assert interop.export_jsonl_items(target) == exported
    # The chain is live again: only the head is recalled, and reindex finds nothing to fix.
    assert MemoryService(target).reindex()["changed"] == 0
    # Importing the same file again changes nothing.
    again = interop.run_import(target, path)
    assert again.count("add") == 0 and again.count("skip") == 5


def test_gno_folder_round_trip(client, tmp_path):
    seed(client)
    count = interop.export_gno(client.engine, tmp_path / "out")
    assert count == 5
    target = fresh(tmp_path, "copy")
    interop.run_import(target, tmp_path / "out")
    assert interop.export_jsonl_items(target) == interop.export_jsonl_items(client.engine)


def test_ob1_export_validates_and_imports(client, tmp_path):
    seed(client)
    document = interop.export_ob1(client.engine)
    assert schema_errors("ob1_recall", document) == []
    assert {m["provenance"]["status"] for m in document["memories"]} >= {
        "observed",
        "user_confirmed",
    }
    path = tmp_path / "ob1.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    target = fresh(tmp_path, "copy")
    report = interop.run_import(target, path)
    assert report.count("add") == 5
    heads = [i for i in interop.export_jsonl_items(target) if "supersededBy" not in i]
    assert {i["text"] for i in heads} == {
        "Alice drinks only water now",
        "The deploy runs on Fridays",
        "Bob lives in Lyon",
    }


def test_mem0_import_dedups_into_the_review_queue(client, tmp_path):
    client.add("Alice prefers green tea in the morning", "user:alice")
    mem0 = {
        "results": [
            {
                "id": "1",
                "memory": "Alice prefers green tea in the morning",
                "user_id": "alice",
                "hash": "x",
                "metadata": {},
                "created_at": "2026-01-02T03:04:05Z",
            },
            {"id": "2", "memory": "Alice prefers green tea in the mornings", "user_id": "alice"},
            {
                "id": "3",
                "memory": "Alice collects vinyl records",
                "user_id": "alice",
                "metadata": {"topic": "hobby"},
            },
        ]
    }
    path = tmp_path / "mem0.json"
    path.write_text(json.dumps(mem0), encoding="utf-8")
    dry = interop.run_import(client.engine, path, dry_run=True)
    assert [a["action"] for a in dry.actions] == ["skip", "propose", "add"]
    assert proposals.list_proposals(client.engine) == []
    interop.run_import(client.engine, path)
    pending = proposals.list_proposals(client.engine)
    assert [p["text"] for p in pending] == ["Alice prefers green tea in the mornings"]
    assert pending[0]["origin"] == "import"
    found = client.recall("vinyl records", ["user:alice"])
    assert found["facts"][0]["text"] == "Alice collects vinyl records"
    row = interop.export_jsonl_items(client.engine)[-1]
    assert row["workbench"]["provenance"]["status"] == "imported"


@pytest.mark.parametrize(
    ("content", "fmt", "where"),
    [
        (
            '{"text": "ok", "scopes": ["a"]}\n{"text": "x", "scopes": ["a"], "oops": 1}\n',
            "jsonl",
            ":2",
        ),
        ('{"text": "ok", "scopes": ["a"]}\nnot json\n', "jsonl", ":2"),
        ('{"text": "ok", "scopes": ["Bad Scope!"]}\n', "jsonl", ":1"),
        (
            '{"schema_version": "openbrain.openclaw.recall_response.v1", "memories": []}',
            "ob1",
            "#/",
        ),
        ('{"results": [{"memory": 5}]}', "mem0", "#/results/0"),
    ],
)
def test_bad_input_names_the_place_and_writes_nothing(client, probe, tmp_path, content, fmt, where):
    path = tmp_path / f"bad.{'jsonl' if fmt == 'jsonl' else 'json'}"
    path.write_text(content, encoding="utf-8")
    before = probe.state()
    with pytest.raises(MemoryFailure) as failure:
        interop.run_import(client.engine, path, fmt=fmt)
    assert failure.value.code == "MEMORY_IMPORT_INVALID"
    assert f"{path}{where}" in failure.value.message
    assert "Nothing was imported" in failure.value.message
    probe.assert_nothing_written(before)


def test_garbage_file_is_refused_without_writing(client, probe, tmp_path):
    path = tmp_path / "garbage.bin"
    path.write_bytes(bytes(range(256)) * 40_000)  # 10 MB of binary
    before = probe.state()
    with pytest.raises(MemoryFailure) as failure:
        interop.run_import(client.engine, path)
    assert failure.value.code == "MEMORY_IMPORT_INVALID"
    assert str(path) in failure.value.message
    probe.assert_nothing_written(before)
