"""Library: every fact, a page at a time, filterable as you type, with a detail pane."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.coordinate import Coordinate
from textual.message import Message
from textual.widgets import DataTable, Footer, Header, Input, Static, Tab, Tabs

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import iso_utc
from engine.curation import review
from engine.memory import browse
from engine.memory.receipts import recall_usage
from gno_tui.widgets.fact_table import FactTable
from gno_tui.widgets.library_view import (
    COLUMNS,
    TABS,
    FactsLoaded,
    LibraryFilter,
    detail_text,
    fact_cells,
    load_library_page,
)
from gno_tui.workbench_commands import WorkbenchCommand, bindings
from screens.base import WorkbenchScreen
from screens.batch_prompt import BatchChoice, FactBatchPrompt
from screens.commands.library import LIBRARY_COMMANDS
from screens.reason_prompt import ReasonPrompt

PAGE_SIZE = 200
# Batch decisions that are a use-policy change, and the change.
BATCH_CHANGES = {
    "evidence-only": {"usePolicy": {"canUseAsInstruction": False, "canUseAsEvidence": True}},
}


@dataclass
class DetailLoaded(Message):
    record_id: str
    body: Text


class LibraryScreen(WorkbenchScreen):
    HELP = """
## Library

Every fact in the store, newest first, a page at a time. Rows that are not current
(superseded, retired, expired) are dimmed.

- `/` filters as you type: words must all occur; `s:scope`, `c:collection`, `st:status`
  narrow further; a leading `!` inverts the words. A typo falls back to fuzzy matching.
- `@2026-11-01` (or any ISO time, UTC if no zone) in the filter, or `:@time` from any
  screen, shows the store as it was then: the facts it held and their status at that time
  (record time). *Needs attention* is about now and shows the facts current then.
- `[` / `]` switch the status tab. *Needs attention* = agent facts awaiting confirmation
  and stale facts.
- `c` confirms the fact (user_confirmed), `S` marks it stale, `X` retires it (with a reason),
  `u` restores a retired fact. Nothing is ever deleted.
- `space` marks a fact and moves on; `v` starts a range and `v` again marks every row
  between (`ctrl+a` marks every row shown, `ctrl+\\` clears);
  `y` then applies one decision to every marked fact (confirm, stale, evidence-only, or
  retire with one reason) after a count summary answered with `y` or `n`.
