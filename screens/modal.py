"""What every modal of the workbench shares: a box in the middle of the screen it opens over,
and a key that closes it with no answer. A modal names its box (`BOX_ID`, for its own CSS:
width, a border colour or a fixed height) and yields what the box holds (`box_content`).
TextPrompt: a question answered with a text, refused in the box (the answer kept as typed)
when it is blank or its check says what is wrong; `ask` opens a modal and acts on its answer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.css.query import NoMatches
from textual.screen import ModalScreen, Screen
from textual.widgets import Input, Static

_Answer = TypeVar("_Answer")


class Modal(ModalScreen[_Answer]):
    DEFAULT_CSS = """
    Modal {
        align: center middle;
        & > .modal-box {
            height: auto; max-height: 100%; max-width: 100%;
            border: round $accent; padding: 1 2; background: $surface;
        }
        /* A question wraps to the box: a Label sizes to its text and would be cut. */
        & > .modal-box > Label { width: 100%; }
        & .modal-context { width: 100%; color: $text-muted; margin-bottom: 1; }
        & .modal-problem { width: 100%; color: $error; }
        & .modal-problem.-empty { display: none; }
    }
    """
    BOX_ID: ClassVar[str]

    def compose(self) -> ComposeResult:
        with Vertical(id=self.BOX_ID, classes="modal-box"):
            yield from self.box_content()

    def box_content(self) -> ComposeResult:
        """The widgets in the box."""
        yield from ()

    def action_close(self) -> None:
        """Close with no answer (the screen that opened it decides nothing)."""
        self.dismiss()


def quoted(text: str, limit: int = 240) -> str:
    """A fact's text as a prompt shows it: on one line, quoted, cut (with …) past `limit`."""
    line = " ".join(text.split())
    return f"“{line if len(line) <= limit else line[: limit - 1] + '…'}”"


def context_block(context: str) -> ComposeResult:
    """What a prompt acts on (a fact, receipts), shown under its question; nothing if none."""
    if context:
        yield Static(context, classes="modal-context", markup=False)


def problem_line() -> ComposeResult:
    """Where a prompt says why it refused an answer (hidden until it does)."""
    yield Static("", classes="modal-problem -empty", markup=False)


# What is wrong with an answer (a sentence saying what is allowed), or None when it is fine.
Check = Callable[[str], str | None]


def ask(
    screen: Screen[Any], modal: Modal[_Answer | None], then: Callable[[_Answer], object]
) -> None:
    """Open `modal` over `screen`; `then` gets its answer, unless there is none (closed, or a
    no to a yes/no question)."""

    def answered(answer: _Answer | None) -> None:
        if answer:
            then(answer)

    screen.app.push_screen(modal, answered)


class TextPrompt(Modal[str | None]):
    """A question answered with a text: `answer` returns it unless it is blank (EMPTY says
    what is missing) or `check` refuses it; then the prompt stays open, with the text as
    typed and the reason in the box, for the person to correct. Closing returns None."""

    EMPTY: ClassVar[str] = "The answer is empty (escape cancels)."

    def __init__(self, question: str, *, check: Check | None = None) -> None:
        super().__init__()
        self.question = question
        self.check = check

    def answer(self, text: str) -> None:
        answer = text.strip()
        problem = self.EMPTY if not answer else None
        if problem is None and self.check is not None:
            problem = self.check(answer)
        if problem:
            self.refuse(problem)
            return
        self.dismiss(answer)

    def refuse(self, problem: str) -> None:
        """Say why in the box: a toast would be gone before the person reads it, and closing
        the prompt would throw away what they typed."""
        try:
            line = self.query_one(".modal-problem", Static)
        except NoMatches:
            self.notify(problem, severity="warning")
            return
        line.update(problem if "escape" in problem else f"{problem.rstrip('.')}; escape cancels.")
        line.remove_class("-empty")
        for box in self.query(Input):
            box.add_class("-invalid")  # (Input takes it away again as the text changes)
