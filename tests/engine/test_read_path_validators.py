"""The result validators kept compiled in the package (engine/contract/compiled): current with
their schemas, as strict as the schemas, used without fastjsonschema, and replaced by a
compile at run time when one no longer matches its schema."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engine.contract import validation
from engine.contract.compiled import SchemaViolation
from engine.contract.errors import MemoryFailure
from engine.facade import RecallResult
from engine.facade.service import MemoryService
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest
from engine.storage.store import MemoryEngine

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", validation.KEPT_COMPILED)
def test_the_kept_validators_are_generated_from_the_schemas_as_they_are(name: str) -> None:
    kept = (validation.COMPILED_DIR / f"{name}.py").read_text(encoding="utf-8")
    assert kept == validation.generated_source(name), (
        f"engine/contract/compiled/{name}.py is stale: run "
        '`python -c "from engine.contract.validation import write_compiled; write_compiled()"`'
    )


@pytest.fixture
def recall_result(engine: MemoryEngine) -> RecallResult:
    memory = MemoryService(engine)
    memory.remember(RememberRequest("alice likes green tea", ["user:alice"], "w", "s", "add"))
    return memory.recall(RecallRequest("tea", ["user:alice"], "agent", "s"))


def broken(result: dict[str, Any]) -> list[dict[str, Any]]:
    """Results a schema refuses: a fact without its uri, a wrong hash, an extra field."""
    variants = [copy.deepcopy(result) for _ in range(3)]
    del variants[0]["facts"][0]["uri"]
    variants[1]["receipt"]["digest"] = "not-a-sha256"
    variants[2]["budget"]["extra"] = 1
    return variants


def test_the_kept_validator_refuses_what_the_schema_refuses(recall_result: dict[str, Any]) -> None:
    kept = validation.compiled_validator("recall")
    assert kept.__module__ == "engine.contract.compiled.recall"
    assert validation.ensure_valid("recall", recall_result) is recall_result
    for document in broken(recall_result):
        assert validation.schema_errors("recall", document)  # the reference says no too
        with pytest.raises(MemoryFailure) as refused:
            validation.ensure_valid("recall", document)
        assert refused.value.code == "MEMORY_INTERNAL"


def test_a_stale_module_gives_way_to_a_compile(
    recall_result: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(validation, "schema_digest", lambda name: "another schema")
    validation.compiled_validator.cache_clear()
    try:
        compiled = validation.compiled_validator("recall")
        assert compiled.__module__ == "engine.contract.validation"
        compiled(recall_result)
        for document in broken(recall_result):
            with pytest.raises(SchemaViolation):
                compiled(document)
    finally:
        validation.compiled_validator.cache_clear()


def test_validating_a_result_loads_no_fastjsonschema(recall_result: dict[str, Any]) -> None:
    probe = (
        "import json, sys\n"
        "from engine.contract.validation import ensure_valid\n"
        "ensure_valid('recall', json.loads(sys.stdin.read()))\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        input=json.dumps(recall_result),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=ROOT,
    )
    loaded = json.loads(done.stdout)
    assert "engine.contract.compiled.recall" in loaded
    assert [m for m in loaded if m.split(".")[0] == "fastjsonschema"] == []
