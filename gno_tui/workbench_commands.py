"""Workbench commands: each one is both a key binding (with an id and a tooltip, shown in the
footer) and a command-palette entry, declared once."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from textual.binding import Binding, BindingType

from gno_tui.terminal_keys import route_escape_digits_as_alt

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


# The one rule for keys inside a text box (docs/decisions.md, "Keys inside a text box"): shown
# in every screen's help; SCREEN_KEYS_IN_INPUTS and each screen's escape binding keep it.
INPUT_RULE = (
    "inside a text box every key is text, digits too. escape leaves the box (for the "
    "screen's list); then 1-6 switch screens. alt+1 ... alt+6 switch from anywhere, inside "
    "a box too (a terminal sends escape and a digit typed quickly as alt+digit)."
)

SCREEN_MODES = ("library", "remember", "review", "recall", "supersession", "receipts")


def screen_keys_in_inputs() -> list[BindingType]:
    """alt+1 ... alt+6: the screen keys that work inside a text box too (priority: ahead of the
    box, which would type the digit). Not in the footer; the help names them. Also makes the
    terminal's bytes for them (escape and the digit) reach the app as these keys."""
    route_escape_digits_as_alt()
    return [
        Binding(
            f"alt+{number}",
            f"app.switch_mode('{mode}')",
            mode,
            show=False,
            priority=True,
            id=f"app.{mode}.alt",
        )
        for number, mode in enumerate(SCREEN_MODES, start=1)
    ]


def writes(commands: Iterable[WorkbenchCommand], action: str) -> bool:
    """Whether `action`, as Textual checks it (without the `app.` namespace or arguments), is
    one of the write commands among `commands`: refused in a read-only workbench."""
    return any(c.writes and c.action.removeprefix("app.").split("(")[0] == action for c in commands)


GLOBAL_COMMANDS: tuple[WorkbenchCommand, ...] = (
    WorkbenchCommand(
        "app.library",
        "1",
        "app.switch_mode('library')",
        "Library",
        "All facts, filterable, with details",
    ),
    WorkbenchCommand(
        "app.remember",
        "2",
        "app.switch_mode('remember')",
        "Remember",
        "Compose a fact and see its duplicates before writing",
    ),
    WorkbenchCommand(
        "app.review",
        "3",
        "app.switch_mode('review')",
        "Review",
        "Proposals held for a person, and near-duplicates",
    ),
    WorkbenchCommand(
        "app.recall",
        "4",
        "app.switch_mode('recall')",
        "Recall",
        "Recall under a budget; see the receipt",
    ),
    WorkbenchCommand(
        "app.supersession",
        "5",
        "app.switch_mode('supersession')",
        "Chain",
        "A fact's supersession chain with diffs",
    ),
    WorkbenchCommand(
        "app.receipts",
        "6",
        "app.switch_mode('receipts')",
        "Receipts",
        "Receipts, fence preview, collections and egress",
    ),
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
