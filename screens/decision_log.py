"""The decision log (`@` on any screen): every curation decision, newest first, with who
decided, when, and the fact's fields before and after."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

from gno_tui.widgets.fact_table import FactTable


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
