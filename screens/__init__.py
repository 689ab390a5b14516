"""The workbench's screens, one per module, each with its CSS nested under the screen's type.

SCREENS_BY_MODE is what the app's number keys switch between."""

from __future__ import annotations

from screens.library import LibraryScreen

SCREENS_BY_MODE = {
    "library": LibraryScreen,
}
