"""A modal that shows a raw JSON document with a one-line verdict (e.g. schema validity)."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from screens.modal import Modal


class JsonModal(Modal[None]):
    STYLES = """
    JsonModal {
        #json-box { width: 90%; height: 90%; padding: 0 1; }
        #json-title { text-style: bold; color: $primary; }
        #json-verdict { height: auto; margin-bottom: 1; }
        #json-scroll { height: 1fr; }
    }
    """
    BOX_ID = "json-box"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,o", "close", "Close", id="json.close", tooltip="Close the raw JSON"),
    ]

    def __init__(self, title: str, document: Any, verdict: Text | str = "") -> None:
        super().__init__()
        self.title_text = title
        self.document = document
        self.verdict = verdict

    def box_content(self) -> ComposeResult:
        # Here, not at the top: rich.syntax loads pygments, a tenth of a second of the
        # workbench's start for a modal most sessions never open.
        from rich.syntax import Syntax

        yield Label(self.title_text, id="json-title")
        yield Static(self.verdict, id="json-verdict")
        with VerticalScroll(id="json-scroll"):
            yield Static(
                Syntax(
                    json.dumps(self.document, indent=2, ensure_ascii=False),
                    "json",
                    word_wrap=True,
                    theme="ansi_dark",
                ),
                id="json-body",
            )

    def on_mount(self) -> None:
        self.query_one("#json-scroll").focus()