- `enter` opens the fact's supersession chain.
- `z` takes back your latest decision (any screen), `ctrl+z` does it again; `@` shows the log.
"""

    CSS = """
    LibraryScreen {
        #library-body { height: 1fr; }
        #library-list { width: 3fr; }
        #library-detail { width: 2fr; border-left: solid $panel; padding: 0 1; }
        #library-filter { display: none; }
        #library-filter.-visible { display: block; }
        #library-summary { height: 1; padding: 0 1; color: $text-muted; }
    }
    """

    COMMANDS_LIST: ClassVar[tuple[WorkbenchCommand, ...]] = LIBRARY_COMMANDS
    BINDINGS = bindings(COMMANDS_LIST)

    def __init__(self) -> None:
        super().__init__()
        self.filter = LibraryFilter()
        self.tab = "all"
        self.rows: list[Any] = []
        self.total = 0
        self.marked: set[str] = set()  # record ids, kept across reloads until applied
        self.visual_anchor: int | None = None  # the row a `v` range starts from

    def compose(self) -> ComposeResult:
        yield Header()
        yield Tabs(*[Tab(label, id=f"tab-{key}") for key, label in TABS], id="library-tabs")
        yield Input(
            placeholder="filter: words  s:scope  c:collection  st:status  @time  !invert",
            id="library-filter",
        )
        with Horizontal(id="library-body"):
            with Vertical(id="library-list"):
                yield FactTable(id="library-table")
                yield Static("", id="library-summary")
            with VerticalScroll(id="library-detail"):
                yield Static("Select a fact to see every field.", id="library-detail-body")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one(FactTable)
        # Fixed widths: auto-sized columns are measured on a later refresh, so the layout
        # would jump as the first page arrives (and pictures of it would depend on timing).
        for title, width in COLUMNS:
            table.add_column(title, width=width)
        table.focus()
        self.reload()

    # -- loading ------------------------------------------------------------------------

    def refresh_from_store(self) -> None:
        self.reload()

    def reload(self, offset: int = 0) -> None:
        self.load_page(self.filter, self.tab, offset)

    @work(thread=True, exclusive=True, exit_on_error=False, group="library-load")
    def load_page(self, wanted: LibraryFilter, tab: str, offset: int) -> None:
        self.post_message(load_library_page(self.store, wanted, tab, offset, PAGE_SIZE))

    def on_facts_loaded(self, message: FactsLoaded) -> None:
        table = self.query_one(FactTable)
        if message.offset == 0:
            keep = table.cursor_row
            table.clear()
            self.rows = []
        else:
            keep = None
        now = self.store.now()
        for row in message.rows:
            self.rows.append(row)
            marked = row.record_id in self.marked
            table.add_row(*fact_cells(row, now, marked, self.filter.as_of), key=row.record_id)
        self.total = message.total
        if keep is not None and self.rows:
            table.move_cursor(row=min(keep, len(self.rows) - 1))
        for key, label in TABS:
            count = (
                sum(message.counts.values()) - message.counts.get("attention", 0)
                if key == "all"
                else message.counts.get(key, 0)
            )
            self.query_one(f"#tab-{key}", Tab).label = f"{label} {count}"
        self.remeasure_tab_underline(self.query_one(Tabs))
        self._summary()
        if not self.rows:
            self.query_one("#library-detail-body", Static).update(
                "No fact matches. Agents add facts with `gno-tui remember`; press 2 to "
                "compose one here."
            )

    def _summary(self) -> None:
        self.query_one("#library-summary", Static).update(
            f"{len(self.rows)} of {self.total} shown"
            + (f" · {len(self.marked)} marked (y decides)" if self.marked else "")
            + (" · visual: v marks to here" if self.visual_anchor is not None else "")
            + (" · filter: " + self._filter_text() if self._filter_text() else "")
            + (f" · as of {iso_utc(self.filter.as_of)}" if self.filter.as_of else "")
        )

    def _filter_text(self) -> str:
        return self.query_one("#library-filter", Input).value.strip()

    @on(DataTable.RowHighlighted, "#library-table")
    def row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.cursor_row >= len(self.rows) - 20 and len(self.rows) < self.total:
            self.reload(offset=len(self.rows))
        if event.row_key.value:
            self.load_detail(event.row_key.value)

    @on(DataTable.RowSelected, "#library-table")
    def row_selected(self) -> None:
        """enter on a row: the table consumes the key, so its selection opens the chain."""
        self.action_open_chain()

    @work(thread=True, exclusive=True, exit_on_error=False, group="library-detail")
    def load_detail(self, record_id: str) -> None:
        row = browse.fact_row(self.store, record_id)
        recalled, last_by = recall_usage(self.store, record_id)
        path = self.store.collection_root(row.collection) / row.rel_path
        # Shown relative to the store's home when it lives there (the usual case): shorter,
        # and the same on every machine.
        shown = (
            f"<home>/{path.relative_to(self.store.home)}"
            if path.is_relative_to(self.store.home)
            else str(path)
        )
        self.post_message(
            DetailLoaded(record_id, detail_text(row, self.store.now(), shown, recalled, last_by))
        )

    def on_detail_loaded(self, message: DetailLoaded) -> None:
        self.query_one("#library-detail-body", Static).update(message.body)

    # -- filter and tabs ----------------------------------------------------------------

    def action_open_filter(self) -> None:
        box = self.query_one("#library-filter", Input)
        box.add_class("-visible")
        box.focus()

    def action_close_filter(self) -> None:
        box = self.query_one("#library-filter", Input)
        if not box.value:
            box.remove_class("-visible")
        self.query_one(FactTable).focus()

    @on(Input.Changed, "#library-filter")
    def filter_changed(self, event: Input.Changed) -> None:
        self.filter = LibraryFilter.parse(event.value)
        if self.filter.problem:
            self.notify(self.filter.problem, severity="warning")
        self.reload()

    def show_as_of(self, moment: str) -> None:
        """The Library as it was at `moment` (`:@time` from anywhere): an `@` filter."""
        box = self.query_one("#library-filter", Input)
        kept = " ".join(word for word in box.value.split() if not word.startswith("@"))
        box.value = f"{kept} @{moment}".strip()
        box.add_class("-visible")
        self.query_one(FactTable).focus()

    @on(Input.Submitted, "#library-filter")
    def filter_submitted(self) -> None:
        self.query_one(FactTable).focus()

    @on(Tabs.TabActivated, "#library-tabs")
    def tab_activated(self, event: Tabs.TabActivated) -> None:
        self.tab = (event.tab.id or "tab-all").removeprefix("tab-")
        self.reload()

    def action_next_tab(self) -> None:
        self.query_one(Tabs).action_next_tab()

    def action_prev_tab(self) -> None:
        self.query_one(Tabs).action_previous_tab()

    # -- curation -----------------------------------------------------------------------

    def _selected(self) -> Any | None:
        table = self.query_one(FactTable)
        if not self.rows or table.cursor_row >= len(self.rows):
            self.notify("No fact selected.", severity="warning")
            return None
        return self.rows[table.cursor_row]

    def action_confirm(self) -> None:
        if (row := self._selected()) is not None:
            self.curate("confirm", row.record_id)

    def action_mark_stale(self) -> None:
        if (row := self._selected()) is not None:
            self.curate("stale", row.record_id)

    def action_toggle_instruction(self) -> None:
        if (row := self._selected()) is not None:
            self.toggle_instruction(row.record_id, row.workbench, self.curate)

    def action_set_confidence(self) -> None:
        if (row := self._selected()) is not None:
            self.ask_confidence(row.record_id, row.docid, row.workbench, self.curate)

    def action_restore(self) -> None:
        if (row := self._selected()) is not None:
            self.curate("restore", row.record_id)

    def action_retire(self) -> None:
        row = self._selected()
        if row is None:
            return

        def retire_with(reason: str | None) -> None:
            if reason:
                self.curate("retire", row.record_id, reason)

        self.app.push_screen(ReasonPrompt(f"Why retire {row.docid}?"), retire_with)

    # -- marks and batch decisions ------------------------------------------------------

    def _show_mark(self, index: int) -> None:
        row = self.rows[index]
        cells = fact_cells(row, self.store.now(), row.record_id in self.marked)
        self.query_one(FactTable).update_cell_at(Coordinate(index, 0), cells[0])

    def action_mark(self) -> None:
        if (row := self._selected()) is None:
            return
        self.marked ^= {row.record_id}
        table = self.query_one(FactTable)
        index = table.cursor_row
        self._show_mark(index)
        table.move_cursor(row=min(index + 1, len(self.rows) - 1))
        self._summary()

    def action_visual(self) -> None:
        table = self.query_one(FactTable)
        if not self.rows:
            return
        if self.visual_anchor is None:
            self.visual_anchor = table.cursor_row
        else:
            low, high = sorted((self.visual_anchor, table.cursor_row))
            self.visual_anchor = None
            for index in range(low, min(high, len(self.rows) - 1) + 1):
                self.marked.add(self.rows[index].record_id)
                self._show_mark(index)
        self._summary()

    def action_mark_all(self) -> None:
        self.marked |= {row.record_id for row in self.rows}
        for index in range(len(self.rows)):
            self._show_mark(index)
        self._summary()

    def action_clear_marks(self) -> None:
        self.marked.clear()
        for index in range(len(self.rows)):
            self._show_mark(index)
        self._summary()

    def action_batch(self) -> None:
        if not self.marked:
            self.notify("Mark facts with space (or ctrl+a) first.", severity="warning")
            return
        ids = sorted(self.marked)

        def apply(choice: BatchChoice | None) -> None:
            if choice is not None:
                self.decide_all(choice, ids)

        self.app.push_screen(FactBatchPrompt(len(ids)), apply)

    @work(thread=True, exclusive=False, exit_on_error=False, group="library-curate")
    def decide_all(self, choice: BatchChoice, record_ids: list[str]) -> None:
        """One decision per fact, each its own write; a fact the engine refuses (already
        retired, say) is counted with its error code and the rest go on."""
        changes = BATCH_CHANGES.get(choice.action)
        what = "use-policy" if changes is not None else choice.action
        refused: list[str] = []
        for record_id in record_ids:
            try:
                self.curate_one(what, record_id, choice.reason or "", changes)
            except MemoryFailure as failure:
                refused.append(failure.code)
        done = len(record_ids) - len(refused)
        note = f"{choice.action}: {done} done"
        if refused:
            note += f", {len(refused)} refused ({', '.join(sorted(set(refused)))})"
        self.app.call_from_thread(
            self.notify, note, severity="warning" if refused else "information"
        )
        self.app.call_from_thread(self._batch_applied)

    def _batch_applied(self) -> None:
        self.marked.clear()
        self.reload()

    # -- one fact -----------------------------------------------------------------------

    @work(thread=True, exclusive=False, exit_on_error=False, group="library-curate")
    def curate(
        self,
        what: str,
        record_id: str,
        reason: str = "",
        changes: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.curate_one(what, record_id, reason, changes)
        self.app.call_from_thread(self.notify, f"{what}: done")
        self.app.call_from_thread(self.reload)

    def curate_one(
        self,
        what: str,
        record_id: str,
        reason: str = "",
        changes: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        """One curation write through the engine (called from a worker thread)."""
        if changes is not None:
            review.set_curation(
                self.store, ref=record_id, actor=self.actor, action=what, changes=changes
            )
        elif what == "confirm":
            review.confirm(self.store, ref=record_id, actor=self.actor)
        elif what == "stale":
            review.mark_stale(self.store, ref=record_id, actor=self.actor)
        elif what == "retire":
            review.retire(self.store, ref=record_id, actor=self.actor, reason=reason)
        else:
            review.restore(self.store, ref=record_id, actor=self.actor)

    def action_open_chain(self) -> None:
        if (row := self._selected()) is not None:
            self.app.selected_fact = row.record_id  # type: ignore[attr-defined]
            if "supersession" in self.app.MODES:  # type: ignore[attr-defined]
                self.app.switch_mode("supersession")
