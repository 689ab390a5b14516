"""Near-duplicate pairs among current facts as Review's Duplicates tab lists them, and a
person's verdicts on them.

The pairs are found across every scope by default, or in one scope (both facts in it). A pair
whose facts are in different scopes (the same fact stored under user:alice and project:x) is a
real duplicate and is listed with the scopes of each side: retiring one side takes the fact out
of the scopes only that side had, so the list says which. Only the best PAIRS_LISTED pairs are
made into facts, and only the newest facts of a big view are compared (FACTS_COMPARED); the
result says both, so a surface can tell the person.

Keep both: logged, so the pair is not offered again. Retire one as a duplicate of the other:
an ordinary retire whose log also names the fact it duplicates. Both record the pair's
similarity and the method that scored it, so they count as labelled pairs in the threshold
check (engine/curation/calibration.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.curation import review
from engine.memory.browse import KEEP_BOTH, kept_pairs
from engine.retrieval.seam import LEXICAL, SEMANTIC, DuplicatePair, Visibility
from engine.storage.queries.curation import current_fact, record_ids_by_uri
from engine.storage.reads.records import get_fact
from engine.storage.schema import tables
from engine.storage.schema.database import bump_generation

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

PAIRS_LISTED = 200
# The most facts one pass compares, the newest of the view: every two are compared, so the
# time grows with the square. 10k facts across every scope (2 cores, 2026-12-06): semantic
# 0.46 s in process, 1.5 s on the server; lexical (rapidfuzz over pairs sharing a word) 4.5 s
# in process, where 3k take 0.6 s (2.9 s on the server).
FACTS_COMPARED = {SEMANTIC: 10_000, LEXICAL: 3_000}


@dataclass(frozen=True)
class DuplicatesFound:
    """The near-duplicate pairs of a view (`scope`, None: every scope), best first: at most a
    limit of `total`, found among the newest `compared` of its `visible` facts."""

    scope: str | None
    pairs: list[DuplicatePair]
    total: int
    compared: int
    visible: int


def find_pairs(
    engine: MemoryEngine, *, scope: str | None = None, limit: int | None = None
) -> DuplicatesFound:
    """Near-duplicate pairs among the current facts of every scope (None) or of one, with the
    remember tiers; pairs a person kept both of are left out (`keep_both`). At most `limit`
    pairs (None: PAIRS_LISTED)."""
    index = engine.retrieval()
    mode = SEMANTIC if SEMANTIC in index.capabilities else LEXICAL
    found = index.duplicate_pairs(
        Visibility(None if scope is None else [scope], None, engine.now()),
        limit=PAIRS_LISTED if limit is None else limit,
        skip=kept_record_pairs(engine),
        newest=FACTS_COMPARED[mode],
    )
    return DuplicatesFound(scope, list(found), found.total, found.compared, found.visible)


def kept_record_pairs(engine: MemoryEngine) -> set[frozenset[str]]:
    """The pairs a person kept both of, by record id (the log names them by uri)."""
    kept = kept_pairs(engine)
    uris = {uri for pair in kept for uri in pair}
    if not uris:
        return set()
    with engine.session() as session:
        record_of = record_ids_by_uri(session, uris)
    return {
        frozenset(record_of[uri] for uri in pair)
        for pair in kept
        if all(uri in record_of for uri in pair)
    }


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
    with engine.write_lock(), engine.session(expire_on_commit=False) as session:
        rows = [current_fact(session, ref) for ref in (left, right)]
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
    with engine.session() as session:
        kept_row = get_fact(session, ref=kept)
        kept_uri = kept_row.uri if kept_row is not None else kept
    extra: dict[str, object] = {"duplicateOf": kept_uri}
    if similarity is not None:
        extra["similarity"], extra["method"] = similarity, method
    review.retire(engine, ref=gone, actor=actor, reason=f"duplicate of {kept}", extra=extra)
