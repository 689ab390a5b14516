"""The Library screen's commands: each a key binding and a command-palette entry."""

from __future__ import annotations

from gno_tui.workbench_commands import LESS_USED, VERB, WorkbenchCommand
from screens.commands.marks import marking
from screens.commands.shared import shared

# The footer (rank): filter first, then the decisions a curator makes on a fact most (retire,
# confirm, stale), then marking for a batch; the rarer ones (policy, confidence, restore) after
# undo. The rest waits in the help.
LIBRARY_COMMANDS: tuple[WorkbenchCommand, ...] = (
    WorkbenchCommand(
        "library.filter",
        "slash",
        "open_filter",
        "Filter",
        "Filter as you type (s: c: st: prefixes, !term leaves out)",
        rank=VERB,
    ),
    shared("library", "next_tab", "Next status tab", show=False),
    shared("library", "prev_tab", "Previous status tab", show=False),
    shared(
        "library", "evidence", "Toggle the use policy: evidence only, or usable as an instruction"
    ),
    shared("library", "confidence", "Set the fact's confidence (0 to 1)"),
    shared(
        "library", "confirm", "Confirm the fact: user_confirmed, freshness reset", rank=VERB + 2
    ),
    shared("library", "stale", "Mark the fact stale (needs attention)", rank=VERB + 3),
    WorkbenchCommand(
        "library.retire",
        "X",
        "retire",
        "Retire",
        "Take the fact out of recall, with a reason",
        writes=True,
        rank=VERB + 1,
    ),
    WorkbenchCommand(
        "library.restore",
        "u",
        "restore",
        "Restore",
        "Bring a retired fact back",
        writes=True,
        rank=LESS_USED + 4,
    ),
    WorkbenchCommand(
        "library.chain",
        "enter",
        "open_chain",
        "Chain",
        "Open the fact's supersession chain",
        show=False,
    ),
    WorkbenchCommand(
        "library.close_filter",
        "escape",
        "close_filter",
        "Close filter",
        "Hide the filter box; in the as-of view (@time), back to now",
        show=False,
    ),
    shared("library", "mark", "Mark the fact for a batch decision and move on", rank=VERB + 4),
    *marking(
        "library",
        "fact",
        "fact shown (the filter's loaded rows)",
        " (marks on facts the filter hides stay)",
    ),
    shared(
        "library",
        "batch",
        "One decision for every marked fact, after a count summary",
        rank=VERB + 5,
    ),
    shared("library", "detail", "Hide or show the detail pane (the list gets its width)"),
)
