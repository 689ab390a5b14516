"""One decision for every marked item: choose it, read the count summary, then y or n.

Review uses it for marked proposals (add or reject), Library for marked facts (confirm, stale,
evidence-only, retire). A choice that needs a reason asks for one before the summary. The
choice is returned by name; the screen turns it into a decision (an unknown name is refused
there, never taken for another)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from screens.reason_prompt import ReasonPrompt


@dataclass(frozen=True)
class BatchChoice:
    action: str
    reason: str | None = None


class BatchPrompt(ModalScreen[BatchChoice | None]):
    """The shared behaviour; a subclass names its items, choices and their key bindings."""

    CSS = """
    BatchPrompt {
        align: center middle;
        #batch-box { width: 70; height: auto; border: round $warning; padding: 1 2;
                     background: $surface; }
    }
    """
    NOUN: ClassVar[str] = "item(s)"
    # action -> (what the summary calls it, whether it needs a reason)
    CHOICES: ClassVar[dict[str, tuple[str, bool]]] = {}
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("y", "confirm", "Apply", id="batch.confirm", tooltip="Apply the summary"),
        Binding("n,escape", "cancel", "Cancel", id="batch.cancel", tooltip="Apply nothing"),
    ]

    def __init__(self, count: int) -> None:
        super().__init__()
        self.count = count
        self.choice: BatchChoice | None = None

    def compose(self) -> ComposeResult:
        with Vertical(id="batch-box"):
            yield Static(self._question(), id="batch-summary")

    def _keys(self) -> str:
        keys = {b.action: b.key for b in self.BINDINGS if isinstance(b, Binding)}
        return " · ".join(
            f"{keys.get(f'choose({action!r})', '?')} {label}"
            + (" (one reason)" if needs_reason else "")
            for action, (label, needs_reason) in self.CHOICES.items()
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
        if not self.CHOICES[action][1]:  # no reason needed
            self.choice = BatchChoice(action)
            self.query_one("#batch-summary", Static).update(self._question())
            return

        def with_reason(reason: str | None) -> None:
            if reason:
                self.choice = BatchChoice(action, reason)
                self.query_one("#batch-summary", Static).update(self._question())

        self.app.push_screen(
            ReasonPrompt(f"Why {action} these {self.count} {self.NOUN}?"), with_reason
        )

    def action_confirm(self) -> None:
        if self.choice is None:
            self.notify(f"Choose first: {self._keys()}.", severity="warning")
            return
        self.dismiss(self.choice)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ProposalBatchPrompt(BatchPrompt):
    NOUN = "proposal(s)"
    CHOICES: ClassVar[dict[str, tuple[str, bool]]] = {
        "add": ("add all", False),
        "reject": ("reject all", True),
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "a", "choose('add')", "Add all", id="batch.add", tooltip="Add every marked proposal"
        ),
        Binding(
            "x",
            "choose('reject')",
            "Reject all",
            id="batch.reject",
            tooltip="Reject every marked proposal, with one reason",
        ),
        *BatchPrompt.BINDINGS,
    ]


class FactBatchPrompt(BatchPrompt):
    NOUN = "fact(s)"
    CHOICES: ClassVar[dict[str, tuple[str, bool]]] = {
        "confirm": ("confirm all", False),
        "stale": ("mark all stale", False),
        "evidence-only": ("make all evidence-only", False),
        "retire": ("retire all", True),
    }
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "c",
            "choose('confirm')",
            "Confirm all",
            id="bulk.confirm",
            tooltip="Vouch for every marked fact (user_confirmed, freshness reset)",
        ),
        Binding(
            "S", "choose('stale')", "Stale all", id="bulk.stale", tooltip="Mark every one stale"
        ),
        Binding(
            "E",
            "choose('evidence-only')",
            "Evidence-only",
            id="bulk.evidence",
            tooltip="Every marked fact: evidence only, never an instruction",
        ),
        Binding(
            "X",
            "choose('retire')",
            "Retire all",
            id="bulk.retire",
            tooltip="Retire every marked fact, with one reason (files stay)",
        ),
        *BatchPrompt.BINDINGS,
    ]
