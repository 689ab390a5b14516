"""The Review screen's commands: each a key binding and a command-palette entry."""

from __future__ import annotations

from gno_tui.workbench_commands import VERB, WorkbenchCommand
from screens.commands.marks import marking
from screens.commands.shared import shared

# The footer (rank): a triage's decisions first, the commonest first: add, reject, supersede,
# merge, edit; then marking and the batch. On the Duplicates tab (the proposal keys are off
# there) its three decisions take the same places.
REVIEW_COMMANDS: tuple[WorkbenchCommand, ...] = (
    WorkbenchCommand(
        "review.add", "a", "add", "Add", "Add the proposal as a new fact", writes=True, rank=VERB
    ),
    WorkbenchCommand(
        "review.add_confirmed",
        "C",
        "add_confirmed",
        "Add+confirm",
        "Add the proposal and vouch for it (user_confirmed)",
        writes=True,
        rank=VERB + 7,
    ),
    WorkbenchCommand(
        "review.supersede",
        "s",
        "supersede",
        "Supersede",
        "Supersede the chosen candidate with the proposal",
        writes=True,
        rank=VERB + 2,
    ),
    WorkbenchCommand(
        "review.reject",
        "x",
        "reject",
        "Reject",
        "Reject the proposal, with a reason",
        writes=True,
        rank=VERB + 1,
    ),
    WorkbenchCommand(
        "review.edit",
        "e",
        "edit",
        "Edit+add",
        "Edit the proposal's text, then add it",
        writes=True,
        rank=VERB + 4,
    ),
    WorkbenchCommand(
        "review.merge",
        "m",
        "merge",
        "Merge",
        "Edit the proposal and the chosen candidate into one text that supersedes the candidate",
        writes=True,
        rank=VERB + 3,
    ),
    shared("review", "mark", "Mark the proposal for a batch decision and move on", rank=VERB + 5),
    *marking("review", "proposal", "proposal in the queue"),
    shared("review", "batch", "Decide every marked proposal after a summary", rank=VERB + 6),
    WorkbenchCommand(
        "review.next_target",
        "J",
        "next_target",
        "Next cand.",
        "Choose the next candidate as the supersede target",
        show=False,
    ),
    WorkbenchCommand(
        "review.prev_target",
        "K",
        "prev_target",
        "Prev cand.",
        "Choose the previous candidate as the supersede target",
        show=False,
    ),
    WorkbenchCommand(
        "review.retire_older",
        "r",
        "retire_older",
        "Retire older",
        "Retire the older fact of the pair as a duplicate",
        writes=True,
        rank=VERB,
    ),
    WorkbenchCommand(
        "review.retire_newer",
        "R",
        "retire_newer",
        "Retire newer",
        "Retire the newer fact of the pair as a duplicate",
        writes=True,
        rank=VERB + 1,
    ),
    shared("review", "evidence", "Duplicates: toggle the newer fact's use policy"),
    shared("review", "stale", "Duplicates: mark the newer fact stale"),
    shared("review", "confidence", "Duplicates: set the newer fact's confidence (0 to 1)"),
    WorkbenchCommand(
        "review.keep_both",
        "b",
        "keep_both",
        "Keep both",
        "Keep both facts; the pair is not offered again",
        writes=True,
        rank=VERB + 2,
    ),
    shared("review", "next_tab", "Proposals / Duplicates", show=False),
    shared("review", "prev_tab", "Proposals / Duplicates", show=False),
)
