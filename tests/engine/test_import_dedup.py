"""An import dedups its items against each other, not only against the store: a memory that
repeats an earlier one of the same file, in a shared scope, goes to the review queue (a
likely duplicate) or is skipped (the same text), as it would if remembered one by one."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from engine.contract.errors import MemoryFailure
from engine.facade.interop import ImportRequest
from engine.facade.service import MemoryService
from engine.interop import transfer
from engine.retrieval.embeddings import load_embedder
from engine.storage.store import MemoryEngine


def mem0_export(tmp_path: Path, *memories: tuple[str, str]) -> Path:
    path = tmp_path / "mem0.json"
    results = [
        {"id": f"m{n}", "memory": text, "user_id": user} for n, (text, user) in enumerate(memories)
    ]
    path.write_text(json.dumps({"results": results}), encoding="utf-8")
    return path


def actions(report: transfer.ImportReport) -> list[tuple[str, str]]:
    return [(a["action"], a["reason"]) for a in report.actions]


@pytest.fixture(params=["bundled model", "lexical"])
def service(request: pytest.FixtureRequest, tmp_path: Path) -> MemoryService:
    from engine.facade.factory import open_engine
    from engine.retrieval.embeddings import EmbedderStatus

    status = load_embedder() if request.param == "bundled model" else EmbedderStatus(None, "off")
    if request.param == "bundled model":
        assert status.embedder is not None, status.unavailable_reason
    return MemoryService(open_engine(home=tmp_path / "home", embedder_status=status))


def test_a_memory_differing_by_a_final_period_goes_to_the_review_queue(
    service: MemoryService, tmp_path: Path
) -> None:
    path = mem0_export(
        tmp_path,
        ("Prefers window seats on long flights", "alice"),
        ("Prefers window seats on long flights.", "alice"),
        ("Prefers window seats on long flights.", "bob"),  # another person: not a duplicate
        ("Allergic to peanuts", "alice"),
    )
    report = service.interop.import_file(ImportRequest(path=path, fmt="mem0"))
    got = actions(report)
    assert [action for action, _ in got] == ["add", "propose", "add", "add"], got
    assert "item 1 of this file" in got[1][1]
    engine: MemoryEngine = service.engine
    facts = {row["text"] for row in transfer.export_jsonl_items(engine)}
    assert "Prefers window seats on long flights." not in {
        row["text"] for row in transfer.export_jsonl_items(engine) if "user:alice" in row["scopes"]
    }
    assert len(facts) == 3
    [proposal] = service.curation.proposals()
    assert proposal["text"] == "Prefers window seats on long flights."
    first = next(
        row
        for row in transfer.export_jsonl_items(engine)
        if row["text"] == "Prefers window seats on long flights"
    )
    # The review queue names the earlier item, which is a fact now.
    assert [c["recordId"] for c in candidates_of(proposal)] == [first["recordId"]]


def candidates_of(proposal: Mapping[str, Any]) -> list[dict[str, Any]]:
    return list(proposal["candidates"])


def test_the_same_text_twice_in_a_file_is_added_once(
    service: MemoryService, tmp_path: Path
) -> None:
    path = tmp_path / "in.jsonl"
    line = json.dumps({"text": "The office moved to Lyon", "scopes": ["team:ops"]})
    other = json.dumps({"text": "Backups run at 2am", "scopes": ["team:ops"]})
    path.write_text(f"{line}\n{other}\n{line}\n", encoding="utf-8")
    report = service.interop.import_file(ImportRequest(path=path))
    assert actions(report) == [
        ("add", "new"),
        ("add", "new"),
        ("skip", "exact duplicate within the file"),
    ]
    again = service.interop.import_file(ImportRequest(path=path))
    assert [action for action, _ in actions(again)] == ["skip", "skip", "skip"]
    assert all("exact duplicate of gno://" in reason for _, reason in actions(again))


def test_a_dry_run_says_the_same_and_writes_nothing(service: MemoryService, tmp_path: Path) -> None:
    path = mem0_export(
        tmp_path,
        ("Works from home on Fridays", "carol"),
        ("Works from home on Fridays.", "carol"),
    )
    dry = service.interop.import_file(ImportRequest(path=path, fmt="mem0", dry_run=True))
    assert [action for action, _ in actions(dry)] == ["add", "propose"]
    assert transfer.export_jsonl_items(service.engine) == []
    assert service.curation.proposals() == []


def test_two_items_superseding_one_fact_are_refused_not_forked(
    service: MemoryService, tmp_path: Path
) -> None:
    from engine.memory.remember import RememberRequest

    old = service.remember(
        RememberRequest(
            text="Alice lives in Berlin",
            scopes=["user:alice"],
            caller="test",
            session="s",
            decision="add",
        )
    )["record"]
    path = tmp_path / "in.jsonl"
    lines = [
        {"text": "Alice moved to Lyon", "scopes": ["user:alice"], "supersedes": [old["uri"]]},
        {"text": "The deadline is on Friday", "scopes": ["user:alice"], "supersedes": [old["uri"]]},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    with pytest.raises(MemoryFailure) as refused:
        service.interop.import_file(ImportRequest(path=path))
    assert refused.value.code == "MEMORY_IMPORT_INVALID"
    assert "one successor" in refused.value.message
    texts = [row["text"] for row in transfer.export_jsonl_items(service.engine)]
    assert texts == ["Alice lives in Berlin"]
