"""The decision log (`@` on any screen): every curation decision, newest first, with who
decided, when, and the fact's fields before and after."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import DataTable, Label, Static

from gno_tui.render.decision_log import LOG_COLUMNS, log_cells, log_detail
from gno_tui.widgets.fact_table import FactTable
from screens.modal import Modal

if TYPE_CHECKING:
    from engine.facade import DecisionLogEntry


class DecisionLogScreen(Modal[None]):
    """Every curation decision, newest first: who, when, what, and before/after."""

    STYLES = """
    DecisionLogScreen {
        #log-box { width: 95%; height: 85%; padding: 0 1; }
        #log-table { height: 1fr; }
        #log-detail { height: auto; max-height: 8; border-top: solid $panel; }
    }
    """
    BOX_ID = "log-box"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape,q,at", "close", "Close", id="log.close", tooltip="Back to the review queue")
    ]

    def __init__(
        self, entries: list[DecisionLogEntry], facts: dict[str, tuple[str, str]] | None = None
    ) -> None:
        super().__init__()
        self.entries = entries
        self.facts = facts or {}  # a target's uri -> (docid, text), to name it by

    def box_content(self) -> ComposeResult:
        yield Label(
            f"Decision log · {len(self.entries)} entries, newest first", classes="pane-title"
        )
        yield FactTable(id="log-table")
        yield Static("", id="log-detail")

    def on_mount(self) -> None:
        table = self.query_one(FactTable)
        table.add_columns(*LOG_COLUMNS)
        for entry in self.entries:
            table.add_row(*log_cells(entry, self.facts))
        table.focus()
        if self.entries:
            self.show_detail(0)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.show_detail(event.cursor_row)

    def show_detail(self, index: int) -> None:
        if not 0 <= index < len(self.entries):
            return
        self.query_one("#log-detail", Static).update(log_detail(self.entries[index], self.facts))
