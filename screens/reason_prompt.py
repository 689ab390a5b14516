"""A small modal that asks for a reason (retire, reject) and returns it, or None."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Label

from screens.modal import TextPrompt


class ReasonPrompt(TextPrompt):
    CSS = """
    ReasonPrompt {
        #reason-box { width: 70; }
    }
    """
    BOX_ID = "reason-box"
    EMPTY = "A reason is needed (escape cancels)."
    BINDINGS = [
        Binding(
            "escape", "close", "Cancel", id="reason.cancel", tooltip="Close without doing anything"
        )
    ]

    def __init__(self, question: str, *, initial: str = "") -> None:
        super().__init__(question)
        self.initial = initial

    def box_content(self) -> ComposeResult:
        yield Label(self.question)
        yield Input(
            value=self.initial,
            placeholder="type, then enter; escape cancels",
            id="reason-input",
        )

    @on(Input.Submitted, "#reason-input")
    def submitted(self, event: Input.Submitted) -> None:
        self.answer(event.value)
