"""A person's verdicts on near-duplicate pairs among current facts (Review's Duplicates tab).

Keep both: logged, so the pair is not offered again. Retire one as a duplicate of the other:
an ordinary retire whose log also names the fact it duplicates. Both record the pair's
similarity and the method that scored it, so they count as labelled pairs in the threshold
check (engine/curation/calibration.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlalchemy.orm import Session

from engine.curation import review
from engine.memory.browse import KEEP_BOTH
from engine.storage import tables
from engine.storage.database import bump_generation
from engine.storage.records import get_fact

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine


def keep_both(
    engine: MemoryEngine,
    *,
    left: str,
    right: str,
    actor: str,
    similarity: float | None = None,
    method: str | None = None,
) -> None:
    """A person looked at a near-duplicate pair and keeps both facts: logged, so the pair is
    not offered again (`browse.duplicate_pairs` skips it). Nothing else changes."""
    now = engine.now()
    with engine.write_lock(), Session(engine.db, expire_on_commit=False) as session:
        rows = [review.current_fact(session, ref) for ref in (left, right)]
        detail = {
            "before": {"left": rows[0].text, "right": rows[1].text},
            "after": {"kept": [rows[0].uri, rows[1].uri]},
        }
        if similarity is not None:
            detail["similarity"], detail["method"] = similarity, method
        session.add(
            tables.DecisionRow(
                at=now,
                actor=actor,
                action=KEEP_BOTH,
                target=f"{rows[0].uri}|{rows[1].uri}",
                detail=detail,
            )
        )
        bump_generation(session)
        session.commit()


def retire_duplicate(
    engine: MemoryEngine,
    *,
    gone: str,
    kept: str,
    actor: str,
    similarity: float | None = None,
    method: str | None = None,
) -> None:
    """Retire `gone` as a duplicate of `kept` (undo restores it, as any retire)."""
    with Session(engine.db) as session:
        kept_row = get_fact(session, ref=kept)
        kept_uri = kept_row.uri if kept_row is not None else kept
    extra: dict[str, object] = {"duplicateOf": kept_uri}
    if similarity is not None:
        extra["similarity"], extra["method"] = similarity, method
    review.retire(engine, ref=gone, actor=actor, reason=f"duplicate of {kept}", extra=extra)
