"""Decisions for the marked items, each item its own or one for all, then a summary and y/n.

Review uses it for marked proposals (add, reject, edit then add), Library for marked facts
(confirm, stale, evidence-only, retire). The prompt lists the marked items with the decision
each will get: a choice key decides the highlighted item and moves to the next (the screens'
own habit), `*` then a choice key decides every item at once. A choice that needs a reason
asks for one (for the item, or one for all); edit opens the item's text first. `y` applies the
decided items and leaves the undecided ones as they are. The choice is returned by name per
item; the screen turns it into a decision (an unknown name is refused there, never taken for
another)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Generic, TypeVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.screen import Screen
from textual.widgets import Label, Static

from gno_tui.widgets.fact_table import FactTable
from gno_tui.widgets.fitted_table import ROOM_LEFT, Column, FittedTable
from screens.edit_prompt import EditPrompt
from screens.modal import Modal, ask, quoted
from screens.reason_prompt import ReasonPrompt
from screens.whole_row import KEY as WHOLE_KEY
from screens.whole_row import show_whole_row

_Id = TypeVar("_Id", str, int)

# The item's name and its decision are whole (as wide as the widest, the decision up to 32 with
# its reason); the text takes the rest of the box, cut where it shows how the items differ.
ITEM_COLUMNS = [
    Column("decision", 32, 1, min_width=8, to_content=True),
    Column("item", 16, 0, to_content=True),
    Column("text", ROOM_LEFT, 2, min_width=20, to_content=True),
]


@dataclass(frozen=True)
class BatchChoice:
    action: str
    reason: str | None = None
    text: str | None = None  # the edited text (edit, then add)


@dataclass(frozen=True)
class BatchItem(Generic[_Id]):
    """A marked item as the prompt lists it: its id, a short name (#docid, #12) and its text."""

    id: _Id
    name: str
    text: str


@dataclass(frozen=True)
class Choice:
    """A decision the prompt offers: its key binding (key, title, id, tooltip), what the
    summary calls it, and whether it needs a reason or an edited text first."""

    key: str
    title: str
    id: str
    tooltip: str
    summary: str
    needs_reason: bool = False
    edits: bool = False  # one item at a time: `*` does not apply it to all


class BatchPrompt(Modal[list[tuple[Any, BatchChoice]] | None]):
    """The shared behaviour; a subclass names its items and its choices (each one a key)."""

    STYLES = """
    BatchPrompt {
        /* As wide as the terminal allows: the items' texts are what is decided on. */
        #batch-box { width: 100%; max-width: 160; max-height: 90%; border: round $warning; }
        #batch-items { height: auto; max-height: 16; margin: 1 0; }
    }
    """
    BOX_ID = "batch-box"
    NOUN: ClassVar[str] = "item(s)"
    MARK_FIRST: ClassVar[str] = "Mark items first."  # what `y` says when nothing is marked
    CHOICES: ClassVar[dict[str, Choice]] = {}  # by action
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("asterisk", "all", "All", id="batch.all", tooltip="The next choice: every item"),
        Binding("y", "confirm", "Apply", id="batch.confirm", tooltip="Apply the decided items"),
        Binding("n,escape", "close", "Cancel", id="batch.cancel", tooltip="Apply nothing"),
        Binding(
            WHOLE_KEY,
            "whole_text",
            "Whole text",
            id="batch.whole",
            tooltip="The highlighted item's whole text and decision",
        ),
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

    def __init__(self, items: Sequence[BatchItem[Any]]) -> None:
        super().__init__()
        self.items = list(items)
        self.decided: dict[int, BatchChoice] = {}  # by position in `items`
        self.for_all = False  # `*` was pressed: the next choice decides every item

    @classmethod
    def ask(
        cls,
        screen: Screen[Any],
        items: Sequence[BatchItem[_Id]],
        apply: Callable[[list[tuple[_Id, BatchChoice]]], object],
    ) -> None:
        """`y` on a screen: ask for the marked items' decisions, then apply the decided ones
        (in the order listed); nothing when the prompt is cancelled. With nothing marked, say
        how to mark."""
        if not items:
            screen.notify(cls.MARK_FIRST, severity="warning")
            return
        ask(screen, cls(items), apply)

    def box_content(self) -> ComposeResult:
        yield Label(f"Batch decision · {len(self.items)} marked {self.NOUN}", classes="pane-title")
        yield Static(self._keys_line(), id="batch-keys")
        yield FittedTable(ITEM_COLUMNS, id="batch-items")
        yield Static(self._summary(), id="batch-summary")

    def on_mount(self) -> None:
        table = self.query_one(FactTable)
        table.refill((self._cells(index), str(index)) for index in range(len(self.items)))
        table.focus()

    # -- what the prompt shows ------------------------------------------------------------

    def _keys(self) -> str:
        return " · ".join(
            f"{choice.key} {choice.summary}" + (" (reason)" if choice.needs_reason else "")
            for choice in self.CHOICES.values()
        )

    def _keys_line(self) -> Text:
        text = Text()
        if self.for_all:
            text.append(f"Every item: {self._keys()}", style="bold")
            return text
        text.append(f"{self._keys()}: the highlighted item, then the next\n")
        text.append(
            f"* then a key: every item · y apply · n cancel · {WHOLE_KEY} whole text", style="dim"
        )
        return text

    def _decision(self, index: int) -> str:
        choice = self.decided.get(index)
        if choice is None:
            return "—"
        summary = self.CHOICES[choice.action].summary
        return summary + (f" ({choice.reason})" if choice.reason else "")

    def _cells(self, index: int) -> list[object]:
        item = self.items[index]
        choice = self.decided.get(index)
        text = choice.text if choice is not None and choice.text is not None else item.text
        return [self._decision(index), item.name, " ".join(text.split())]

    def _summary(self) -> Text:
        counts: dict[str, int] = {}
        for choice in self.decided.values():
            name = self.CHOICES[choice.action].summary
            counts[name] = counts.get(name, 0) + 1
        left = len(self.items) - len(self.decided)
        parts = [f"{count} {name}" for name, count in counts.items()]
        parts += [f"{left} undecided (left as they are)"] if left else []
        text = Text(" · ".join(parts), style="bold")
        text.append("\napply? y / n" if self.decided else "\nchoose first, then y")
        return text

    def _show(self) -> None:
        table = self.query_one(FactTable)
        table.refill((self._cells(index), str(index)) for index in range(len(self.items)))
        self.query_one("#batch-keys", Static).update(self._keys_line())
        self.query_one("#batch-summary", Static).update(self._summary())

    # -- deciding --------------------------------------------------------------------------

    def action_whole_text(self) -> None:
        show_whole_row(self, self.query_one(FactTable))

    def action_all(self) -> None:
        self.for_all = not self.for_all
        self._show()

    def action_choose(self, action: str) -> None:
        choice, table = self.CHOICES[action], self.query_one(FactTable)
        everyone, self.for_all = self.for_all, False
        positions = list(range(len(self.items))) if everyone else [table.cursor_row]
        if everyone and choice.edits:
            self.notify(f"{choice.title} is one item at a time.", severity="warning")
            self._show()
            return
        item = self.items[positions[0]]

        def decide(made: BatchChoice) -> None:
            for index in positions:
                self.decided[index] = made
            self._show()
            if not everyone:  # on to the next item, as on the screen itself
                table.move_cursor(row=min(table.cursor_row + 1, len(self.items) - 1))

        if choice.edits:
            question = f"Edit {item.name}, then {choice.summary}"
            ask(self, EditPrompt(question, item.text),
                lambda text: decide(BatchChoice(action, text=text)))  # fmt: skip
        elif choice.needs_reason:
            whom = f"these {len(positions)} {self.NOUN}" if everyone else item.name
            context = "" if everyone else quoted(item.text)
            ask(self, ReasonPrompt(f"Why {action} {whom}?", context=context),
                lambda reason: decide(BatchChoice(action, reason)))  # fmt: skip
        else:
            decide(BatchChoice(action))

    def action_confirm(self) -> None:
        if not self.decided:
            self.notify(f"Choose first: {self._keys()}.", severity="warning")
            return
        self.dismiss([(self.items[i].id, c) for i, c in sorted(self.decided.items())])


class ProposalBatchPrompt(BatchPrompt):
    NOUN = "proposal(s)"
    MARK_FIRST = "Mark proposals with space first."
    CHOICES: ClassVar[dict[str, Choice]] = {
        "add": Choice("a", "Add", "batch.add", "Add the proposal", "add"),
        "reject": Choice(
            "x",
            "Reject",
            "batch.reject",
            "Reject the proposal, with a reason",
            "reject",
            needs_reason=True,
        ),
        "edit": Choice(
            "e",
            "Edit+add",
            "batch.edit",
            "Edit the proposal's text, then add it",
            "edit+add",
            edits=True,
        ),
    }


class FactBatchPrompt(BatchPrompt):
    NOUN = "fact(s)"
    MARK_FIRST = "Mark facts with space (or ctrl+a) first."
    CHOICES: ClassVar[dict[str, Choice]] = {
        "confirm": Choice(
            "c",
            "Confirm",
            "bulk.confirm",
            "Vouch for the fact (user_confirmed, freshness reset)",
            "confirm",
        ),
        "stale": Choice("S", "Stale", "bulk.stale", "Mark the fact stale", "stale"),
        "evidence-only": Choice(
            "E",
            "Evidence-only",
            "bulk.evidence",
            "The fact: evidence only, never an instruction",
            "evidence-only",
        ),
        "retire": Choice(
            "X",
            "Retire",
            "bulk.retire",
            "Retire the fact, with a reason (its file stays)",
            "retire",
            needs_reason=True,
        ),
    }
