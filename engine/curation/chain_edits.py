"""A person's edits of a supersession chain (the workbench's Supersession screen): supersede
the head with a new text, or revert to an older version's text by appending a successor.
Both go through remember (compare-and-swap on the head's hash) and are logged as decisions
(`chain:supersede`, `chain:revert`) with the text before and after, so `@` shows them and `z`
takes them back (engine/curation/undo_review.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from engine.curation.journal import journal_action, journal_detail
from engine.memory.remember import RememberRequest, remember
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

CHAIN_ACTIONS = ("chain:supersede", "chain:revert")


@dataclass(frozen=True)
class ChainEdit:
    """A new head for the chain whose head is `head` (uri) with hash `head_hash` (the
    compare-and-swap: a head someone else moved is refused, MEMORY_SUPERSEDE_CONFLICT)."""

    head: str
    head_hash: str
    text: str
    actor: str
    session: str
    revert: bool = False  # the text is an older version's (`u`), not a new one (`s`)


def append_successor(
    engine: MemoryEngine, *, head: str, head_hash: str, text: str, actor: str, session: str
) -> dict[str, Any]:
    """Write `text` as the successor of the head (its scopes and collection), by a person."""
    return remember(
        engine,
        RememberRequest(
            text=text,
            scopes=None,
            caller=actor,
            session=session,
            decision="supersede",
            predecessor=head,
            predecessor_hash=head_hash,
            created_by="user",
        ),
    )


def edit_chain(
    engine: MemoryEngine, edit: ChainEdit, *, undoes: int | None = None, redoes: int | None = None
) -> dict[str, Any]:
    """Supersede the head with `edit.text` and log it; the remember result. An unchanged text
    (outcome `existing`) writes nothing and logs nothing."""
    before = _text_of(engine, edit.head)
    result = append_successor(engine, head=edit.head, head_hash=edit.head_hash,
                              text=edit.text, actor=edit.actor, session=edit.session)  # fmt: skip
    if result["outcome"] == "existing":
        return result
    action = "chain:revert" if edit.revert else "chain:supersede"
    log_chain_step(
        engine,
        actor=edit.actor,
        action=journal_action(action, undoes=undoes, redoes=redoes, undo_of=action),
        target=result["record"]["uri"],
        detail={
            "before": {"uri": edit.head, "text": before},
            "after": {"uri": result["record"]["uri"], "text": edit.text},
            **journal_detail(undoes, redoes),
        },
    )
    return result


def log_chain_step(
    engine: MemoryEngine, *, actor: str, action: str, target: str, detail: dict[str, Any]
) -> None:
    with engine.session() as session:
        session.add(
            tables.DecisionRow(
                at=engine.now(), actor=actor, action=action, target=target, detail=detail
            )
        )
        bump_generation(session)
        session.commit()


def _text_of(engine: MemoryEngine, uri: str) -> str | None:
    from engine.storage.reads.records import get_fact

    with engine.session() as session:
        row = get_fact(session, ref=uri)
        return row.text if row is not None else None
