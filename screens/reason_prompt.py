"""A small modal that asks for a reason (retire, reject) and returns it, or None."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Label

from screens.modal import TextPrompt, context_block


class ReasonPrompt(TextPrompt):
    STYLES = """
    ReasonPrompt {
        #reason-box { width: 76; }
    }
    """
    BOX_ID = "reason-box"
    EMPTY = "A reason is needed (escape cancels)."
    BINDINGS = [
        Binding(
            "escape", "close", "Cancel", id="reason.cancel", tooltip="Close without doing anything"
        )
    ]

    def __init__(self, question: str, *, initial: str = "", context: str = "") -> None:
        super().__init__(question)
        self.initial = initial
        self.context = context  # what the answer acts on (the fact), shown under the question

    def box_content(self) -> ComposeResult:
        yield Label(self.question, id="reason-question", markup=False)
        yield from context_block(self.context)
        yield Input(
            value=self.initial,
            placeholder="type, then enter; escape cancels",
            id="reason-input",
        )

    @on(Input.Submitted, "#reason-input")
    def submitted(self, event: Input.Submitted) -> None:
        self.answer(event.value)
