"""The Review screen's Duplicates tab: near-duplicate pairs among the current facts of every
scope (the default) or of one picked in `#dup-scope`, each row with the scopes of both sides,
a word diff, and the person's decisions on a pair (retire one, keep both).

A pair whose facts are in different scopes is listed too (it is the same fact twice); its
detail says which scope retiring either side leaves without it. Finding the pairs compares
every two facts: only the best are listed and only the newest facts of a big store compared,
and the line under the list says so (engine/curation/duplicates.py)."""

from __future__ import annotations

from dataclasses import dataclass

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Select, Static
from textual.worker import Worker, get_current_worker

from engine.facade import DuplicatePair, DuplicateVerdict, MemoryService
from gno_tui.messages import forward_failure
from gno_tui.render.duplicates import ordered, pair_cells, pair_text, pairs_summary
from gno_tui.widgets.fact_table import FactTable
from gno_tui.widgets.fitted_table import ROOM_LEFT, Column, FittedTable
from gno_tui.widgets.live_select import LiveSelect

# The dropdown's value for every scope: no scope can be "*" (a scope starts with a letter or
# digit), and a dropdown value is a string.
ALL_SCOPES = "*"
ALL_SCOPES_LABEL = "all scopes"

# The two texts take the room left; the method (one per store) goes first when it is short.
PAIR_COLUMNS = [
    Column("similarity", 10, 0),
    Column("tier", 6, 3),
    Column("method", 8, 4),
    Column("scopes", 40, 1, to_content=True),  # both sides', older ↔ newer when they differ
    Column("older", ROOM_LEFT, 2, min_width=16, share=0.25, to_content=True),
    Column("newer", ROOM_LEFT, 2, min_width=16, share=0.25, to_content=True),
]


@dataclass
class ScopesLoaded(Message):
    scopes: list[str]


@dataclass
class PairsLoaded(Message):
    scope: str  # ALL_SCOPES or a scope
    pairs: list[DuplicatePair]
    total: int  # pairs in all (the list has the best of them)
    compared: int  # facts compared, the newest of
    visible: int  # the facts in view


@dataclass
class PairsCounted(Message):
    """Posted to the screen so it can show the count on the tab."""

    count: int


