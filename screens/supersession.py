"""Supersession: a fact's chain, oldest to newest, with the word diff between each version and
the next, an as-of cursor, and supersede-the-head with a compare-and-swap on its hash."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Input, Static

from engine.facade import (
    ChainEdit,
    FactRecord,
    MemoryFailure,
    current_at,
    iso_utc,
    parse_iso,
)
from gno_tui.render.chain import chain_diff, chain_row, chain_status
from gno_tui.widgets.fact_table import FactTable
from gno_tui.widgets.fitted_table import ROOM_LEFT, Column, FittedTable
from gno_tui.widgets.footer import WorkbenchFooter
from gno_tui.widgets.header import WorkbenchHeader
from screens.base import Workbench
from screens.commands.supersession import SUPERSESSION_COMMANDS
from screens.fact_actions import FactActions, fact_commands
from screens.modal import ask, quoted
from screens.reason_prompt import ReasonPrompt, time_problem
from screens.whole_row import show_whole_row, whole_text_command

# The chain table's columns, by rank for the width: the version and its text stay longest (the
# text keeps 30% of the width before the other columns come in, then takes what is left), the
# writer goes first; the diffs below and W show every field.
CHAIN_COLUMNS = [
    Column("v", 3, 0),
    Column("docid", 9, 2),
    Column("created", 16, 5),
    Column("writer", 24, 6, to_content=True),
    Column("relation", 28, 4, to_content=True),
    Column("state", 10, 3, to_content=True),
    Column("text", ROOM_LEFT, 1, min_width=24, share=0.3, to_content=True),
]

# Unchanged words kept around each change in the diffs (`{` / `}`); None: the whole text.
CONTEXT_STEPS: tuple[int | None, ...] = (0, 1, 3, 8, None)


@dataclass
class ChainLoaded(Message):
    ref: str
    versions: list[FactRecord]
    now: datetime


@dataclass
class ChainNotFound(Message):
    ref: str


@dataclass
class HeadConflict(Message):
    message: str
    text: str  # what the person wrote: offered again over the new head, not thrown away
    revert: bool


@dataclass
class Superseded(Message):
    outcome: str
    record_id: str


class SupersessionScreen(FactActions):
    HELP = """
## Supersession chain

A fact and every version of it, oldest first: text, writer (caller), time and relation;
below, the word diff between each version and the next (removed words struck through in
red, added words in green).

- Type a uri, `#docid` or recordId in the box and press `enter`, or press `enter` on a fact
  in the Library or Recall screen.
- `h` / `l` move to the older / newer version; `i` shows the diffs inline or side by side;
  `{` / `}` show fewer / more unchanged words around each change (0, 1, 3, 8, or all).
- `T` asks for a time (ISO 8601, e.g. `2026-11-20T09:00Z`) and highlights the version that
  was current then (record time: when the store learned it; world time is not recorded).
- `s` supersedes the head: edit its text, `enter` writes the successor. If someone else
  superseded it first, you are told "head changed, refresh" and the chain reloads.
- `u` reverts to the highlighted older version: a new head with its text (editable first);
  nothing is deleted.
- `Y` copies the highlighted version's text, uri or #docid (then `t`, `u` or `d`); `o`
  shows it read-only in $VISUAL / $EDITOR.
- `ctrl+o` or `backspace` (and `escape`, from the versions, or from the empty box when you
  came from another screen) go back to the screen and row the chain was opened from (enter
  in the Library or Recall, `:`, or `5`).
