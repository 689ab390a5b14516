"""The Review screen's modal for editing a proposal's text before it is added."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, TextArea


class EditPrompt(ModalScreen[str | None]):
    """The proposal's text, editable; ctrl+s adds the edited text, escape cancels."""

    CSS = """
    EditPrompt {
        align: center middle;
        #edit-box { width: 90; height: auto; border: round $accent; padding: 1 2;
                    background: $surface; }
        #edit-text { height: 10; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+s",
            "save",
            "Add edited",
            id="edit.save",
            tooltip="Add the edited text as a new fact",
        ),
        Binding("escape", "cancel", "Cancel", id="edit.cancel", tooltip="Close without deciding"),
    ]

    def __init__(self, question: str, text: str) -> None:
        super().__init__()
        self.question = question
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(id="edit-box"):
            yield Label(self.question)
            yield TextArea(self.text, id="edit-text", soft_wrap=True)
            yield Label("ctrl+s adds the edited text · escape cancels", classes="muted")

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def action_save(self) -> None:
        text = self.query_one(TextArea).text.strip()
        if not text:
            self.notify("The text is empty (escape cancels).", severity="warning")
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)
