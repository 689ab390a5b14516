"""The workbench's screens as one registry (screens.SCREEN_REGISTRY lists the entries), and
what is made from it: the screen keys and their alt forms, the app's bindings, the rule for
keys typed in a text box, the screens' titles and the help's screen list. A new screen is its
module, its commands and one entry."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

from textual.binding import Binding, BindingType

from gno_tui.workbench_commands import APP_COMMANDS, WorkbenchCommand, bindings

if TYPE_CHECKING:
    from screens.base import WorkbenchScreen


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
