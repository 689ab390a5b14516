"""Library: every fact, a page at a time, filterable as you type, with a detail pane."""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Input, Static, Tab, Tabs

from engine.facade import (
    Curation,
    CurationAction,
    FactRecord,
    LibraryFilter,
    LibraryPage,
    iso_utc,
)
from gno_tui.messages import OpenChain
from gno_tui.render.library import (
    COLUMN_RANKS,
    COLUMNS,
    SUMMARY_LEAST,
    TABS,
    detail_text,
    fact_cells,
)
from gno_tui.widgets.fact_table import FactTable
from gno_tui.widgets.fitted_table import ROOM_LEFT, Column, FittedTable
from gno_tui.widgets.footer import WorkbenchFooter
from gno_tui.widgets.header import WorkbenchHeader
from screens.base import Workbench
from screens.commands.library import LIBRARY_COMMANDS
from screens.fact_actions import FactActions, fact_commands
from screens.library_marks import LibraryMarks
from screens.modal import ask, quoted
from screens.reason_prompt import ReasonPrompt
from screens.whole_row import list_in_focus, show_whole_row, whole_text_command

PAGE_SIZE = 200
FILTER_SETTING = "library.filter"  # the home's surface setting that keeps the filter


@dataclass
class PageLoaded(Message):
    page: LibraryPage
    fuzzy: bool = False  # no fact held every word: these are the closest, by fuzzy matching


def fell_back(wanted: LibraryFilter, tab: str, page: LibraryPage) -> bool:
    """Whether the page is the filter's fuzzy fallback. The exact match keeps only facts that
    contain every word (case aside), and the fallback runs only when none does, so a listed
    fact missing a word means the fallback answered."""
    words = wanted.text.lower().split()
    if tab == "attention" or page.offset or not words or not page.rows:
        return False  # the attention tab and later pages never fall back
    return any(word not in page.rows[0].text.lower() for word in words)


@dataclass
class DetailLoaded(Message):
    record_id: str
    body: Text


