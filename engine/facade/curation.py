"""The façade's curation verbs: a person's decisions on facts, proposals and duplicate pairs,
undo and redo, recall labels and the threshold check."""

from __future__ import annotations

from collections.abc import Collection
from contextlib import AbstractContextManager
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, cast

from engine.contract.errors import MemoryFailure
from engine.curation import claim_recovery, duplicates, journal, labels, review
from engine.curation.calibration import ThresholdCheck, check_threshold, judged_pairs
from engine.curation.chain_edits import ChainEdit, edit_chain
from engine.curation.review import Decision
from engine.curation.review_queue import ReviewQueue, review_queue
from engine.curation.undo import Redone, Undone, redo_last, undo_last
from engine.facade.namespace import Namespace
from engine.retrieval.matching import matching_block
from engine.storage.proposals import get_proposal, list_proposals

if TYPE_CHECKING:
    from engine.contract.results import (
        DecideResult,
        DecisionLogEntry,
        DuplicateEvidence,
        Proposal,
        RememberResult,
    )


class CurationAction(StrEnum):
    """What a person can do to one fact. The value is the action's name in the decision log."""

    CONFIRM = "confirm"
    MARK_STALE = "mark-stale"
    RETIRE = "retire"
    RESTORE = "restore"
    USE_POLICY = "use-policy"
    CONFIDENCE = "confidence"

    @classmethod
    def parse(cls, value: str) -> CurationAction:
        """A name as typed or bound (`stale` is mark-stale); an unknown one is refused."""
        value = {"stale": "mark-stale"}.get(value, value)
        try:
            return cls(value)
        except ValueError:
            names = ", ".join(action.value for action in cls)
            raise MemoryFailure(
                "MEMORY_DECISION_INVALID", f"Unknown curation action {value!r}; use one of {names}."
            ) from None


@dataclass(frozen=True)
class Curation:
    """One curation decision on the fact `ref` (#docid, record id or uri)."""

    action: CurationAction
    ref: str
    actor: str
    reason: str = ""  # RETIRE: why, kept in the fact's history
    instruction: bool | None = None  # USE_POLICY: may it be used as an instruction?
    confidence: float | None = None  # CONFIDENCE: 0 to 1


@dataclass(frozen=True)
class DuplicateVerdict:
    """A person's verdict on a near-duplicate pair (uris); the similarity and its method go
    into the log, where the threshold check counts them."""

    kept: str
    other: str
    actor: str
    similarity: float | None = None
    method: str | None = None

    def evidence(self) -> DuplicateEvidence:
        return {"actor": self.actor, "similarity": self.similarity, "method": self.method}


