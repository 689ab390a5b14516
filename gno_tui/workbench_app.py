"""What the app's parts (the command palette, gno_tui/palette.py) use of the workbench app:
its screen registry and the screens built so far. GnoApp (gno_tui/app.py) is the one app; its
parts type it as this base so that none of them imports the app module that imports them."""

from __future__ import annotations

from typing import Any, ClassVar

from textual.app import App

from gno_tui.screen_registry import Registry
from screens.base import UsesWorkbench, WorkbenchScreen


class WorkbenchApp(UsesWorkbench, App[None]):
    # The screens, in the order of their keys (screens.SCREEN_REGISTRY, set by GnoApp).
    SCREEN_REGISTRY: ClassVar[Registry]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.mode_screens: dict[str, WorkbenchScreen] = {}  # each mode's screen, once built

    def built_screen(self, mode: str) -> WorkbenchScreen | None:
        """The screen of `mode`, if it was built (shown, or built ahead)."""
        return self.mode_screens.get(mode)
