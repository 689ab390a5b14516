"""The Review screen's Duplicates tab: near-duplicate pairs among the current facts of a scope,
with a word diff, and the person's decisions on a pair (retire one, keep both)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.message import Message
from textual.widgets import DataTable, Select, Static
from textual.worker import Worker, WorkerState

from engine.contract.normalize import collapse_text
from engine.curation import duplicates
from engine.memory import browse
from gno_tui.widgets.fact_table import FactTable
from gno_tui.widgets.word_diff import word_diff


@dataclass
class ScopesLoaded(Message):
    scopes: list[str]


@dataclass
class PairsLoaded(Message):
    scope: str
    pairs: list[browse.DuplicatePair]


@dataclass
class PairsCounted(Message):
    """Posted to the screen so it can show the count on the tab."""

    count: int


def ordered(pair: browse.DuplicatePair) -> tuple[Any, Any]:
    """(older, newer) by creation time."""
    if pair.right.created_at < pair.left.created_at:
        return pair.right, pair.left
    return pair.left, pair.right


class DuplicatesPane(Vertical):
    DEFAULT_CSS = """
    DuplicatesPane {
        #dup-scope { width: 50; }
        #dup-table { height: 1fr; }
        #dup-summary { height: 1; padding: 0 1; color: $text-muted; }
        #dup-diff { height: auto; max-height: 12; border-top: solid $panel; padding: 0 1; }
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.pairs: list[browse.DuplicatePair] = []
        self.scope: str | None = None

    def compose(self) -> ComposeResult:
        yield Select[str]([], prompt="scope", id="dup-scope")
        yield FactTable(id="dup-table")
        yield Static("", id="dup-summary")
        yield Static("", id="dup-diff")

    def on_mount(self) -> None:
        self.query_one(FactTable).add_columns("similarity", "tier", "method", "older", "newer")

    @property
    def store(self) -> Any:
        return self.app.store  # type: ignore[attr-defined]

    def reload(self) -> None:
        self.load_scopes()

    @work(thread=True, exclusive=True, exit_on_error=False, group="dup-scopes")
    def load_scopes(self) -> None:
        self.post_message(ScopesLoaded(browse.known_scopes(self.store)))

    def on_scopes_loaded(self, message: ScopesLoaded) -> None:
        select: Select[str] = self.query_one("#dup-scope", Select)
        select.set_options([(scope, scope) for scope in message.scopes])
        if self.scope in message.scopes:
            select.value = self.scope
            self.load_pairs(self.scope)
        elif message.scopes:
            select.value = message.scopes[0]

    @on(Select.Changed, "#dup-scope")
    def scope_changed(self, event: Select.Changed) -> None:
        if isinstance(event.value, str) and event.value != self.scope:
            self.scope = event.value
            self.load_pairs(event.value)

    @work(thread=True, exclusive=True, exit_on_error=False, group="dup-pairs")
    def load_pairs(self, scope: str) -> None:
        self.post_message(PairsLoaded(scope, browse.duplicate_pairs(self.store, scope=scope)))

    def on_pairs_loaded(self, message: PairsLoaded) -> None:
        table = self.query_one(FactTable)
        keep = table.cursor_row
        self.pairs = message.pairs
        table.clear()
        for pair in self.pairs:
            older, newer = ordered(pair)
            table.add_row(
                f"{pair.similarity:.3f}",
                pair.tier,
                pair.method,
                f"{older.docid} {collapse_text(older.text)[:34]}",
                f"{newer.docid} {collapse_text(newer.text)[:34]}",
            )
        if self.pairs:
            table.move_cursor(row=min(max(keep, 0), len(self.pairs) - 1))
        self.query_one("#dup-summary", Static).update(
            f"{len(self.pairs)} near-duplicate pair(s) in scope {message.scope}"
        )
        self.post_message(PairsCounted(len(self.pairs)))
        self.show_pair()

    @on(DataTable.RowHighlighted, "#dup-table")
    def pair_highlighted(self) -> None:
        self.show_pair()

    def current_pair(self) -> browse.DuplicatePair | None:
        row = self.query_one(FactTable).cursor_row
        return self.pairs[row] if self.pairs and 0 <= row < len(self.pairs) else None

    def show_pair(self) -> None:
        pair = self.current_pair()
        diff = self.query_one("#dup-diff", Static)
        if pair is None:
            diff.update(
                "No near-duplicate pair in this scope."
                if self.scope
                else "No scope yet: facts appear here once there are some."
            )
            return
        older, newer = ordered(pair)
        out = Text()
        out.append(
            f"{older.docid} (older) → {newer.docid} (newer) · similarity "
            f"{pair.similarity:.3f} · {pair.tier} · {pair.method}\n",
            style="bold",
        )
        out.append_text(word_diff(older.text, newer.text))
        diff.update(out)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """Worker messages do not bubble: a failed decision is shown with its error code."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            error = event.worker.error
            self.notify(
                getattr(error, "message", str(error)),
                title=getattr(error, "code", "Error"),
                severity="error",
                timeout=8,
            )

    # -- decisions ---------------------------------------------------------------------------

    def retire(self, *, newer: bool, actor: str) -> None:
        """Retire one fact of the highlighted pair as a duplicate of the other."""
        if (pair := self.current_pair()) is not None:
            older, younger = ordered(pair)
            gone, kept = (younger, older) if newer else (older, younger)
            self.curate("retire", gone.uri, kept.uri, actor, pair)

    def keep_both(self, *, actor: str) -> None:
        if (pair := self.current_pair()) is not None:
            older, newer = ordered(pair)
            self.curate("keep-both", older.uri, newer.uri, actor, pair)

    @work(thread=True, exclusive=False, exit_on_error=False, group="dup-curate")
    def curate(
        self, what: str, first: str, second: str, actor: str, pair: browse.DuplicatePair
    ) -> None:
        # The similarity goes into the log: the verdict counts in Review's threshold check.
        similarity, method = pair.similarity, pair.method
        try:
            if what == "retire":
                duplicates.retire_duplicate(self.store, gone=first, kept=second, actor=actor,
                                            similarity=similarity, method=method)  # fmt: skip
                self.app.call_from_thread(self.notify, f"retired {first}", title="Decided")
            else:
                duplicates.keep_both(self.store, left=first, right=second, actor=actor,
                                     similarity=similarity, method=method)  # fmt: skip
                self.app.call_from_thread(
                    self.notify, "kept both; the pair is not offered again", title="Decided"
                )
        finally:
            self.app.call_from_thread(self.reload)
