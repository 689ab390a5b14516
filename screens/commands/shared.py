"""The commands several screens offer: the same key, action and title wherever they are (the
fact keys act through the screen base's actions). A screen names its own id prefix and help
line, and whether the footer shows the command."""

from __future__ import annotations

from gno_tui.workbench_commands import WorkbenchCommand

# name -> (key, action, title, writes)
SHARED: dict[str, tuple[str, str, str, bool]] = {
    "confirm": ("c", "confirm", "Confirm", True),
    "stale": ("S", "mark_stale", "Stale", True),
    "evidence": ("E", "toggle_instruction", "Evidence-only", True),
    "confidence": ("percent_sign", "set_confidence", "Confidence", True),
    "mark": ("space", "mark", "Mark", False),
    "batch": ("y", "batch", "Batch", True),
    "next_tab": ("right_square_bracket", "next_tab", "Next tab", False),
    "prev_tab": ("left_square_bracket", "prev_tab", "Prev tab", False),
    "detail": ("backslash", "toggle_detail", "Detail", False),
}


def shared(screen: str, name: str, help: str, *, show: bool = True) -> WorkbenchCommand:
    """The shared command `name` on `screen` (its id is `screen.name`)."""
    key, action, title, writes = SHARED[name]
    return WorkbenchCommand(f"{screen}.{name}", key, action, title, help, show=show, writes=writes)
