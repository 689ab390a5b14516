"""The Review screen's commands: each a key binding and a command-palette entry."""

from __future__ import annotations

from gno_tui.workbench_commands import WorkbenchCommand
from screens.commands.shared import shared

REVIEW_COMMANDS: tuple[WorkbenchCommand, ...] = (
    WorkbenchCommand(
        "review.add", "a", "add", "Add", "Add the proposal as a new fact", writes=True
    ),
    WorkbenchCommand(
        "review.add_confirmed",
        "C",
        "add_confirmed",
        "Add+confirm",
        "Add the proposal and vouch for it (user_confirmed)",
        writes=True,
    ),
    WorkbenchCommand(
        "review.supersede",
        "s",
        "supersede",
        "Supersede",
        "Supersede the chosen candidate with the proposal",
        writes=True,
    ),
    WorkbenchCommand(
        "review.reject",
        "x",
        "reject",
        "Reject",
        "Reject the proposal, with a reason",
        writes=True,
    ),
    WorkbenchCommand(
        "review.edit",
        "e",
        "edit",
        "Edit+add",
        "Edit the proposal's text, then add it",
        writes=True,
    ),
    WorkbenchCommand(
        "review.merge",
        "m",
        "merge",
        "Merge",
        "Edit the proposal and the chosen candidate into one text that supersedes the candidate",
        writes=True,
    ),
    shared("review", "mark", "Mark the proposal for a batch decision and move on"),
    shared("review", "batch", "Decide every marked proposal after a summary"),
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
    ),
    WorkbenchCommand(
        "review.retire_newer",
        "R",
        "retire_newer",
        "Retire newer",
        "Retire the newer fact of the pair as a duplicate",
        writes=True,
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
    ),
    shared("review", "next_tab", "Proposals / Duplicates", show=False),
    shared("review", "prev_tab", "Proposals / Duplicates", show=False),
)
