"""The Remember screen's commands: each a key binding and a command-palette entry."""

from __future__ import annotations

from gno_tui.workbench_commands import VERB, VIEW, WorkbenchCommand

# The footer (rank): the three writes, commonest first, then discarding the draft. Escape leaves
# the text box: the footer puts it first inside one, and with the layout keys outside.
REMEMBER_COMMANDS: tuple[WorkbenchCommand, ...] = (
    WorkbenchCommand(
        "remember.add",
        "ctrl+s",
        "add",
        "Add",
        "Write the draft as a new fact",
        writes=True,
        rank=VERB,
    ),
    WorkbenchCommand(
        "remember.supersede",
        "ctrl+r",
        "supersede",
        "Supersede",
        "Write the draft as the successor of the highlighted candidate",
        writes=True,
        rank=VERB + 1,
    ),
    WorkbenchCommand(
        "remember.merge",
        "ctrl+g",
        "merge",
        "Merge",
        "Edit the draft and the highlighted candidate into one text that supersedes it",
        writes=True,
        rank=VERB + 2,
    ),
    WorkbenchCommand(
        "remember.clear",
        "ctrl+l",
        "clear",
        "Clear",
        "Discard the draft (nothing is written)",
        rank=VERB + 3,
    ),
    WorkbenchCommand(
        "remember.leave",
        "escape",
        "leave_input",
        "Leave box",
        "Leave the fields for the candidates; then the number keys switch screens",
        rank=VIEW,
    ),
    WorkbenchCommand(
        "remember.text", "slash", "edit_text", "Text", "Back to the text box", show=False
    ),
)
