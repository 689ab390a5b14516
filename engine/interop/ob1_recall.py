"""A recall shaped as an OB1 recall response (seed 002): the receipt is issued and stored as
for any recall; each fact becomes an OB1 memory with its curation fields."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.contract.validation import ensure_valid
from engine.interop.ob1 import ob1_memory, ob1_response
from engine.memory.recall import RecallRequest, recall
from engine.storage.queries import interop as interop_queries

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine


def recall_ob1(engine: MemoryEngine, request: RecallRequest) -> dict[str, Any]:
    result = recall(engine, request)
    ids = [fact["recordId"] for fact in result["facts"]]
    with engine.session(expire_on_commit=False) as session:
        rows = {row.record_id: row for row in interop_queries.facts_by_record_ids(session, ids)}
    memories = [
        ob1_memory(
            fact,
            collection=rows[fact["recordId"]].collection,
            workbench=rows[fact["recordId"]].workbench,
        )
        for fact in result["facts"]
    ]
    return ensure_valid("ob1_recall", ob1_response(result["receipt"]["digest"], memories))
