"""The façade's signatures say what each verb takes and returns (issue 37).

(a) No public function, method or dataclass field of engine/facade/*.py, and no TypedDict of
engine/contract/results.py, is annotated with `Any` (read from the source, so that a
`-> dict[str, Any]` added back fails here whatever mypy is told); and no façade module imports
`Any` at all, so that no alias can bring it back either.

(b) Real calls through the façade return documents with exactly the keys their TypedDicts
declare: every required key, and no key the TypedDict does not name (nested objects too)."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from engine.contract import results
from engine.facade import (
    Decision,
    MemoryService,
    RecallRequest,
    RememberRequest,
    backup_store,
    restore_store,
)

ROOT = Path(__file__).resolve().parents[2]
FACADE = sorted((ROOT / "engine" / "facade").glob("*.py"))
SCANNED = [*FACADE, ROOT / "engine" / "contract" / "results.py"]

# -- (a) the signatures ----------------------------------------------------------------------


def _mentions_any(node: ast.AST | None) -> bool:
    """Does this annotation name `Any` (`Any`, `typing.Any`, or inside a string annotation)?"""
    if node is None:
        return False
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id == "Any":
            return True
        if isinstance(sub, ast.Attribute) and sub.attr == "Any":
            return True
        if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
            try:
                parsed = ast.parse(sub.value, mode="eval")
            except SyntaxError:
                continue  # a string that is no annotation (a docstring, a Literal's value)
            if _mentions_any(parsed):
                return True
    return False


def _public(name: str) -> bool:
    return not name.startswith("_") or (name.startswith("__") and name.endswith("__"))


def _signature_annotations(function: ast.FunctionDef | ast.AsyncFunctionDef) -> Iterator[ast.AST]:
    arguments = function.args
    every = [*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs]
    every += [arg for arg in (arguments.vararg, arguments.kwarg) if arg is not None]
    for argument in every:
        if argument.annotation is not None:
            yield argument.annotation
    if function.returns is not None:
        yield function.returns


def any_in_signatures(source: str, where: str = "<source>") -> list[str]:
    """`where:line name` of each public function, method or class field annotated with Any."""
    found: list[str] = []

    def visit(body: list[ast.stmt], owner: str, public_owner: bool) -> None:
        for statement in body:
            if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
                annotations = _signature_annotations(statement)
                public = public_owner and _public(statement.name)
                if public and any(_mentions_any(a) for a in annotations):
                    found.append(f"{where}:{statement.lineno} {owner}{statement.name}")
            elif isinstance(statement, ast.ClassDef):
                visit(
                    statement.body, f"{statement.name}.", public_owner and _public(statement.name)
                )
            elif isinstance(statement, ast.AnnAssign) and owner and public_owner:
                target = ast.unparse(statement.target)
                if _public(target) and _mentions_any(statement.annotation):
                    found.append(f"{where}:{statement.lineno} {owner}{target}")
            elif isinstance(statement, ast.If):  # `if TYPE_CHECKING:` blocks and the like
                visit(statement.body, owner, public_owner)
                visit(statement.orelse, owner, public_owner)

    visit(ast.parse(source).body, "", True)
    return found


def imports_any(source: str) -> bool:
    return any(
        isinstance(node, ast.ImportFrom)
        and node.module in ("typing", "typing_extensions")
        and any(alias.name == "Any" for alias in node.names)
        for node in ast.walk(ast.parse(source))
    )


def test_the_scan_finds_any_where_it_is() -> None:
    """The checks below are only as good as this: each way of writing Any is caught."""
    caught = """
from typing import Any
import typing

def loose(x: int) -> dict[str, Any]: ...
def loose_param(x: Any) -> None: ...
def quoted() -> "list[dict[str, Any]]": ...
def qualified(*args: typing.Any) -> None: ...
class Api:
    def verb(self, **kw: Any) -> None: ...
    field: Any
    def _private(self) -> Any: ...
