"""Undo and redo of a collection's policy change (Receipts `p`, `collection set-policy`).

Taking one back puts back the policy (and its source) the change found; doing it again sets
the policy it chose. Either is a new revision: revisions only grow, so a relaxation someone
confirmed against the revision they saw still refuses after an undo. A policy changed since
the decision, by anyone, is not taken back: that would silently undo the newer change too.

Relaxing a policy asks first everywhere (Receipts `p` asks `y`, bound to the revision). Undoing
a tightening relaxes, and so may a redo: a step that relaxes is refused until the person says
yes to that very step (engine/curation/undo.py `NeedsYes`; the workbench asks y/n on `z`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import POLICY_STRICTNESS
from engine.curation.journal import journal_action, journal_detail
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

SET_POLICY = "set-policy"


@dataclass(frozen=True)
class PolicyChange:
    """What an undo or redo of a policy change would set."""

    name: str  # the collection
    now: str  # its policy now
    to: str  # the policy it would get
    source: str  # and that policy's source
    revision: int  # its revision now (the one the decision left)

    @property
    def relaxes(self) -> bool:
        return POLICY_STRICTNESS[self.to] > POLICY_STRICTNESS[self.now]

    def question(self, verb: str) -> str:
        reach = "the LAN" if self.to == "lan" else "remote services"
        return (
            f"{verb} relaxes {self.name} from {self.now} back to {self.to} (revision "
            f"{self.revision}): its facts may then leave for {reach}."
        )


def _left(row: tables.DecisionRow) -> int:
    """The revision a policy decision left its collection at."""
    before: dict[str, Any] = row.detail.get("before") or {}
    after: dict[str, Any] = row.detail.get("after") or {}
    return int(after.get("revision", int(before.get("revision", 0)) + 1))


def change(engine: MemoryEngine, done: tables.DecisionRow, *, to: str, source: str) -> PolicyChange:
    """Setting `to` on the collection `done` (the decision, or the undo a redo takes back)
    changed; MEMORY_UNDO_UNSUPPORTED when its policy changed since `done`."""
    with engine.session() as session:
        row = session.get(tables.CollectionRow, done.target)
        if row is None:
            raise MemoryFailure("MEMORY_UNDO_UNSUPPORTED", f"collection {done.target} is gone")
        if row.policy_revision != _left(done):
            raise MemoryFailure(
                "MEMORY_UNDO_UNSUPPORTED",
                f"{row.name}'s policy changed since (now {row.policy}, revision "
                f"{row.policy_revision}); choose it with p on Receipts",
            )
        return PolicyChange(row.name, row.policy, to, source, row.policy_revision)


def back(engine: MemoryEngine, decision: tables.DecisionRow) -> PolicyChange:
    """What undoing `decision` would set: the policy it found."""
    before: dict[str, Any] = decision.detail.get("before") or {}
    return change(engine, decision, to=str(before.get("policy")),
                  source=str(before.get("source", "explicit")))  # fmt: skip


def again(
    engine: MemoryEngine, decision: tables.DecisionRow, undo: tables.DecisionRow
) -> PolicyChange:
    """What redoing `decision` (taken back by `undo`) would set: the policy it chose."""
    after: dict[str, Any] = decision.detail.get("after") or {}
    return change(engine, undo, to=str(after.get("policy")),
                  source=str(after.get("source", "explicit")))  # fmt: skip


def apply(
    engine: MemoryEngine,
    planned: PolicyChange,
    *,
    actor: str,
    undoes: int | None = None,
    redoes: int | None = None,
) -> None:
    """Set the planned policy as a new revision, logged as the undo or redo it is."""
    with engine.write_lock(), engine.session() as session:
        row = session.get(tables.CollectionRow, planned.name)
        if row is None or row.policy_revision != planned.revision:  # changed meanwhile
            raise MemoryFailure(
                "MEMORY_UNDO_UNSUPPORTED",
                f"{planned.name}'s policy changed meanwhile; choose it with p on Receipts.",
            )
        before = {"policy": row.policy, "source": row.policy_source,
                  "revision": row.policy_revision}  # fmt: skip
        row.policy, row.policy_source = planned.to, planned.source
        row.policy_revision += 1
        session.add(
            tables.DecisionRow(
                at=engine.now(),
                actor=actor,
                action=journal_action(SET_POLICY, undoes=undoes, redoes=redoes, undo_of=SET_POLICY),
                target=planned.name,
                detail={
                    "before": before,
                    "after": {
                        "policy": planned.to,
                        "source": planned.source,
                        "revision": row.policy_revision,
                    },
                    **journal_detail(undoes, redoes),
                },
            )
        )
        bump_generation(session)
        session.commit()
    # collections.yaml is canonical in the embedded mode, as set_policy keeps it.
    engine.store.collections_changed(engine)
