"""Threshold calibration from a person's own review decisions.

Every decided proposal is a set of labelled pairs: the text an agent wanted to write against
each candidate, with the similarity it was scored with. Adding the text (as is, edited or
confirmed) says none of its candidates was the same fact; superseding or merging into a
candidate says that one was. Other candidates of a superseded proposal stay unlabelled (the
person chose one target, not a verdict on the rest), and rejections say nothing about
duplication. The Duplicates tab adds its own verdicts (engine/curation/duplicates.py): keep
both says "not the same", retiring one as a duplicate of the other says "the same"; an
undone one does not count. At a threshold, precision is the share of pairs at or above it
that the person judged the same, recall the share of same pairs that reach it: the numbers
that say whether `matching.threshold` suits this store.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import select
from sqlalchemy.orm import Session

from engine.curation.duplicates import KEEP_BOTH
from engine.storage.reads.records import get_fact
from engine.storage.schema import tables

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

ADDED_STATES = frozenset({"added"})
SUPERSEDING_STATES = frozenset({"superseded", "merged"})


@dataclass(frozen=True)
class JudgedPair:
    source: str  # "proposal:<id>" or the duplicate decision's "decision:<id>"
    candidate: str  # the candidate's uri (for a duplicate pair: the fact kept or compared)
    similarity: float
    same: bool  # the person judged it the same fact as the proposal
    mode: str  # the matching mode the similarity came from: semantic | lexical


@dataclass(frozen=True)
class ThresholdCheck:
    mode: str
    threshold: float
    judged: int  # labelled pairs of this mode
    same: int  # of which judged the same fact
    flagged: int  # at or above the threshold
    precision: float | None  # None when no pair reaches the threshold
    recall: float | None  # None when no pair was judged the same


def judged_pairs(engine: MemoryEngine) -> list[JudgedPair]:
    """The labelled pairs of every decided proposal, oldest first (see the module's note)."""
    pairs: list[JudgedPair] = []
    with Session(engine.db) as session:
        proposals = session.scalars(
            select(tables.ProposalRow)
            .where(tables.ProposalRow.state.in_(ADDED_STATES | SUPERSEDING_STATES))
            .order_by(tables.ProposalRow.id)
        ).all()
        for proposal in proposals:
            assert proposal.id is not None
            mode = str(proposal.matching.get("mode", "lexical"))
            superseded: set[str] = set()
            if proposal.state in SUPERSEDING_STATES and proposal.resolution:
                successor = get_fact(session, ref=proposal.resolution)
                superseded = set(successor.supersedes) if successor is not None else set()
            for candidate in proposal.candidates:
                similarity = candidate.get("similarity")
                if not isinstance(similarity, int | float):
                    continue
                same = candidate.get("uri") in superseded
                if proposal.state in SUPERSEDING_STATES and not same:
                    continue  # not chosen is not a verdict
                pairs.append(
                    JudgedPair(
                        f"proposal:{proposal.id}",
                        str(candidate["uri"]),
                        float(similarity),
                        same,
                        mode,
                    )
                )
        pairs.extend(_duplicate_verdicts(session))
    return pairs


def _duplicate_verdicts(session: Session) -> list[JudgedPair]:
    rows = session.scalars(
        select(tables.DecisionRow)
        .where(tables.DecisionRow.action.in_([KEEP_BOTH, f"redo:{KEEP_BOTH}", "retire"]))
        .order_by(tables.DecisionRow.id)
    ).all()
    undone = {
        row.detail.get("undoes")
        for row in session.scalars(
            select(tables.DecisionRow).where(tables.DecisionRow.action.like("undo:%"))
        )
    }
    verdicts = []
    for row in rows:
        similarity = row.detail.get("similarity")
        if row.id in undone or not isinstance(similarity, int | float):
            continue
        same = row.action == "retire"
        if same and not row.detail.get("duplicateOf"):
            continue  # a plain retire is no verdict on a pair
        other = row.detail.get("duplicateOf") or row.target.split("|", 1)[-1]
        mode = str(row.detail.get("method") or "lexical")
        verdicts.append(JudgedPair(f"decision:{row.id}", str(other), float(similarity), same, mode))
    return verdicts


def check_threshold(pairs: Sequence[JudgedPair], *, mode: str, threshold: float) -> ThresholdCheck:
    """Precision and recall of `similarity >= threshold` against the person's verdicts."""
    mine = [pair for pair in pairs if pair.mode == mode]
    same = sum(pair.same for pair in mine)
    flagged = [pair for pair in mine if pair.similarity >= threshold]
    hits = sum(pair.same for pair in flagged)
    return ThresholdCheck(
        mode=mode,
        threshold=threshold,
        judged=len(mine),
        same=same,
        flagged=len(flagged),
        precision=hits / len(flagged) if flagged else None,
        recall=hits / same if same else None,
    )