class LibraryScreen(FactActions, LibraryMarks):
    HELP = """
## Library

Every fact in the store, newest first, a page at a time. Rows that are not current
(superseded, retired, expired) are dimmed.

- `/` filters as you type: words must all occur; `s:scope`, `c:collection`, `st:status`
  narrow further; `!` before any term leaves out what it names (`c:team !backups`,
  `!s:user:bob`, `!st:retired`). A typo falls back to fuzzy matching.
- `@2026-11-01` (or any ISO time, UTC if no zone) in the filter, or `:@time` from any
  screen, shows the store as it was then: the facts it held and their status at that time
  (record time); the detail pane names what happened later as later. *Needs attention* is
  about now and shows the facts current then. The as-of view is read-only: its write keys
  change nothing and say so; `escape` (from the list) leaves it for the present.
- `[` / `]` switch the status tab. *Needs attention* = agent facts awaiting confirmation
  and stale facts.
- `c` confirms the fact (user_confirmed), `S` marks it stale, `X` retires it (with a reason),
  `u` restores a retired fact. Nothing is ever deleted.
- `W` shows the highlighted fact's row in full (every column, uncut); the summary takes the
  room the other columns leave and, where facts start alike, shows where they differ.
- `space` marks a fact and moves on; `v` starts a range and `v` again marks every row
  between (`ctrl+a` marks every row shown, `~` inverts the marks shown, `ctrl+\\` clears);
  `y` then lists the marked facts: `c`/`S`/`E`/`X` decide the highlighted one and move on,
  `*` then a key decides them all; a summary, then `y` applies (one `z` undoes it) or `n`.
- `Y` copies the fact's text, uri or #docid (then `t`, `u` or `d`); `o` shows its fact file
  read-only in $VISUAL / $EDITOR.
- `enter` opens the fact's supersession chain (`ctrl+o` there comes back to this row).
  `\\` hides the detail pane (more columns fit; the narrowest tables keep summary and
  status).
- `z` takes back your latest decision (any screen), `ctrl+z` does it again; `@` shows the log.
"""

    STYLES = """
    LibraryScreen {
        #library-body { height: 1fr; }
        #library-list { width: 3fr; }
        /* The rows take what the summary leaves: a table sized by its rows pushed it off. */
        #library-table { height: 1fr; }
        #library-detail { width: 2fr; border-left: solid $panel; padding: 0 1; }
        #library-filter { display: none; }
        #library-filter.-visible { display: block; }
        #library-summary { height: 1; padding: 0 1; color: $text-muted; }
    }
    """

    DETAIL_PANE = "#library-detail"
    COMMANDS_LIST = (
        *LIBRARY_COMMANDS,
        whole_text_command("library", "fact"),
        *fact_commands("library", "fact"),
    )

    def __init__(self, workbench: Workbench) -> None:
        super().__init__(workbench)
        self.filter = LibraryFilter()
        self.saved_filter = ""  # the filter kept for this home, read as the screen is built
        self.tab = "all"
        self.rows: list[FactRecord] = []
        self.total = 0
        self.marked: set[str] = set()  # record ids, kept across reloads until applied
        self.fuzzy = False  # the list is the filter's fuzzy fallback (said in the summary)
        self.visual_anchor: int | None = None  # the row a `v` range starts from

    def compose(self) -> ComposeResult:
        yield WorkbenchHeader()
        yield Tabs(*[Tab(label, id=f"tab-{key}") for key, label in TABS], id="library-tabs")
        yield Input(
            placeholder="filter: words  s:scope  c:collection  st:status  @time  !term leaves out",
            id="library-filter",
        )
        with Horizontal(id="library-body"):
            with Vertical(id="library-list"):
                columns = [
                    Column(title, width, COLUMN_RANKS[title])
                    if title != "summary"
                    else Column(title, ROOM_LEFT, 0, min_width=SUMMARY_LEAST, share=0.5)
                    for title, width in COLUMNS
                ]
                yield FittedTable(columns, id="library-table")
                yield Static("", id="library-summary")
            with VerticalScroll(id="library-detail"):
                yield Static("Select a fact to see every field.", id="library-detail-body")
        yield WorkbenchFooter()

    def on_mount(self) -> None:
        # The table adds its columns itself, fixed widths chosen for its width: auto-sized
        # columns are measured on a later refresh, so the layout would jump as rows arrive.
        self.query_one(FactTable).focus()
        if self.saved_filter:  # the filter this home had when the workbench last closed
            box = self.query_one("#library-filter", Input)
            box.value = self.saved_filter
            box.add_class("-visible")

    def start_first_loads(self) -> None:
        self.saved_filter = self.service.surface_setting(FILTER_SETTING) or ""
        if self.saved_filter:  # UX.md: the Library's filter is kept per home
            self.filter = LibraryFilter.parse(self.saved_filter)
        self.reload()

    # -- loading ------------------------------------------------------------------------

    def show_loading(self) -> None:
        # Shown again after the store moved: the tab counts of before would be wrong until the
        # page is in, so they read as loading ("Current …"); the page's load relabels them.
        for key, label in TABS:
            self.query_one(f"#tab-{key}", Tab).label = f"{label} …"
        self.remeasure_tab_underline(self.query_one(Tabs))

    def refresh_from_store(self) -> None:
        # Every row loaded so far, again: the fact under the cursor may lie past the first page.
        self.load_page(self.filter, self.tab, 0, max(PAGE_SIZE, len(self.rows)))

    def reload(self, offset: int = 0) -> None:
        self.load_page(self.filter, self.tab, offset)

    @work(thread=True, exclusive=True, exit_on_error=False, group="library-load")
    def load_page(
        self, wanted: LibraryFilter, tab: str, offset: int, limit: int = PAGE_SIZE
    ) -> None:
        page = self.service.facts.library_page(wanted, tab=tab, offset=offset, limit=limit)
        self.deliver(PageLoaded(page, fell_back(wanted, tab, page)))

    def on_page_loaded(self, message: PageLoaded) -> None:
        page = message.page
        table = self.query_one(FactTable)
        # A reload keeps the cursor on its fact (by record id), not on its row number: another
        # process's write moves rows, and the next key must act on the fact the person chose.
        keep: tuple[str | None, int] | None = None
        if page.offset == 0:
            self.fuzzy = message.fuzzy
            keep = (table.key_at_cursor(), table.cursor_row)
            table.clear()
            self.rows = []
        now = self.service.now()
        for row in page.rows:
            self.rows.append(row)
            marked = row.record_id in self.marked
            table.add_row(*fact_cells(row, now, marked, self.filter.as_of), key=row.record_id)
        self.total = page.total
        if keep is not None and self.rows:
            table.place_cursor(*keep)
            if (key := table.key_at_cursor()) is not None:
                self.load_detail(key)  # its fields may have changed, even where it stayed
        relabelled = False
        for key, label in TABS:
            count = (
                sum(page.counts.values()) - page.counts.get("attention", 0)
                if key == "all"
                else page.counts.get(key, 0)
            )
            tab = self.query_one(f"#tab-{key}", Tab)
            # Only a changed count: a new label lays the whole screen out again, and typing
            # a filter does not change the counts (a tenth of each keystroke's time at 100k).
            if tab.label.plain != (text := f"{label} {count}"):
                tab.label = text
                relabelled = True
        if relabelled:
            self.remeasure_tab_underline(self.query_one(Tabs))
        self._summary()
        if not self.rows:
            self.query_one("#library-detail-body", Static).update(
                "No fact matches. Agents add facts with gno-tui remember; press 2 to "
                "compose one here (escape leaves its text box, then 1 comes back here)."
            )

    def _summary(self) -> None:
        text = (
            f"{len(self.rows)} of {self.total} shown"
            + (f" · {len(self.marked)} marked (y decides)" if self.marked else "")
            + (" · visual: v marks to here" if self.visual_anchor is not None else "")
            + (" · filter: " + self._filter_text() if self._filter_text() else "")
            + (" · fuzzy: no fact has every word, the closest shown" if self.fuzzy else "")
            + (f" · as of {iso_utc(self.filter.as_of)}" if self.filter.as_of else "")
        )
        # One line of fixed height: its text never changes the layout.
        self.query_one("#library-summary", Static).update(text, layout=False)

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
        service, as_of = self.service, self.filter.as_of
        row = service.facts.get_as_of(record_id, as_of)
        recalled, last_by = service.receipts.usage(record_id, as_of=as_of)
        shown = service.fact_location(row)  # a file under <home>/, or a server fact's uri
        self.deliver(
            DetailLoaded(
                record_id, detail_text(row, service.now(), shown, recalled, last_by, as_of)
            )
        )

    def on_detail_loaded(self, message: DetailLoaded) -> None:
        if message.record_id != self.query_one(FactTable).key_at_cursor():
            return  # the cursor moved on meanwhile: the pane shows only the fact under it
        self.query_one("#library-detail-body", Static).update(message.body)

    # -- filter and tabs ----------------------------------------------------------------

    def action_open_filter(self) -> None:
        box = self.query_one("#library-filter", Input)
        box.add_class("-visible")
        box.focus()

    def action_close_filter(self) -> None:
        box = self.query_one("#library-filter", Input)
        if self.filter.as_of is not None and not box.has_focus:
            # From the list, escape leaves the as-of view (what a write key's answer says).
            box.value = " ".join(w for w in box.value.split() if not w.startswith("@"))
            self.notify("Back to the store as it is now: the keys write again.")
        if not box.value:
            box.remove_class("-visible")
        self.query_one(FactTable).focus()

    @on(Input.Changed, "#library-filter")
    def filter_changed(self, event: Input.Changed) -> None:
        self.filter = LibraryFilter.parse(event.value)
        if self.filter.problem:
            self.notify(self.filter.problem, severity="warning")
        self.reload()
        self.keep_filter(event.value)

    @work(thread=True, exclusive=True, exit_on_error=False, group="library-keep-filter")
    def keep_filter(self, raw: str) -> None:
        """The filter is kept per home for the next run, without its `@time`: a look at the
        past is for now, a restart opens on the present."""
        kept = " ".join(word for word in raw.split() if not word.startswith("@"))
        self.service.set_surface_setting(FILTER_SETTING, kept or None)

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

    def action_whole_text(self) -> None:
        show_whole_row(self, list_in_focus(self, "#library-table"))

    def action_next_tab(self) -> None:
        self.query_one(Tabs).action_next_tab()

    def action_prev_tab(self) -> None:
        self.query_one(Tabs).action_previous_tab()

    # -- curation -----------------------------------------------------------------------

    def refused_in_the_past(self) -> bool:
        """In the as-of view a write key writes nothing and says how to leave the view: its
        rows show the past, and a write would act on the present (a fact shown current then
        may be superseded now)."""
        if self.filter.as_of is None:
            return False
        self.notify(
            f"The Library shows the store as of {iso_utc(self.filter.as_of)}, read-only: "
            "nothing was changed. Press escape to leave the as-of view for the store as it is "
            "now, then try again.",
            title="As-of view: read-only",
            severity="warning",
        )
        return True

    # The write keys, each refused in the as-of view (the batch's `y`: LibraryMarks).
    def action_confirm(self) -> None:
        if not self.refused_in_the_past():
            super().action_confirm()

    def action_mark_stale(self) -> None:
        if not self.refused_in_the_past():
            super().action_mark_stale()

    def action_toggle_instruction(self) -> None:
        if not self.refused_in_the_past():
            super().action_toggle_instruction()

    def action_set_confidence(self) -> None:
        if not self.refused_in_the_past():
            super().action_set_confidence()

    def _selected(self) -> FactRecord | None:
        row = self.query_one(FactTable).at_cursor(self.rows)
        if row is None:
            self.notify("No fact selected.", severity="warning")
        return row

    def fact_in_hand(self) -> str | None:
        return row.record_id if (row := self._selected()) is not None else None

    def record_in_hand(self) -> FactRecord | None:
        return self._selected()  # the row as listed

    def action_restore(self) -> None:
        if not self.refused_in_the_past():
            self.curate_in_hand(CurationAction.RESTORE)

    def action_retire(self) -> None:
        if self.refused_in_the_past() or (row := self._selected()) is None:
            return

        def retire(reason: str) -> None:
            self.curate(Curation(CurationAction.RETIRE, row.record_id, self.actor, reason))

        prompt = ReasonPrompt(f"Why retire {row.docid}?", context=quoted(row.text))
        ask(self, prompt, retire)

    def curated_note(self, label: str, ref: str) -> str:
        return f"{label}: done"

    def curated(self) -> None:
        self.reload()

    # -- the chain ----------------------------------------------------------------------

    def action_open_chain(self) -> None:
        if (row := self._selected()) is not None:
            self.post_message(OpenChain(row.record_id))
