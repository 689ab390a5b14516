"""The Supersession screen's commands: each a key binding and a command-palette entry."""

from __future__ import annotations

from gno_tui.workbench_commands import VERB, VIEW, WorkbenchCommand

# The footer (rank): the chain's two writes first (supersede the head, revert), then opening
# another chain and the as-of time; moving between versions (h/l, also j/k in the list) and the
# diff's layout after them; back (ctrl+o) after the moves.
SUPERSESSION_COMMANDS: tuple[WorkbenchCommand, ...] = (
    WorkbenchCommand("chain.older", "h", "older", "Older", "The older version", rank=VERB + 4),
    WorkbenchCommand("chain.newer", "l", "newer", "Newer", "The newer version", rank=VERB + 5),
    WorkbenchCommand(
        "chain.as_of",
        "T",
        "as_of",
        "As of",
        "Which version was current at a time you give",
        rank=VERB + 3,
    ),
    WorkbenchCommand(
        "chain.supersede",
        "s",
        "supersede_head",
        "Supersede head",
        "Write a successor of the head (compare-and-swap on its hash)",
        writes=True,
        rank=VERB,
    ),
    WorkbenchCommand(
        "chain.revert",
        "u",
        "revert",
        "Revert",
        "Append a successor that restores the highlighted version's text",
        writes=True,
        rank=VERB + 1,
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
        "chain.split",
        "i",
        "toggle_split",
        "Inline/split",
        "Show the diffs inline or side by side",
        rank=VIEW,
    ),
    WorkbenchCommand(
        "chain.ref",
        "slash",
        "edit_ref",
        "Open",
        "Open another fact's chain by uri, #docid or recordId",
        rank=VERB + 2,
    ),
    WorkbenchCommand("chain.reload", "ctrl+r", "reload", "Reload", "Reload the chain", show=False),
    WorkbenchCommand(
        "chain.back",
        "ctrl+o,backspace",
        "app.jump_back",
        "Back",
        "Back to the screen and row this chain was opened from (enter, or :)",
        rank=VERB + 6,
    ),
    WorkbenchCommand(
        "chain.table",
        "escape",
        "back",
        "Versions / back",
        "Leave the box for the versions; from the versions, back to where the chain was opened",
        show=False,
    ),
)
