"""The Review screen's modals: edit a proposal's text, and the decision log."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static, TextArea

from gno_tui.widgets.fact_table import FactTable


class EditPrompt(ModalScreen[str | None]):
    """The proposal's text, editable; ctrl+s adds the edited text, escape cancels."""

    CSS = """
    EditPrompt {
        align: center middle;
        #edit-box { width: 90; height: auto; border: round $accent; padding: 1 2;
                    background: $surface; }
        #edit-text { height: 10; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "ctrl+s",
            "save",
            "Add edited",
            id="edit.save",
            tooltip="Add the edited text as a new fact",
        ),
        Binding("escape", "cancel", "Cancel", id="edit.cancel", tooltip="Close without deciding"),
    ]

    def __init__(self, question: str, text: str) -> None:
        super().__init__()
        self.question = question
        self.text = text

    def compose(self) -> ComposeResult:
        with Vertical(id="edit-box"):
            yield Label(self.question)
            yield TextArea(self.text, id="edit-text", soft_wrap=True)
            yield Label("ctrl+s adds the edited text · escape cancels", classes="muted")

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def action_save(self) -> None:
        text = self.query_one(TextArea).text.strip()
        if not text:
            self.notify("The text is empty (escape cancels).", severity="warning")
            return
        self.dismiss(text)

    def action_cancel(self) -> None:
        self.dismiss(None)


class DecisionLogScreen(ModalScreen[None]):
    """Every curation decision, newest first: who, when, what, and before/after."""

    CSS = """
    DecisionLogScreen {
        align: center middle;
        #log-box { width: 95%; height: 85%; border: round $accent; background: $surface;
                   padding: 0 1; }
        #log-table { height: 1fr; }
        #log-detail { height: auto; max-height: 8; border-top: solid $panel; }
    }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,at", "close", "Close", id="log.close", tooltip="Back to the review queue")
    ]

    def __init__(self, entries: list[dict[str, Any]]) -> None:
        super().__init__()
        self.entries = entries

    def compose(self) -> ComposeResult:
        with Vertical(id="log-box"):
            yield Label(
                f"Decision log · {len(self.entries)} entries, newest first", classes="pane-title"
            )
            yield FactTable(id="log-table")
            yield Static("", id="log-detail")

    def on_mount(self) -> None:
        table = self.query_one(FactTable)
        table.add_columns("when", "who", "what", "target", "before", "after")
        for entry in self.entries:
            detail = entry.get("detail") or {}
            table.add_row(
                (entry["at"] or "")[:19].replace("T", " "),
                entry["actor"],
                entry["action"],
                _short(entry["target"], 40),
                _short(_compact(detail.get("before")), 30),
                _short(_compact(detail.get("after", _rest(detail))), 40),
            )
        table.focus()
        if self.entries:
            self.show_detail(0)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_detail(event.cursor_row)

    def show_detail(self, index: int) -> None:
        if not 0 <= index < len(self.entries):
            return
        entry = self.entries[index]
        text = Text()
        text.append(f"{entry['action']} by {entry['actor']} at {entry['at']}\n", style="bold")
        text.append(f"target: {entry['target']}\n")
        text.append(json.dumps(entry.get("detail") or {}, ensure_ascii=False, sort_keys=True))
        self.query_one("#log-detail", Static).update(text)

    def action_close(self) -> None:
        self.dismiss(None)


def _rest(detail: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in detail.items() if k != "before"}


def _compact(value: Any) -> str:
    if value in (None, {}, ""):
        return "—"
    if isinstance(value, dict):
        return " ".join(f"{k}={_compact(v)}" for k, v in value.items() if v is not None)
    if isinstance(value, list):
        return ",".join(_compact(v) for v in value)
    return str(value)


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