def _helper() -> Any: ...
"""
    found = any_in_signatures(caught)
    assert [entry.split(" ", 1)[1] for entry in found] == [
        "loose",
        "loose_param",
        "quoted",
        "qualified",
        "Api.verb",
        "Api.field",
    ]
    assert imports_any(caught)
    assert not any_in_signatures("def fine(x: object) -> dict[str, int]: ...")


@pytest.mark.parametrize("path", SCANNED, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_no_any_in_the_facade_signatures(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    where = path.relative_to(ROOT).as_posix()
    assert any_in_signatures(source, where) == []
    assert not imports_any(source), f"{where} imports typing.Any: name the type instead"


# -- (b) what real calls return ----------------------------------------------------------------


def assert_keys(
    document: Mapping[str, object], shape: Any, required: set[str] | None = None
) -> None:
    """`document` has every required key of the TypedDict `shape` (or `required`, for one
    branch of a oneOf) and no key `shape` does not declare."""
    keys = set(document)
    declared = set(shape.__required_keys__) | set(shape.__optional_keys__)
    wanted = set(shape.__required_keys__) if required is None else required
    assert wanted <= declared
    assert not wanted - keys, f"{shape.__name__} misses {sorted(wanted - keys)}"
    assert not keys - declared, f"{shape.__name__} has undeclared {sorted(keys - declared)}"


def assert_fact(fact: Mapping[str, object], shape: Any = results.PublicFact) -> None:
    assert_keys(fact, shape)


def remember(
    memory: MemoryService, text: str, *, hold_writes: bool = False, **fields: Any
) -> results.RememberResult:
    fields.setdefault("decision", "add")
    request = RememberRequest(
        text=text, scopes=["user:alice"], caller="t:agent", session="s", **fields
    )
    return memory.remember(request, hold_writes=hold_writes)


WRITTEN = {"outcome", "record", "absPath", "sync", "matching"}
CANDIDATES = {"outcome", "candidates", "matching"}
EXISTING = {"outcome", "record", "matching"}


def test_remember_and_recall_return_their_typed_documents(memory: MemoryService) -> None:
    added = remember(memory, "Alice drinks green tea every morning", source="she said so")
    assert added["outcome"] == "added"
    assert_keys(added, results.RememberResult, WRITTEN)
    assert set(added) == WRITTEN
    assert_fact(added["record"])
    assert "source" in added["record"]  # the optional key, when there is one
    assert_keys(added["matching"], results.Matching)
    assert_keys(added["sync"], results.Sync)

    again = remember(memory, "Alice drinks green tea every morning")
    assert again["outcome"] == "existing" and set(again) == EXISTING
    assert_fact(again["record"])

    proposed = remember(memory, "Alice drinks green tea most mornings", decision="propose")
    assert proposed["outcome"] == "candidates" and set(proposed) == CANDIDATES
    assert proposed["candidates"]
    for candidate in proposed["candidates"]:
        assert_fact(candidate, results.Candidate)

    result = memory.recall(RecallRequest("green tea", ["user:alice"], "t:agent", "s"))
    assert_keys(result, results.RecallResult)
    assert "egressLineage" in result and "hint" not in result
    (fact,) = result["facts"]
    assert_fact(fact, results.RecalledFact)
    assert_keys(fact["egressLineage"], results.EgressLineage)
    for source in fact["egressLineage"]["sources"]:
        assert_keys(source, results.EgressSource)
    assert_keys(result["receipt"], results.Receipt)
    assert_keys(result["budget"], results.RecallBudget)
    assert_keys(result["retrieval"], results.RecallRetrieval)

    nothing = memory.recall(RecallRequest("volcano", ["user:alice"], "t:agent", "s"))
    assert_keys(nothing, results.RecallResult)
    assert "hint" in nothing and "egressLineage" not in nothing

    ob1 = memory.recall_as_ob1(result)
    assert_keys(ob1, results.Ob1RecallResponse)
    (shaped,) = ob1["memories"]
    assert_keys(shaped, results.Ob1Memory)
    assert_keys(shaped["provenance"], results.Ob1Provenance)
    assert_keys(shaped["scope"], results.Ob1Scope)
    assert_keys(shaped["use_policy"], results.Ob1UsePolicy)
    assert_keys(shaped["freshness"], results.Ob1Freshness)
    assert_keys(shaped["source"], results.Ob1Source)

    receipts = memory.receipts.recent()
    assert len(receipts) == 2  # one per recall
    for receipt in receipts:
        assert_keys(receipt, results.Receipt)
    assert_keys(memory.facts.effective_policy(["memory"]), results.EgressLineage)
    for line in memory.interop.export_jsonl():
        assert_fact(line, results.ExportedFact)


def test_decisions_on_proposals_return_their_typed_documents(memory: MemoryService) -> None:
    remember(memory, "Alice drinks green tea every morning")
    held = remember(memory, "Alice drinks green tea each morning", hold_writes=True)
    assert set(held) == CANDIDATES
    remember(memory, "Alice lives in Berlin", hold_writes=True)

    pending = memory.curation.proposals()
    assert len(pending) == 2
    for proposal in pending:
        assert_keys(proposal, results.Proposal)
        assert "decidedAt" not in proposal  # pending: no decision keys

    first, second = pending
    decided = memory.curation.decide(Decision(first["id"], "add", actor="person:t"))
    assert decided.get("outcome") == "added"
    assert_keys(decided, results.RememberResult, WRITTEN)

    rejected = memory.curation.decide(Decision(second["id"], "reject", "person:t", reason="no"))
    assert_keys(rejected, results.Proposal)
    assert {"decidedAt", "decidedBy", "resolution"} <= set(rejected)
    found = memory.curation.proposal(second["id"])
    assert found is not None
    assert_keys(found, results.Proposal)

    for entry in memory.curation.decision_log():
        assert_keys(entry, results.DecisionLogEntry)


def test_status_and_reindex_return_their_typed_documents(memory: MemoryService) -> None:
    remember(memory, "Alice drinks green tea every morning")
    status = memory.status()
    assert_keys(status, results.StoreStatus)
    assert_keys(status["retrieval"], results.RetrievalStatus)
    assert_keys(status["matching"], results.Matching)
    assert_keys(memory.matching(), results.Matching)
    assert_keys(memory.reindex(), results.ReindexReport)


def test_keyed_calls_return_their_typed_documents(memory: MemoryService) -> None:
    request: results.JsonObject = {
        "key": "pref/tea",
        "memory": {"content": "Alice likes green tea", "tags": ["tea"]},
    }
    hit = memory.keyed.remember(request)
    assert_keys(hit, results.KeyedHit)
    assert_keys(hit["memory"], results.KeyedMemory)

    got = memory.keyed.get("pref/tea")
    assert_keys(got, results.KeyedHit)
    assert_keys(got["memory"], results.KeyedMemory)

    recalled = memory.keyed.recall({"query": "tea"})
    assert_keys(recalled, results.KeyedRecallResponse)
    for item in recalled["items"]:
        assert_keys(item, results.KeyedHit)

    searched = memory.keyed.search({"query": "green tea"})
    assert_keys(searched, results.KeyedSearchResponse)
    assert searched["items"]
    for found in searched["items"]:
        assert_keys(found, results.KeyedSearchItem)

    history = memory.keyed.history("pref/tea")
    assert_keys(history, results.KeyedHistoryResponse)

    held = memory.keyed.propose(
        {"key": "pref/coffee", "memory": {"content": "Alice likes coffee"}},
        caller="t:agent",
        session="s",
    )
    assert_keys(held, results.KeyedHeld)


@pytest.mark.embedded_mode
def test_backup_and_restore_return_their_typed_reports(
    memory: MemoryService, tmp_path: Path
) -> None:
    remember(memory, "Alice drinks green tea every morning")
    report = backup_store(memory, tmp_path / "backup")
    assert_keys(report, results.BackupReport)
    restored = restore_store(tmp_path / "backup", home=tmp_path / "restored", model="/nonexistent")
    assert_keys(restored, results.RestoreReport)
    assert_keys(restored["check"], results.RestoreCheck)
    for collection in restored["collections"]:
        assert_keys(collection, results.RestoredCollection)
