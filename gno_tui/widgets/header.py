"""The workbench's header: Textual's, with an icon every monospace font has.

Textual's default icon (⭘, U+2B58) is missing from common terminal and SVG fonts and showed
as a missing-glyph box; ≡ (U+2261) is in all of them and says "menu" (a click opens the
command palette, as before)."""

from __future__ import annotations

from textual.widgets import Header

ICON = "≡"


class WorkbenchHeader(Header):
    def __init__(self) -> None:
        super().__init__(icon=ICON)
