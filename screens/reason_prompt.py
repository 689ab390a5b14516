"""A small modal that asks for a one-line answer (a reason, a time, a number) and returns it,
or None; a check refuses a bad answer in the box, keeping what was typed."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.widgets import Input, Label

from engine.facade import parse_iso
from screens.modal import Check, TextPrompt, context_block, problem_line


def time_problem(text: str) -> str | None:
    """None for an ISO 8601 time (UTC if no zone), else what to write instead."""
    try:
        parse_iso(text)
    except (ValueError, OverflowError):
        return f"{text!r} is not an ISO 8601 time: write 2026-11-20 or 2026-11-20T09:00Z."
    return None


def confidence_problem(text: str) -> str | None:
    """None for a number from 0 to 1 (the engine's rule, checked here so the prompt stays)."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value <= 1.0:  # (NaN fails this too)
        return f"{text!r} is not a confidence: a number from 0 to 1, e.g. 0.8."
    return None


class ReasonPrompt(TextPrompt):
    STYLES = """
    ReasonPrompt {
        #reason-box { width: 76; }
    }
    """
    BOX_ID = "reason-box"
    EMPTY = "An answer is needed (escape cancels)."
    BINDINGS = [
        Binding(
            "escape", "close", "Cancel", id="reason.cancel", tooltip="Close without doing anything"
        )
    ]

    def __init__(
        self, question: str, *, initial: str = "", context: str = "", check: Check | None = None
    ) -> None:
        super().__init__(question, check=check)
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
        yield from problem_line()

    @on(Input.Submitted, "#reason-input")
    def submitted(self, event: Input.Submitted) -> None:
        self.answer(event.value)