class CurationApi(Namespace):
    def curate(self, curation: Curation) -> None:
        engine, ref, actor = self._engine, curation.ref, curation.actor
        match curation.action:
            case CurationAction.CONFIRM:
                review.confirm(engine, ref=ref, actor=actor)
            case CurationAction.MARK_STALE:
                review.mark_stale(engine, ref=ref, actor=actor)
            case CurationAction.RETIRE:
                review.retire(engine, ref=ref, actor=actor, reason=curation.reason)
            case CurationAction.RESTORE:
                review.restore(engine, ref=ref, actor=actor)
            case CurationAction.USE_POLICY:
                if curation.instruction is None:
                    raise MemoryFailure(
                        "MEMORY_DECISION_INVALID",
                        "A use-policy change says whether the fact may be used as an instruction.",
                    )
                policy = {"canUseAsInstruction": curation.instruction, "canUseAsEvidence": True}
                review.set_curation(
                    engine, ref=ref, actor=actor, action="use-policy", changes={"usePolicy": policy}
                )
            case CurationAction.CONFIDENCE:
                value = curation.confidence
                if value is None or not 0.0 <= value <= 1.0:
                    raise MemoryFailure(
                        "MEMORY_DECISION_INVALID", "Confidence is a number from 0 to 1, e.g. 0.8."
                    )
                review.set_curation(
                    engine,
                    ref=ref,
                    actor=actor,
                    action="confidence",
                    changes={"provenance": {"confidence": value}},
                )

    # -- the review queue -------------------------------------------------------------------

    def proposals(
        self,
        *,
        state: str | None = "pending",
        caller: str | None = None,
        texts: Collection[str] | None = None,
    ) -> list[Proposal]:
        """Oldest first, of `state` (None: any); `caller` and `texts` narrow it to one
        caller's proposals of these texts (as stored). A person's listing (no `caller`) first
        recovers the claims of decisions whose process is gone (engine/curation/claims.py)."""
        if caller is None:
            claim_recovery.recover_quietly(self._engine)
        # public_proposal builds each as dict[str, Any]; Proposal names its keys.
        found = list_proposals(self._engine, state=state, caller=caller, texts=texts)
        return cast("list[Proposal]", found)

    def proposal(self, proposal_id: int) -> Proposal | None:
        """One proposal by id, in any state, as `proposals()` gives it; None if there is none.
        One left deciding by a decision whose process is gone is recovered first."""
        found = get_proposal(self._engine, proposal_id)
        stale = found is not None and found["state"] == "deciding"
        if stale and claim_recovery.recover_quietly(self._engine, only=proposal_id):
            found = get_proposal(self._engine, proposal_id)
        return cast("Proposal | None", found)  # public_proposal's dict, as in proposals()

    def queue(self) -> ReviewQueue:
        return review_queue(self._engine)

    def decide(self, decision: Decision) -> DecideResult:
        """A person's decision on a proposal; the remember result (a rejection: the proposal)."""
        # review.decide answers a validated remember result or public_proposal's dict.
        return cast("DecideResult", review.decide(self._engine, decision))

    def duplicates(self, *, scope: str | None = None) -> duplicates.DuplicatesFound:
        """Near-duplicate pairs among current facts, best first, across every scope (None) or
        with both facts in `scope`; a pair's facts may be in different scopes. The pairs a
        person kept both of are left out; the result says how many there are in all and how
        many facts were compared (the newest of a big store)."""
        return duplicates.find_pairs(self._engine, scope=scope)

    def keep_both(self, verdict: DuplicateVerdict) -> None:
        """The pair is not one fact: logged, so it is not offered again."""
        duplicates.keep_both(self._engine, left=verdict.kept, right=verdict.other,
                             **verdict.evidence())  # fmt: skip

    def retire_duplicate(self, verdict: DuplicateVerdict) -> None:
        """`other` says what `kept` says: it is retired, citing `kept`."""
        duplicates.retire_duplicate(self._engine, gone=verdict.other, kept=verdict.kept,
                                    **verdict.evidence())  # fmt: skip

    def threshold_check(self) -> ThresholdCheck:
        status = self._engine.embedder_status
        matching = matching_block(status.embedder, status.unavailable_reason)
        return check_threshold(
            judged_pairs(self._engine), mode=matching["mode"], threshold=matching["threshold"]
        )

    # -- the decision log -------------------------------------------------------------------

    def decision_log(self, *, limit: int = 200) -> list[DecisionLogEntry]:
        # review.decision_log builds each entry as dict[str, Any].
        return cast("list[DecisionLogEntry]", review.decision_log(self._engine, limit=limit))

    def batch(self) -> AbstractContextManager[str]:
        """Every decision made inside (in this thread) is one step for undo and redo: a batch
        decision over marked items is taken back with one `z`."""
        return journal.batch()

    def edit_chain(self, edit: ChainEdit) -> RememberResult:
        """Supersede a chain's head (or revert it to an older text) as a person's decision:
        logged, so `@` shows it and `z` takes it back; the remember result."""
        return cast("RememberResult", edit_chain(self._engine, edit))  # validated by remember

    def undo(self, *, actor: str, yes: int | None = None) -> Undone:
        """`yes`: the decision of a NeedsYes (a step that relaxes a policy) the person agreed to."""
        return undo_last(self._engine, actor=actor, yes=yes)

    def redo(self, *, actor: str, yes: int | None = None) -> Redone:
        return redo_last(self._engine, actor=actor, yes=yes)

    # -- recall labels ----------------------------------------------------------------------

    def label(self, *, digest: str, ref: str, label: str, actor: str) -> str:
        return labels.label_recall_item(
            self._engine, digest=digest, ref=ref, label=label, actor=actor
        )

    def labels_of(self, *, digest: str, actor: str) -> dict[str, str]:
        return labels.labels_of(self._engine, digest=digest, actor=actor)

    def label_summary(self, *, actor: str) -> labels.LabelSummary:
        return labels.label_summary(self._engine, actor=actor)
