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

from engine.memory.browse import KEEP_BOTH
from engine.storage.queries.curation import decisions_with_actions, undo_decisions
from engine.storage.queries.review import proposals_in_states
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
    with engine.session() as session:
        proposals = proposals_in_states(session, ADDED_STATES | SUPERSEDING_STATES)
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
        verdicts = decisions_with_actions(session, [KEEP_BOTH, f"redo:{KEEP_BOTH}", "retire"])
        pairs.extend(_duplicate_verdicts(verdicts, undo_decisions(session)))
    return pairs


def _duplicate_verdicts(
    rows: Sequence[tables.DecisionRow], undos: Sequence[tables.DecisionRow]
) -> list[JudgedPair]:
    """The pairs judged on the Duplicates tab among `rows`, less those taken back by `undos`."""
    undone = {row.detail.get("undoes") for row in undos}
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
