"""A fact's curation fields (provenance, use policy, freshness) as they were at a past moment.

Those fields change in place (a confidence, a use policy, a confirmation), not as a new
version, so the Library's as-of view would show today's values beside the status of then.
Every such change is in the decision log with the fields before it (engine/curation/review.py
`set_curation`): the first change after the moment holds, in its "before", the value the
moment saw; a field no change touched since is as it is now."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from engine.storage.queries.memory import decision_details_since
from engine.storage.schema import tables

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

CURATION_KEYS = ("provenance", "usePolicy", "freshness")


def fields_changed_since(
    engine: MemoryEngine, uris: Sequence[str], moment: datetime
) -> dict[str, dict[str, dict[str, Any]]]:
    """uri -> {curation key: its value at `moment`}, for the keys changed after `moment`."""
    if not uris:
        return {}
    then: dict[str, dict[str, dict[str, Any]]] = {}
    with engine.session() as session:
        for target, detail in decision_details_since(session, uris, moment):
            before = detail.get("before") if isinstance(detail, dict) else None
            if not isinstance(before, dict):
                continue  # a decision that changed no curation field
            fields = then.setdefault(str(target), {})
            for key, value in before.items():
                if key in CURATION_KEYS:
                    fields.setdefault(key, dict(value or {}))  # the earliest change holds it
    return then


def rows_as_of(
    engine: MemoryEngine, rows: Sequence[tables.FactRow], moment: datetime
) -> list[tables.FactRow]:
    """The rows with their curation fields as at `moment`; a row changed since is a copy
    (the one read stays as the store has it)."""
    then = fields_changed_since(engine, [row.uri for row in rows], moment)
    return [_rewound(row, then[row.uri]) if row.uri in then else row for row in rows]


def _rewound(row: tables.FactRow, fields: dict[str, dict[str, Any]]) -> tables.FactRow:
    workbench = dict(row.workbench)
    for key, value in fields.items():
        if value:
            workbench[key] = value
        else:
            workbench.pop(key, None)  # the fact had none then
    copy = tables.FactRow.model_validate(row.model_dump())
    copy.workbench = workbench
    return copy
