"""Workbench commands: each one is both a key binding (with an id and a tooltip, shown in the
footer) and a command-palette entry, declared once.

The screen keys among them (1, 2, ... and alt+1, alt+2, ...) are made from the screen registry
(screens.SCREEN_REGISTRY: one ScreenEntry per screen, its key its place in the list), as are
the names of the screens in the palette, the footer and the help. Each is a function of the
registry, so that one entry is all a new screen adds (and a test can give another registry)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from textual.binding import Binding, BindingType

# The footer's order (WorkbenchCommand.rank): lower first, ties in the declared order. When the
# width does not hold them all, the footer keeps the lowest ranks, then quit, then "more: ?".
FIRST = 0  # help and the screen keys: the way to everything else
VERB = 10  # the screen's decisions, most used first (10, 11, ...)
UNDO = 30  # takes back a decision: right after the screen's verbs
LESS_USED = 40  # the screen's other commands
VIEW = 60  # layout and navigation (a pane hidden or shown)
LOG = 80
LAST = 99  # quit: last of the keys, and kept when the others are cut


@dataclass(frozen=True)
class WorkbenchCommand:
    id: str  # stable binding id, e.g. "library.filter"
    key: str  # textual key(s), comma-separated
    action: str  # the screen's (or app's) action to run
    title: str  # footer label and palette title
    help: str  # tooltip and palette help line
    show: bool = True  # shown in the footer
    writes: bool = False  # refused when the workbench is read-only
    rank: int = LESS_USED  # the footer's order, lower first (see FIRST ... LAST above)


def bindings(commands: Iterable[WorkbenchCommand]) -> list[BindingType]:
    return [
        Binding(c.key, c.action, c.title, show=c.show, tooltip=c.help, id=c.id) for c in commands
    ]


def writes(commands: Iterable[WorkbenchCommand], action: str) -> bool:
    """Whether `action`, as Textual checks it (without the `app.` namespace or arguments), is
    one of the write commands among `commands`: refused in a read-only workbench."""
    return any(c.writes and c.action.removeprefix("app.").split("(")[0] == action for c in commands)


# The app's commands, on every screen, after the screen keys (global_commands).
APP_COMMANDS: tuple[WorkbenchCommand, ...] = (
    WorkbenchCommand(
        "app.jump",
        "colon",
        "app.jump",
        "Jump",
        "Open a fact's chain by #docid, mem-… record id or gno:// uri; @time: the Library then",
        show=False,
    ),
    WorkbenchCommand(
        "app.undo",
        "z",
        "app.undo",
        "Undo",
        "Take back your latest curation decision (see @ for the log)",
        writes=True,
        rank=UNDO,
    ),
    WorkbenchCommand(
        "app.redo",
        "ctrl+z",
        "app.redo",
        "Redo",
        "Do again what your latest undo took back (a new decision ends the trail)",
        show=False,
        writes=True,
    ),
    WorkbenchCommand(
        "app.log",
        "at",
        "app.show_decision_log",
        "Log",
        "The decision log: who decided what, when, before/after",
        rank=LOG,
    ),
    WorkbenchCommand(
        "app.help",
        "f1,question_mark",
        "app.show_screen_help",
        "Help",
        "What this screen shows and its keys",
        rank=FIRST,
    ),
)

# Quit is Textual's own binding (ctrl+q, ahead of any widget, and its palette entry "Quit"):
# described here for the help and the footer, which show it on every screen.
QUIT = WorkbenchCommand(
    "app.quit",
    "ctrl+q",
    "app.quit",
    "Quit",
    "Leave the workbench, from any screen (inside a text box too)",
    rank=LAST,
)
