"""The commands several screens offer: the same key, action and title wherever they are (the
fact keys act through the screen base's actions). A screen names its own id prefix and help
line, and whether the footer shows the command (and where: its rank, when not the usual)."""

from __future__ import annotations

from gno_tui.workbench_commands import LESS_USED, VIEW, WorkbenchCommand

# name -> (key, action, title, writes, rank in the footer)
SHARED: dict[str, tuple[str, str, str, bool, int]] = {
    "confirm": ("c", "confirm", "Confirm", True, LESS_USED),
    "stale": ("S", "mark_stale", "Stale", True, LESS_USED + 1),
    "evidence": ("E", "toggle_instruction", "Evidence-only", True, LESS_USED + 2),
    "confidence": ("percent_sign", "set_confidence", "Confidence", True, LESS_USED + 3),
    "mark": ("space", "mark", "Mark", False, LESS_USED),
    "batch": ("y", "batch", "Batch", True, LESS_USED),
    "next_tab": ("right_square_bracket", "next_tab", "Next tab", False, VIEW),
    "prev_tab": ("left_square_bracket", "prev_tab", "Prev tab", False, VIEW),
    "detail": ("backslash", "toggle_detail", "Detail", False, VIEW),
}


def shared(
    screen: str, name: str, help: str, *, show: bool = True, rank: int | None = None
) -> WorkbenchCommand:
    """The shared command `name` on `screen` (its id is `screen.name`)."""
    key, action, title, writes, usual = SHARED[name]
    return WorkbenchCommand(
        f"{screen}.{name}",
        key,
        action,
        title,
        help,
        show=show,
        writes=writes,
        rank=usual if rank is None else rank,
    )
