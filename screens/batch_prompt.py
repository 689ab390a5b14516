"""One decision for every marked item: choose it, read the count summary, then y or n.

Review uses it for marked proposals (add or reject), Library for marked facts (confirm, stale,
evidence-only, retire). A choice that needs a reason asks for one before the summary. The
choice is returned by name; the screen turns it into a decision (an unknown name is refused
there, never taken for another)."""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Static

from screens.modal import Modal, ask
from screens.reason_prompt import ReasonPrompt

_Id = TypeVar("_Id", str, int)


@dataclass(frozen=True)
class BatchChoice:
    action: str
    reason: str | None = None


@dataclass(frozen=True)
class Choice:
    """A decision the prompt offers: its key binding (key, title, id, tooltip), what the count
    summary calls it, and whether it needs a reason."""

    key: str
    title: str
    id: str
    tooltip: str
    summary: str
    needs_reason: bool = False


class BatchPrompt(Modal[BatchChoice | None]):
    """The shared behaviour; a subclass names its items and its choices (each one a key)."""

    CSS = """
    BatchPrompt {
        #batch-box { width: 70; border: round $warning; }
    }
    """
    BOX_ID = "batch-box"
    NOUN: ClassVar[str] = "item(s)"
    MARK_FIRST: ClassVar[str] = "Mark items first."  # what `y` says when nothing is marked
    CHOICES: ClassVar[dict[str, Choice]] = {}  # by action
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "confirm", "Apply", id="batch.confirm", tooltip="Apply the summary"),
        Binding("n,escape", "close", "Cancel", id="batch.cancel", tooltip="Apply nothing"),
    ]

    def __init_subclass__(cls, **options: Any) -> None:
        if "CHOICES" in cls.__dict__:  # the choices' bindings, before Textual merges them
            cls.BINDINGS = [
                *(
                    Binding(c.key, f"choose({action!r})", c.title, id=c.id, tooltip=c.tooltip)
                    for action, c in cls.CHOICES.items()
                ),
                *BatchPrompt.BINDINGS,
            ]
        super().__init_subclass__(**options)

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count
        self.choice: BatchChoice | None = None

    @classmethod
    def ask(
        cls,
        screen: Screen[Any],
        marked: Collection[_Id],
        apply: Callable[[BatchChoice, list[_Id]], object],
    ) -> None:
        """`y` on a screen: ask for one decision for the marked items, then apply it to them
        (sorted); nothing when the prompt is cancelled. With nothing marked, say how to mark."""
        if not marked:
            screen.notify(cls.MARK_FIRST, severity="warning")
            return
        ids = sorted(marked)
        ask(screen, cls(len(ids)), lambda choice: apply(choice, ids))

    def box_content(self) -> ComposeResult:
        yield Static(self._question(), id="batch-summary")

    def _keys(self) -> str:
        return " · ".join(
            f"{choice.key} {choice.summary}" + (" (one reason)" if choice.needs_reason else "")
            for choice in self.CHOICES.values()
        )

    def _question(self) -> Text:
        text = Text()
        if self.choice is None:
            text.append(f"{self.count} marked {self.NOUN}.\n", style="bold")
            text.append(f"{self._keys()} · n cancel")
        else:
            text.append(f"{self.count} {self.choice.action}", style="bold")
            if self.choice.reason:
                text.append(f" (reason: {self.choice.reason})")
            text.append("\napply? y / n")
        return text

    def action_choose(self, action: str) -> None:
        if not self.CHOICES[action].needs_reason:
            self.choice = BatchChoice(action)
            self.query_one("#batch-summary", Static).update(self._question())
            return

        def with_reason(reason: str) -> None:
            self.choice = BatchChoice(action, reason)
            self.query_one("#batch-summary", Static).update(self._question())

        ask(self, ReasonPrompt(f"Why {action} these {self.count} {self.NOUN}?"), with_reason)

    def action_confirm(self) -> None:
        if self.choice is None:
            self.notify(f"Choose first: {self._keys()}.", severity="warning")
            return
        self.dismiss(self.choice)


class ProposalBatchPrompt(BatchPrompt):
    NOUN = "proposal(s)"
    MARK_FIRST = "Mark proposals with space first."
    CHOICES: ClassVar[dict[str, Choice]] = {
        "add": Choice("a", "Add all", "batch.add", "Add every marked proposal", "add all"),
        "reject": Choice(
            "x",
            "Reject all",
            "batch.reject",
            "Reject every marked proposal, with one reason",
            "reject all",
            needs_reason=True,
        ),
    }


class FactBatchPrompt(BatchPrompt):
    NOUN = "fact(s)"
    MARK_FIRST = "Mark facts with space (or ctrl+a) first."
    CHOICES: ClassVar[dict[str, Choice]] = {
        "confirm": Choice(
            "c",
            "Confirm all",
            "bulk.confirm",
            "Vouch for every marked fact (user_confirmed, freshness reset)",
            "confirm all",
        ),
        "stale": Choice("S", "Stale all", "bulk.stale", "Mark every one stale", "mark all stale"),
        "evidence-only": Choice(
            "E",
            "Evidence-only",
            "bulk.evidence",
            "Every marked fact: evidence only, never an instruction",
            "make all evidence-only",
        ),
        "retire": Choice(
            "X",
            "Retire all",
            "bulk.retire",
            "Retire every marked fact, with one reason (files stay)",
            "retire all",
            needs_reason=True,
        ),
    }
