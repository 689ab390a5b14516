"""A y/n modal: returns True for `y`, False for `n` or escape."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label


class YesNoPrompt(ModalScreen[bool]):
    CSS = """
    YesNoPrompt {
        align: center middle;
        #yes-no-box { width: 72; height: auto; border: round $warning; padding: 1 2;
                      background: $surface; }
        #yes-no-keys { color: $text-muted; margin-top: 1; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="yes_no.yes", tooltip="Go ahead"),
        Binding("n,escape", "answer(False)", "No", id="yes_no.no", tooltip="Leave it as it is"),
    ]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="yes-no-box"):
            yield Label(self.question, id="yes-no-question")
            yield Label("y: yes · n / escape: no", id="yes-no-keys")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
