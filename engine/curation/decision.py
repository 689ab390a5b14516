"""A person's decision on a pending proposal, as the review queue takes it
(engine/curation/review.py decides it; engine/curation/claims.py records what it will write)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Decision:
    proposal_id: int
    action: str  # add | supersede | reject | edit (edit, then add) | merge
    actor: str
    target: str | None = None  # the fact to supersede (uri), for `supersede` and `merge`
    # The edited text, for `edit`; the combined text that supersedes the target, for `merge`.
    text: str | None = None
    reason: str | None = None  # why, for `reject`
    # The person also vouches for the fact: it is written, then confirmed (user_confirmed).
    confirm: bool = False
    redoes: int | None = None  # set by redo (engine/curation/undo.py): the undo it takes back
