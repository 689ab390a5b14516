"""The workbench's screens, one per module, each with its rules (STYLES) nested under the
screen's type.

SCREENS_BY_MODE is what the app's number keys switch between; the app builds each one with
its dependencies (screens.base.Workbench) the first time its mode is shown. STYLED_SCREENS are
the screens and modals whose rules go into the app's one stylesheet (workbench_styles)."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen

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

SCREENS_BY_MODE: dict[str, type[WorkbenchScreen]] = {
    "library": LibraryScreen,
    "remember": RememberScreen,
    "review": ReviewScreen,
    "recall": RecallScreen,
    "supersession": SupersessionScreen,
    "receipts": ReceiptsScreen,
}

STYLED_SCREENS: tuple[type[Screen[Any]], ...] = (
    *SCREENS_BY_MODE.values(),
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