- `O` sorts the versions by any column (`v` gives the chain's order back); `h` / `l`, the
  diffs and `u` still go by the chain, whatever the order shown.
- `W` shows the highlighted version in full (every field, uncut). The list's text column
  takes the room left and, where versions start alike, shows where they differ
  ("The…is deploy-02 in the Paris region…"; … is the part left out).
"""

    STYLES = """
    SupersessionScreen {
        #chain-ref { height: 3; border-title-color: $primary; }
        #chain-status { height: auto; padding: 0 1; }
        #chain-versions { height: auto; max-height: 12; }
        #chain-table { height: auto; max-height: 12; }
        #chain-diffs { height: 1fr; border-top: solid $panel; padding: 0 1; }
    }
    """

    COMMANDS_LIST = (
        *SUPERSESSION_COMMANDS,
        whole_text_command("chain", "version"),
        *fact_commands("chain", "version"),
    )

    def __init__(self, workbench: Workbench) -> None:
        super().__init__(workbench)
        self.ref: str | None = None  # the fact whose chain is shown
        self.opening: str | None = None  # a fact asked for, shown once its chain is found
        self.versions: list[FactRecord] = []
        self.as_of: datetime | None = None
        self.as_of_id: str | None = None
        self.now: datetime | None = None
        self.split = False
        self.context_step = len(CONTEXT_STEPS) - 1  # the whole text
        self.to_head = False  # the next load moves the cursor to the head (after a supersede)
        self.kept: tuple[str, bool] | None = None  # a successor's text that lost the race

    def compose(self) -> ComposeResult:
        yield WorkbenchHeader()
        yield Input(
            placeholder="a fact: gno:// uri, #docid or recordId (enter opens)", id="chain-ref"
        )
        yield Static(
            "No fact chosen: press enter on a fact in the Library, or type one above.",
            id="chain-status",
        )
        with Vertical(id="chain-versions"):
            yield FittedTable(CHAIN_COLUMNS, id="chain-table")
        with VerticalScroll(id="chain-diffs"):
            yield Static("", id="chain-diff-body")
        yield WorkbenchFooter()

    def on_mount(self) -> None:
        self.query_one("#chain-ref", Input).border_title = "fact"
        if not self.ref:
            self.query_one("#chain-ref", Input).focus()

    def open(self, ref: str) -> None:
        """Show the chain through `ref` (the app calls it for OpenChain, once mounted). The
        chain shown stays until that one is found: a fact that does not exist changes
        nothing (on_chain_not_found)."""
        self.opening = ref.strip()
        self.load_chain(self.opening)

    @staticmethod
    def not_found_note(ref: str) -> str:
        return (
            f"No fact {ref}. Find it in the Library (1, then / to filter) or by Recall (4) and "
            "press enter on it; `:` takes a #docid, a recordId or a gno:// uri."
        )

    def refresh_from_store(self) -> None:
        self.action_reload()

    def action_reload(self) -> None:
        # A fact being opened wins: reloading the old chain would cancel its load.
        if ref := self.opening or self.ref:
            self.load_chain(ref)

    @work(thread=True, exclusive=True, exit_on_error=False, group="chain-load")
    def load_chain(self, ref: str) -> None:
        try:
            versions = self.service.facts.chain(ref)
        except MemoryFailure as failure:
            if failure.code != "MEMORY_NOT_FOUND":
                raise
            self.deliver(ChainNotFound(ref))
            return
        self.deliver(ChainLoaded(ref, versions, self.service.now()))

    def on_chain_not_found(self, message: ChainNotFound) -> None:
        """Said once, never again on a later reload: the ref that failed is not kept."""
        box = self.query_one("#chain-ref", Input)
        if message.ref == self.opening:  # asked for, not there: the chain shown stays
            self.opening = None
            self.notify(self.not_found_note(message.ref), title="Not found", severity="warning")
            box.value = self.ref or ""
        elif message.ref == self.ref:  # the chain shown is gone (purged elsewhere)
            self.notify(f"{message.ref} is gone from the store.", severity="warning")
            self.ref, self.versions, self.as_of, self.as_of_id = None, [], None, None
            box.value = ""
            self.render_chain()
            self.render_diffs(0)

    def on_chain_loaded(self, message: ChainLoaded) -> None:
        table = self.query_one("#chain-table", FactTable)
        # A reload of the same chain keeps the cursor on its version (by record id): a version
        # another process appended moves the head, not the person's place.
        keep = table.key_at_cursor() if message.ref == self.ref and not self.to_head else None
        self.to_head = False
        if message.ref == self.opening:  # the fact asked for: now the one shown
            self.opening, self.ref = None, message.ref
            self.as_of = self.as_of_id = None
            self.query_one("#chain-ref", Input).value = message.ref
        elif message.ref != self.ref:
            return  # the chain of a fact no longer shown
        self.versions, self.now = message.versions, message.now
        if self.as_of is not None:
            found = current_at(self.versions, self.as_of)
            self.as_of_id = found.record_id if found else None
        self.render_chain()
        ids = [version.record_id for version in self.versions]
        target = ids.index(keep) if keep in ids else len(self.versions) - 1
        if self.as_of_id is not None:
            target = self._index_of(self.as_of_id)
        table.move_cursor(row=table.shown_row(target))
        table.focus()
        self.render_diffs(target)
        if self.kept is not None and self.versions:
            (text, revert), self.kept, head = self.kept, None, self.versions[-1]
            question = (
                f"The head changed while you wrote: it is now {head.docid}. Supersede it with:"
            )
            self.ask_successor(question, text, revert=revert, context=quoted(head.text))

    def _index_of(self, record_id: str) -> int:
        return next(i for i, v in enumerate(self.versions) if v.record_id == record_id)

    def render_chain(self) -> None:
        now = self.now or self.service.now()
        self.query_one("#chain-table", FactTable).refill(
            (chain_row(self.versions, index, now, self.as_of_id), version.record_id)
            for index, version in enumerate(self.versions)
        )
        status = chain_status(self.versions, now, self.as_of, self.as_of_id)
        self.query_one("#chain-status", Static).update(status)

    @on(DataTable.RowHighlighted, "#chain-table")
    def row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self.render_diffs(self.selected_version())

    def selected_version(self) -> int:
        """The highlighted version's place in the chain (oldest 0), however the list is sorted."""
        table = self.query_one("#chain-table", FactTable)
        return table.item_index(table.cursor_row)

    def render_diffs(self, selected: int) -> None:
        body = chain_diff(self.versions, selected=selected, as_of_id=self.as_of_id,
                          split=self.split, context=CONTEXT_STEPS[self.context_step])  # fmt: skip
        self.query_one("#chain-diff-body", Static).update(body)

    def action_toggle_split(self) -> None:
        self.split = not self.split
        self.render_diffs(self.selected_version())

    def action_less_context(self) -> None:
        self._step_context(-1)

    def action_more_context(self) -> None:
        self._step_context(1)

    def _step_context(self, step: int) -> None:
        self.context_step = min(max(self.context_step + step, 0), len(CONTEXT_STEPS) - 1)
        words = CONTEXT_STEPS[self.context_step]
        self.notify("diffs: the whole text" if words is None else
                    f"diffs: {words} unchanged word(s) around each change")  # fmt: skip
        self.render_diffs(self.selected_version())

    # -- navigation ---------------------------------------------------------------------

    def action_older(self) -> None:
        self._step_version(-1)

    def action_newer(self) -> None:
        self._step_version(1)

    def _step_version(self, step: int) -> None:
        """h / l: the version before or after in the chain, however the list is sorted."""
        version = min(max(self.selected_version() + step, 0), len(self.versions) - 1)
        table = self.query_one("#chain-table", FactTable)
        table.move_cursor(row=table.shown_row(version))

    def action_whole_text(self) -> None:
        show_whole_row(self, self.query_one("#chain-table", FactTable))

    def action_edit_ref(self) -> None:
        self.query_one("#chain-ref", Input).focus()

    def action_focus_table(self) -> None:
        self.query_one("#chain-table", FactTable).focus()

    async def action_back(self) -> None:
        """escape: out of the box to the versions; from them, or from an empty box when the
        person came from another screen, back there (nothing said if from nowhere)."""
        came_from_somewhere = bool(getattr(self.app, "jumps", None))
        if self.query_one("#chain-ref", Input).has_focus and (
            self.ref is not None or not came_from_somewhere
        ):
            self.action_focus_table()
        else:
            await self.app.run_action("jump_back(True)")

    def shown_fact(self) -> FactRecord | None:
        """The highlighted version (Y copies it, o shows it)."""
        row = self.query_one("#chain-table", FactTable).at_cursor(self.versions)
        if row is None:
            self.notify("Open a chain first.", severity="warning")
        return row

    @on(Input.Submitted, "#chain-ref")
    def ref_submitted(self, event: Input.Submitted) -> None:
        if event.value.strip():
            self.open(event.value)

    def action_as_of(self) -> None:
        if not self.versions:
            self.notify("Open a chain first.", severity="warning")
            return

        initial = iso_utc(self.as_of or self.now or self.service.now())
        question = "As of which time? (ISO 8601, UTC if no zone)"
        prompt = ReasonPrompt(question, initial=initial, check=time_problem)
        ask(self, prompt, self.set_as_of)

    def set_as_of(self, value: str) -> None:
        try:
            moment = parse_iso(value.strip())
        except ValueError:
            self.notify(
                f"{value!r} is not an ISO 8601 time, e.g. 2026-11-20T09:00Z.", severity="error"
            )
            return
        self.as_of = moment
        found = current_at(self.versions, moment)
        self.as_of_id = found.record_id if found else None
        self.render_chain()
        target = self._index_of(self.as_of_id) if self.as_of_id else len(self.versions) - 1
        table = self.query_one("#chain-table", FactTable)
        table.move_cursor(row=table.shown_row(target))
        self.render_diffs(target)

    # -- supersede the head ---------------------------------------------------------------

    def action_supersede_head(self) -> None:
        if not self.versions:
            self.notify("Open a chain first.", severity="warning")
            return
        head = self.versions[-1]
        self.ask_successor(f"Supersede {head.docid} (the head) with:", head.text)

    def action_revert(self) -> None:
        """Revert = append a successor with an older version's text: history is kept."""
        version = self.selected_version()
        if len(self.versions) < 2 or version >= len(self.versions) - 1:
            self.notify("Highlight an older version (h) to revert to it.", severity="warning")
            return
        older = self.versions[version]
        prompt = f"Revert to v{version + 1} {older.docid}: the new head will say"
        self.ask_successor(prompt, older.text, revert=True)

    def ask_successor(
        self, question: str, text: str, *, revert: bool = False, context: str = ""
    ) -> None:
        """Ask for the head's successor (`text`, editable, first), then write it."""
        head = self.versions[-1]
        ask(
            self,
            ReasonPrompt(question, initial=text, context=context),
            lambda written: self.supersede(head.uri, head.content_hash, written, revert=revert),
        )

    @work(thread=True, exclusive=True, exit_on_error=False, group="chain-write")
    def supersede(self, uri: str, content_hash: str, text: str, *, revert: bool = False) -> None:
        """A person's decision, logged (`@`) and undone by `z`, like any other."""
        edit = ChainEdit(uri, content_hash, text, self.actor, self.workbench.session, revert)
        try:
            result = self.service.curation.edit_chain(edit)
        except MemoryFailure as failure:
            if failure.code in ("MEMORY_SUPERSEDE_CONFLICT", "MEMORY_PREDECESSOR_HASH_MISMATCH"):
                self.post_message(HeadConflict(failure.message, text, revert))
                return
            raise
        self.post_message(Superseded(result["outcome"], result["record"]["recordId"]))

    def on_head_conflict(self, message: HeadConflict) -> None:
        self.notify(
            f"head changed, refresh: {message.message} Your text is kept: write it over the "
            "new head, or escape.",
            title="Supersede conflict",
            severity="warning",
            timeout=8,
        )
        self.kept = (message.text, message.revert)
        self.to_head = True
        self.action_reload()

    def on_superseded(self, message: Superseded) -> None:
        if message.outcome == "existing":
            self.notify("Unchanged: that text is already a current fact.", severity="warning")
        else:
            self.notify(f"Superseded the head: {message.record_id} is the new head.")
        self.to_head = True
        self.action_reload()
