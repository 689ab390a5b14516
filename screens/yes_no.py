"""A y/n modal: returns True for `y`, False for `n` or escape."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Label

from screens.modal import Modal, context_block


class YesNoPrompt(Modal[bool | None]):
    STYLES = """
    YesNoPrompt {
        #yes-no-box { width: 76; border: round $warning; }
        #yes-no-keys { color: $text-muted; margin-top: 1; }
    }
    """
    BOX_ID = "yes-no-box"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "answer(True)", "Yes", id="yes_no.yes", tooltip="Go ahead"),
        Binding("n,escape", "answer(False)", "No", id="yes_no.no", tooltip="Leave it as it is"),
    ]

    def __init__(self, question: str, *, context: str = "") -> None:
        super().__init__()
        self.question = question
        self.context = context  # what the answer acts on, shown under the question

    def box_content(self) -> ComposeResult:
        yield Label(self.question, id="yes-no-question", markup=False)
        yield from context_block(self.context)
        yield Label("y: yes · n / escape: no", id="yes-no-keys")

    def action_answer(self, answer: bool) -> None:
        self.dismiss(answer)
