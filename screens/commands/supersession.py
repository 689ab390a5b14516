"""The Supersession screen's commands: each a key binding and a command-palette entry."""

from __future__ import annotations

from gno_tui.workbench_commands import WorkbenchCommand

SUPERSESSION_COMMANDS: tuple[WorkbenchCommand, ...] = (
    WorkbenchCommand("chain.older", "h", "older", "Older", "The older version"),
    WorkbenchCommand("chain.newer", "l", "newer", "Newer", "The newer version"),
    WorkbenchCommand(
        "chain.as_of", "T", "as_of", "As of", "Which version was current at a time you give"
    ),
    WorkbenchCommand(
        "chain.supersede",
        "s",
        "supersede_head",
        "Supersede head",
        "Write a successor of the head (compare-and-swap on its hash)",
        writes=True,
    ),
    WorkbenchCommand(
        "chain.revert",
        "u",
        "revert",
        "Revert",
        "Append a successor that restores the highlighted version's text",
        writes=True,
    ),
    WorkbenchCommand(
        "chain.less_context",
        "left_curly_bracket",
        "less_context",
        "Less context",
        "Fewer unchanged words around each change in the diffs",
        show=False,
    ),
    WorkbenchCommand(
        "chain.more_context",
        "right_curly_bracket",
        "more_context",
        "More context",
        "More unchanged words around each change in the diffs (up to the whole text)",
        show=False,
    ),
    WorkbenchCommand(
        "chain.split", "i", "toggle_split", "Inline/split", "Show the diffs inline or side by side"
    ),
    WorkbenchCommand(
        "chain.ref",
        "slash",
        "edit_ref",
        "Open",
        "Open another fact's chain by uri, #docid or recordId",
    ),
    WorkbenchCommand("chain.reload", "ctrl+r", "reload", "Reload", "Reload the chain", show=False),
    WorkbenchCommand(
        "chain.table",
        "escape",
        "focus_table",
        "Versions",
        "Leave the box for the versions",
        show=False,
    ),
)
