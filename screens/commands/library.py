"""The Library screen's commands: each a key binding and a command-palette entry."""

from __future__ import annotations

from gno_tui.workbench_commands import WorkbenchCommand
from screens.commands.shared import shared

LIBRARY_COMMANDS: tuple[WorkbenchCommand, ...] = (
    WorkbenchCommand(
        "library.filter",
        "slash",
        "open_filter",
        "Filter",
        "Filter as you type (s: c: st: prefixes, !term leaves out)",
    ),
    shared("library", "next_tab", "Next status tab", show=False),
    shared("library", "prev_tab", "Previous status tab", show=False),
    shared(
        "library", "evidence", "Toggle the use policy: evidence only, or usable as an instruction"
    ),
    shared("library", "confidence", "Set the fact's confidence (0 to 1)"),
    shared("library", "confirm", "Confirm the fact: user_confirmed, freshness reset"),
    shared("library", "stale", "Mark the fact stale (needs attention)"),
    WorkbenchCommand(
        "library.retire",
        "X",
        "retire",
        "Retire",
        "Take the fact out of recall, with a reason",
        writes=True,
    ),
    WorkbenchCommand(
        "library.restore", "u", "restore", "Restore", "Bring a retired fact back", writes=True
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
        "Hide the filter box",
        show=False,
    ),
    shared("library", "mark", "Mark the fact for a batch decision and move on"),
    WorkbenchCommand(
        "library.visual",
        "v",
        "visual",
        "Visual",
        "Start a range at the cursor; v again marks every row between",
        show=False,
    ),
    WorkbenchCommand(
        "library.mark_all",
        "ctrl+a",
        "mark_all",
        "Mark all",
        "Mark every fact shown (the filter's loaded rows)",
        show=False,
    ),
    WorkbenchCommand(
        "library.clear_marks",
        "ctrl+backslash",
        "clear_marks",
        "Clear marks",
        "Unmark every fact",
        show=False,
    ),
    shared("library", "batch", "One decision for every marked fact, after a count summary"),
    shared("library", "detail", "Hide or show the detail pane (the list gets its width)"),
)
