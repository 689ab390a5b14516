"""The Library screen's commands: each a key binding and a command-palette entry."""

from __future__ import annotations

from gno_tui.workbench_commands import WorkbenchCommand

LIBRARY_COMMANDS: tuple[WorkbenchCommand, ...] = (
    WorkbenchCommand(
        "library.filter",
        "slash",
        "open_filter",
        "Filter",
        "Filter as you type (s: c: st: prefixes, ! inverts)",
    ),
    WorkbenchCommand(
        "library.next_tab",
        "right_square_bracket",
        "next_tab",
        "Next tab",
        "Next status tab",
        show=False,
    ),
    WorkbenchCommand(
        "library.prev_tab",
        "left_square_bracket",
        "prev_tab",
        "Prev tab",
        "Previous status tab",
        show=False,
    ),
    WorkbenchCommand(
        "library.evidence",
        "E",
        "toggle_instruction",
        "Evidence-only",
        "Toggle the use policy: evidence only, or usable as an instruction",
        writes=True,
    ),
    WorkbenchCommand(
        "library.confidence",
        "percent_sign",
        "set_confidence",
        "Confidence",
        "Set the fact's confidence (0 to 1)",
        writes=True,
    ),
    WorkbenchCommand(
        "library.confirm",
        "c",
        "confirm",
        "Confirm",
        "Confirm the fact: user_confirmed, freshness reset",
        writes=True,
    ),
    WorkbenchCommand(
        "library.stale",
        "S",
        "mark_stale",
        "Stale",
        "Mark the fact stale (needs attention)",
        writes=True,
    ),
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
    WorkbenchCommand(
        "library.mark",
        "space",
        "mark",
        "Mark",
        "Mark the fact for a batch decision and move on",
    ),
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
    WorkbenchCommand(
        "library.batch",
        "y",
        "batch",
        "Batch",
        "One decision for every marked fact, after a count summary",
        writes=True,
    ),
)
