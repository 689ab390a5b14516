"""The marking keys every list screen offers beyond `space` (shared.py's "mark"): a range, all,
invert and clear, the same key and action on each (screens.list_marks) with the screen's own
help line. Not in the footer (the help and the palette list them); their rank keeps them
after the screen's other commands where they are listed in order."""

from __future__ import annotations

from gno_tui.workbench_commands import LESS_USED, WorkbenchCommand

# name -> (key, action, title). `~` for invert: free on every list screen and in the key map,
# and vim's "toggle" key; ctrl+i would be tab in a terminal.
MARKING: dict[str, tuple[str, str, str]] = {
    "visual": ("v", "visual", "Visual"),
    "mark_all": ("ctrl+a", "mark_all", "Mark all"),
    "invert_marks": ("tilde", "invert_marks", "Invert marks"),
    "clear_marks": ("ctrl+backslash", "clear_marks", "Clear marks"),
}


def marking(screen: str, noun: str, shown: str, kept: str = "") -> tuple[WorkbenchCommand, ...]:
    """`screen`'s range, mark-all, invert and clear commands (ids `screen.visual` ...) over its
    items (a `noun`), of which `shown` says which are listed; `kept`: what invert leaves."""
    helps = {
        "visual": "Start a range at the cursor; v again marks every row between",
        "mark_all": f"Mark every {shown}",
        "invert_marks": f"Invert the marks of every {shown}: the marked unmarked, the others "
        f"marked{kept}",
        "clear_marks": f"Unmark every {noun}",
    }
    return tuple(
        WorkbenchCommand(
            f"{screen}.{name}", key, action, title, helps[name], show=False, rank=LESS_USED + rank
        )
        for rank, (name, (key, action, title)) in enumerate(MARKING.items(), start=10)
    )
