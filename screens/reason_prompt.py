"""A small modal that asks for a reason (retire, reject) and returns it, or None."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label


class ReasonPrompt(ModalScreen[str | None]):
    CSS = """
    ReasonPrompt {
        align: center middle;
        #reason-box { width: 70; height: auto; border: round $accent; padding: 1 2;
                      background: $surface; }
    }
    """
    BINDINGS = [
        Binding(
            "escape", "cancel", "Cancel", id="reason.cancel", tooltip="Close without doing anything"
        )
    ]

    def __init__(self, question: str, *, initial: str = "") -> None:
        super().__init__()
        self.question = question
        self.initial = initial

    def compose(self) -> ComposeResult:
        with Vertical(id="reason-box"):
            yield Label(self.question)
            yield Input(
                value=self.initial,
                placeholder="type, then enter; escape cancels",
                id="reason-input",
            )

    @on(Input.Submitted, "#reason-input")
    def submitted(self, event: Input.Submitted) -> None:
        value = event.value.strip()
        if not value:
            self.notify("A reason is needed (escape cancels).", severity="warning")
            return
        self.dismiss(value)

    def action_cancel(self) -> None:
        self.dismiss(None)
