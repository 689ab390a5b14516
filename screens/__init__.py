"""The workbench's screens, one per module, each with its rules (STYLES) nested under the
screen's type.

SCREEN_REGISTRY is the one list of the screens the app switches between, in the order of
their keys (1, 2, ...): a new screen is its module, its commands (screens/commands/) and one
entry here. The app's modes, the screen keys and alt+digit keys (their bindings and the
terminal's bytes), the palette's screen names, the footer's screen entry and the help's screen
lines are all made from it (gno_tui/workbench_commands.py); the app builds each screen with
its dependencies (screens.base.Workbench) the first time its mode is shown. STYLED_SCREENS are
the screens and modals whose rules go into the app's one stylesheet (workbench_styles)."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen

from gno_tui.screen_registry import Registry, ScreenEntry
from screens.base import WorkbenchScreen
from screens.batch_prompt import BatchPrompt
from screens.decision_log import DecisionLogScreen
from screens.edit_prompt import EditPrompt
from screens.help_screen import HelpScreen
from screens.json_modal import JsonModal
from screens.library import LibraryScreen
from screens.policy_picker import PolicyPicker
from screens.reason_prompt import ReasonPrompt
from screens.recall import RecallScreen
from screens.receipts import ReceiptsScreen
from screens.remember import RememberScreen
from screens.review import ReviewScreen
from screens.supersession import SupersessionScreen
from screens.whole_row import WholeRow
from screens.yes_no import YesNoPrompt

SCREEN_REGISTRY: Registry = (
    ScreenEntry("library", LibraryScreen, "Library", "All facts, filterable, with details"),
    ScreenEntry(
        "remember",
        RememberScreen,
        "Remember",
        "Compose a fact and see its duplicates before writing",
    ),
    ScreenEntry(
        "review", ReviewScreen, "Review", "Proposals held for a person, and near-duplicates"
    ),
    ScreenEntry("recall", RecallScreen, "Recall", "Recall under a budget; see the receipt"),
    ScreenEntry(
        "supersession", SupersessionScreen, "Chain", "A fact's supersession chain with diffs"
    ),
    ScreenEntry(
        "receipts", ReceiptsScreen, "Receipts", "Receipts, fence preview, collections and egress"
    ),
)

# Each mode's screen class, in the order of the keys.
SCREENS_BY_MODE: dict[str, type[WorkbenchScreen]] = {
    entry.mode: entry.screen for entry in SCREEN_REGISTRY
}

STYLED_SCREENS: tuple[type[Screen[Any]], ...] = (
    *(entry.screen for entry in SCREEN_REGISTRY),
    BatchPrompt,
    DecisionLogScreen,
    EditPrompt,
    HelpScreen,
    JsonModal,
    PolicyPicker,
    ReasonPrompt,
    WholeRow,
    YesNoPrompt,
)


def workbench_styles() -> str:
    """Every screen's and modal's rules, for the app's stylesheet, parsed once at the start.
    Why not Textual's per-screen CSS: a screen's CSS is added when the screen is first built,
    and each addition parses the whole stylesheet again from scratch (every widget's rules
    too; its parse cache does not survive) and restyles every screen built so far: 0.2-0.3 s
    of a first visit's key, more with each screen built. Each screen's rules are nested under
    its own type, so one sheet scopes them as the screen's own CSS did."""
    return "\n".join(screen.__dict__["STYLES"] for screen in STYLED_SCREENS)
