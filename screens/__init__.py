"""The workbench's screens, one per module, each with its CSS nested under the screen's type.

SCREENS_BY_MODE is what the app's number keys switch between; the app builds each one with
its dependencies (screens.base.Workbench) the first time its mode is shown."""

from __future__ import annotations

from screens.base import WorkbenchScreen
from screens.library import LibraryScreen
from screens.recall import RecallScreen
from screens.receipts import ReceiptsScreen
from screens.remember import RememberScreen
from screens.review import ReviewScreen
from screens.supersession import SupersessionScreen

SCREENS_BY_MODE: dict[str, type[WorkbenchScreen]] = {
    "library": LibraryScreen,
    "remember": RememberScreen,
    "review": ReviewScreen,
    "recall": RecallScreen,
    "supersession": SupersessionScreen,
    "receipts": ReceiptsScreen,
}
