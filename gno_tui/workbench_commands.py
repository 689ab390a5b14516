"""Workbench commands: each one is both a key binding (with an id and a tooltip, shown in the
footer) and a command-palette entry, declared once.

The screen keys among them (1, 2, ... and alt+1, alt+2, ...) are made from the screen registry
(screens.SCREEN_REGISTRY: one ScreenEntry per screen, its key its place in the list), as are
the names of the screens in the palette, the footer and the help. Each is a function of the
registry, so that one entry is all a new screen adds (and a test can give another registry)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from textual.binding import Binding, BindingType

if TYPE_CHECKING:  # a type only: the screens import this module for their commands
    from screens.base import WorkbenchScreen

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


# -- the screen registry and what is made from it -----------------------------------------------


@dataclass(frozen=True)
class ScreenEntry:
    """One screen of the workbench, as screens.SCREEN_REGISTRY lists it; its key is its place
    there (the first is 1)."""

    mode: str  # the app's mode; also its keys' binding ids: app.<mode>, app.<mode>.alt
    screen: type[WorkbenchScreen]
    title: str  # its name on its key: footer, palette and help ("Chain")
    help: str  # what it shows: its key's tooltip and its palette and help line


Registry = tuple[ScreenEntry, ...]  # in the order of the keys
MOST_SCREENS = 9  # a digit each


def screen_digits(registry: Registry) -> str:
    """The screen keys, in order: "123456" for six screens."""
    if len(registry) > MOST_SCREENS:
        raise ValueError(f"{len(registry)} screens: the keys 1-9 name {MOST_SCREENS} at most")
    return "".join(str(place) for place in range(1, len(registry) + 1))


def digit_span(registry: Registry) -> str:
    """The screen keys as the footer and the help name them: "1-6" (one screen: "1")."""
    digits = screen_digits(registry)
    return digits if len(digits) < 2 else f"{digits[0]}-{digits[-1]}"


@cache
def screen_commands(registry: Registry) -> tuple[WorkbenchCommand, ...]:
    """Each screen's key (its digit), switching to its mode: one command per entry, in order."""
    return tuple(
        WorkbenchCommand(
            f"app.{entry.mode}", digit, f"app.switch_mode('{entry.mode}')", entry.title, entry.help
        )
        for digit, entry in zip(screen_digits(registry), registry, strict=True)
    )


@cache
def global_commands(registry: Registry) -> tuple[WorkbenchCommand, ...]:
    """The commands of every screen: the screen keys, then the app's (APP_COMMANDS)."""
    return (*screen_commands(registry), *APP_COMMANDS)


def alt_screen_bindings(registry: Registry) -> list[BindingType]:
    """alt+1, alt+2, ...: the screen keys that work inside a text box too (priority: ahead of
    the box, which would type the digit). Not in the footer; the help names them. The
    terminal's bytes for them reach the app as these keys: gno_tui.terminal_keys."""
    return [
        Binding(
            f"alt+{digit}",
            f"app.switch_mode('{entry.mode}')",
            entry.mode,
            show=False,
            priority=True,
            id=f"app.{entry.mode}.alt",
        )
        for digit, entry in zip(screen_digits(registry), registry, strict=True)
    ]


def app_bindings(registry: Registry) -> list[BindingType]:
    """The app's own bindings: every global command's, then the alt+digit screen keys."""
    return [*bindings(global_commands(registry)), *alt_screen_bindings(registry)]


def input_rule(registry: Registry) -> str:
    """The one rule for keys inside a text box (docs/decisions.md, "Keys inside a text box"):
    shown in every screen's help; the alt+digit bindings and each screen's escape keep it."""
    digits = screen_digits(registry)
    return (
        "inside a text box every key is text, digits too. escape leaves the box (for the "
        f"screen's list); then {digit_span(registry)} switch screens. alt+{digits[0]} ... "
        f"alt+{digits[-1]} switch from anywhere, inside a box too (a terminal sends escape and "
        "a digit typed quickly as alt+digit)."
    )


def screen_titles(registry: Registry) -> dict[str, str]:
    """Each mode's name as its key shows it (the Supersession screen is "Chain")."""
    return {entry.mode: entry.title for entry in registry}


def screen_list(registry: Registry) -> str:
    """Every screen key and its screen: "1 Library · 2 Remember · ..."."""
    return " · ".join(
        f"{digit} {entry.title}"
        for digit, entry in zip(screen_digits(registry), registry, strict=True)
    )
