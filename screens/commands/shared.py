"""The commands several screens offer: the same key, action and title wherever they are (the
fact keys act through the screen base's actions). A screen names its own id prefix and help
line, and whether the footer shows the command (and where: its rank, when not the usual).

The list keys (search, n / N, sort) are on every screen: the screen base adds them to each
command list (with_list_commands), acting on the list in focus (gno_tui.widgets.list_search)."""

from __future__ import annotations

from gno_tui.workbench_commands import LESS_USED, LOG, VIEW, WorkbenchCommand

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
    # Not in the footer (its room is the screen's verbs'): the help and the palette name them,
    # and the search's bar names n / N once it is open.
    "find": ("ctrl+f", "find", "Find", False, LOG - 2),
    "find_next": ("n", "find_next", "Next match", False, LOG - 1),
    "find_prev": ("N", "find_prev", "Prev match", False, LOG - 1),
    "sort": ("O", "sort", "Sort", False, LOG - 1),
}

# A list key a screen already uses for something else: the key it has there instead.
LIST_KEY_ELSEWHERE = {"n": "ctrl+n", "N": "ctrl+b", "O": "ctrl+t"}

LIST_COMMANDS: dict[str, tuple[str, bool]] = {  # name -> (help, shown in the footer)
    "find": ("Search the list: the cursor goes to a row whose whole text has the term", False),
    "find_next": ("The next row the search matches (wraps)", False),
    "find_prev": ("The previous row the search matches (wraps)", False),
    "sort": ("Sort the rows loaded by a column shown (again: the other way)", False),
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


def with_list_commands(commands: tuple[WorkbenchCommand, ...]) -> tuple[WorkbenchCommand, ...]:
    """`commands` and the list keys (search, n / N, sort), under the screen's id prefix (that
    of its first command); a key the screen has taken gets its LIST_KEY_ELSEWHERE instead."""
    if not commands:
        return commands
    screen = commands[0].id.split(".")[0]
    have = {c.id for c in commands}
    taken = {key.strip() for c in commands for key in c.key.split(",")}
    added: list[WorkbenchCommand] = []
    for name, (help, show) in LIST_COMMANDS.items():
        if f"{screen}.{name}" in have:
            continue
        command = shared(screen, name, help, show=show)
        if command.key in taken:
            key = LIST_KEY_ELSEWHERE[command.key]
            command = WorkbenchCommand(
                command.id, key, command.action, command.title, help, show=show, rank=command.rank
            )
        added.append(command)
    return (*commands, *added)
