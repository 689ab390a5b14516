"""The Receipts screen's commands: each a key binding and a command-palette entry."""

from __future__ import annotations

from gno_tui.workbench_commands import VERB, WorkbenchCommand
from screens.commands.shared import shared

# The footer (rank): the order of the workbench key map: verify, fence preview, export,
# delete, then the collection's policy and its effective policy; purge, the rarest, last.
RECEIPTS_COMMANDS: tuple[WorkbenchCommand, ...] = (
    WorkbenchCommand(
        "receipts.verify",
        "V",
        "verify",
        "Verify",
        "Verify the receipt: digest, stored, drift since issue",
        rank=VERB,
    ),
    WorkbenchCommand(
        "receipts.fence",
        "f",
        "fence",
        "Fence preview",
        "Would a text be fenced by this receipt?",
        rank=VERB + 1,
    ),
    WorkbenchCommand(
        "receipts.policy",
        "p",
        "choose_policy",
        "Policy",
        "Choose the collection's policy; tightening applies at once, relaxing asks first",
        writes=True,
        rank=VERB + 4,
    ),
    shared(
        "receipts",
        "mark",
        "Mark the receipt (for x, d) or the collection (for P), whichever list has the focus",
        show=False,
    ),
    WorkbenchCommand(
        "receipts.export",
        "x",
        "export",
        "Export",
        "Export the marked receipts (else the highlighted one) as JSON lines; asks where",
        rank=VERB + 2,
    ),
    WorkbenchCommand(
        "receipts.delete",
        "d",
        "delete",
        "Delete",
        "Delete the marked receipts (else the highlighted one), after y",
        writes=True,
        rank=VERB + 3,
    ),
    WorkbenchCommand(
        "receipts.purge",
        "D",
        "purge",
        "Purge",
        "Delete every receipt issued before a time, after typing 'purge N'",
        writes=True,
        rank=VERB + 6,
    ),
    WorkbenchCommand(
        "receipts.effective",
        "P",
        "effective",
        "Effective",
        "The effective policy of the marked collections",
        rank=VERB + 5,
    ),
    WorkbenchCommand("receipts.reload", "ctrl+r", "reload", "Reload", "Reload", show=False),
    WorkbenchCommand(
        "receipts.back", "escape", "focus_receipts", "Receipts", "Leave the fence box", show=False
    ),
    shared("receipts", "detail", "Hide or show the receipt detail (the list gets its width)"),
)
