"""A person's changes to a fact's curation fields (OB1 provenance, usePolicy, freshness):
confirm, mark stale, and the general merge behind them and the use-policy and confidence edits.

Kept apart from engine/curation/review.py so that the recovery of a killed review decision
(engine/curation/claim_recovery.py) can confirm its fact without importing the review path."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import iso_utc
from engine.curation.journal import journal_action, journal_detail
from engine.storage.reads.records import get_fact
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

CONFIRMED = "user_confirmed"  # provenance.status of a fact a person vouched for


def set_curation(
    engine: MemoryEngine,
    *,
    ref: str,
    actor: str,
    action: str,
    changes: dict[str, dict[str, Any]],
    undoes: int | None = None,
    redoes: int | None = None,
) -> None:
    """Merge OB1 curation fields (provenance / usePolicy / freshness) into a fact, in its file
    and its row, and log who changed what. With `undoes` (a decision id) the fields are put
    back exactly as `changes` has them instead of merged, and the log says it is an undo;
    with `redoes` the changes merge as usual and the log says it is a redo."""
    now = engine.now()
    with engine.write_lock(), engine.session(expire_on_commit=False) as session:
        row = get_fact(session, ref=ref)
        if row is None:
            raise MemoryFailure("MEMORY_NOT_FOUND", f"No fact {ref}.")
        before = {key: dict(row.workbench.get(key, {})) for key in changes}
        merged = dict(row.workbench)
        for key, values in changes.items():
            merged[key] = dict(values) if undoes is not None else {**merged.get(key, {}), **values}
        # The file first, where files are canonical (engine/storage/fact_sink.py).
        engine.fact_sink.rewrite_workbench(engine, row, {k: merged[k] or None for k in changes})
        row.workbench = {key: value for key, value in merged.items() if value != {}}
        detail: dict[str, Any] = {"before": before, "after": changes}
        detail.update(journal_detail(undoes, redoes))
        session.add(
            tables.DecisionRow(
                at=now,
                actor=actor,
                action=journal_action(action, undoes=undoes, redoes=redoes, undo_of=action),
                target=row.uri,
                detail=detail,
            )
        )
        bump_generation(session)
        session.commit()


def confirm(engine: MemoryEngine, *, ref: str, actor: str) -> None:
    """A person vouches for a fact: user_confirmed, usable as instruction, freshness reset."""
    set_curation(
        engine,
        ref=ref,
        actor=actor,
        action="confirm",
        changes={
            "provenance": {"status": CONFIRMED, "confidence": 1.0},
            "usePolicy": {
                "canUseAsInstruction": True,
                "canUseAsEvidence": True,
                "requiresUserConfirmation": False,
            },
            "freshness": {"lastConfirmedAt": iso_utc(engine.now()), "staleAfter": None},
        },
    )


def mark_stale(engine: MemoryEngine, *, ref: str, actor: str) -> None:
    """Stale from now on: shown as needing attention until a person confirms it again."""
    set_curation(
        engine,
        ref=ref,
        actor=actor,
        action="mark-stale",
        changes={"freshness": {"staleAfter": iso_utc(engine.now())}},
    )