class DuplicatesPane(Vertical):
    DEFAULT_CSS = """
    DuplicatesPane {
        #dup-scope { width: 50; }
        #dup-table { height: 1fr; }
        #dup-summary { height: auto; max-height: 2; padding: 0 1; color: $text-muted; }
        #dup-diff { height: auto; max-height: 12; border-top: solid $panel; padding: 0 1; }
    }
    """

    def deliver(self, message: Message) -> None:
        """Post a loading worker's result unless a newer load replaced it (see
        WorkbenchScreen.deliver)."""
        if not get_current_worker().is_cancelled:
            self.post_message(message)

    def __init__(self, service: MemoryService, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.service = service
        self.pairs: list[DuplicatePair] = []
        self.scope = ALL_SCOPES
        self.loaded = False  # pairs shown at least once

    def compose(self) -> ComposeResult:
        # No blank: "all scopes" is always there, so a scope that goes falls back to it.
        yield LiveSelect(
            [(ALL_SCOPES_LABEL, ALL_SCOPES)],
            prompt="scope",
            allow_blank=False,
            value=ALL_SCOPES,
            id="dup-scope",
        )
        yield FittedTable(PAIR_COLUMNS, id="dup-table")
        yield Static("", id="dup-summary")
        yield Static("", id="dup-diff")

    def reload(self) -> None:
        self.load_scopes()

    @work(thread=True, exclusive=True, exit_on_error=False, group="dup-scopes")
    def load_scopes(self) -> None:
        self.deliver(ScopesLoaded(self.service.facts.known_scopes()))

    def on_scopes_loaded(self, message: ScopesLoaded) -> None:
        # The scope stays chosen (a new scope, or the dropdown open, changes nothing of it);
        # a scope gone falls back to all scopes, and Select.Changed loads their pairs.
        options = [(ALL_SCOPES_LABEL, ALL_SCOPES), *((s, s) for s in message.scopes)]
        self.query_one("#dup-scope", LiveSelect).offer(options)
        if self.scope == ALL_SCOPES or self.scope in message.scopes:
            self.load_pairs(self.scope)

    @on(Select.Changed, "#dup-scope")
    def scope_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, str) and event.value != self.scope:
            self.scope = event.value
            where = "across all scopes" if self.scope == ALL_SCOPES else f"in scope {self.scope}"
            self.query_one("#dup-summary", Static).update(f"finding near-duplicates {where} …")
            self.load_pairs(event.value)

    @work(thread=True, exclusive=True, exit_on_error=False, group="dup-pairs")
    def load_pairs(self, scope: str) -> None:
        found = self.service.curation.duplicates(scope=None if scope == ALL_SCOPES else scope)
        self.deliver(PairsLoaded(scope, found.pairs, found.total, found.compared, found.visible))

    def on_pairs_loaded(self, message: PairsLoaded) -> None:
        self.pairs, self.loaded = message.pairs, True
        # Keyed by the pair's two facts, so a refresh keeps the cursor on the same pair.
        self.query_one(FactTable).refill(
            (pair_cells(pair), f"{pair.left.record_id}|{pair.right.record_id}")
            for pair in self.pairs
        )
        scope = None if message.scope == ALL_SCOPES else message.scope
        summary = pairs_summary(
            self.pairs,
            scope=scope,
            total=message.total,
            compared=message.compared,
            visible=message.visible,
        )
        self.query_one("#dup-summary", Static).update(summary)
        self.post_message(PairsCounted(len(self.pairs)))
        self.show_pair()

    @on(DataTable.RowHighlighted, "#dup-table")
    def pair_highlighted(self) -> None:
        self.show_pair()

    def current_pair(self) -> DuplicatePair | None:
        return self.query_one(FactTable).at_cursor(self.pairs)

    def show_pair(self) -> None:
        pair = self.current_pair()
        diff = self.query_one("#dup-diff", Static)
        if pair is None:
            diff.update(
                "Finding near-duplicate pairs …"
                if not self.loaded
                else "No near-duplicate pair across the scopes."
                if self.scope == ALL_SCOPES
                else "No near-duplicate pair in this scope."
            )
            return
        diff.update(pair_text(pair))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        forward_failure(self, event)

    # -- decisions ---------------------------------------------------------------------------
    # The similarity goes into the log: the verdict counts in Review's threshold check.

    def retire(self, *, newer: bool, actor: str) -> None:
        """Retire one fact of the highlighted pair as a duplicate of the other."""
        if (pair := self.current_pair()) is not None:
            older, younger = ordered(pair)
            gone, kept = (younger, older) if newer else (older, younger)
            self.retire_duplicate(gone.uri, kept.uri, actor, pair)

    def keep_both(self, *, actor: str) -> None:
        if (pair := self.current_pair()) is not None:
            older, newer = ordered(pair)
            self.keep_pair(older.uri, newer.uri, actor, pair)

    @work(thread=True, exclusive=False, exit_on_error=False, group="dup-curate")
    def retire_duplicate(self, gone: str, kept: str, actor: str, pair: DuplicatePair) -> None:
        try:
            self.service.curation.retire_duplicate(verdict(kept, gone, actor, pair))
            self.app.call_from_thread(self.notify, f"retired {gone}", title="Decided")
        finally:
            self.app.call_from_thread(self.reload)

    @work(thread=True, exclusive=False, exit_on_error=False, group="dup-curate")
    def keep_pair(self, left: str, right: str, actor: str, pair: DuplicatePair) -> None:
        try:
            self.service.curation.keep_both(verdict(left, right, actor, pair))
            self.app.call_from_thread(
                self.notify, "kept both; the pair is not offered again", title="Decided"
            )
        finally:
            self.app.call_from_thread(self.reload)


def verdict(kept: str, other: str, actor: str, pair: DuplicatePair) -> DuplicateVerdict:
    """The verdict on `pair`, with the similarity the person saw (for the threshold check)."""
    return DuplicateVerdict(kept, other, actor, similarity=pair.similarity, method=pair.method)
