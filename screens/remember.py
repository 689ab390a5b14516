"""Remember: compose a fact and see, while typing, which current facts it would duplicate.

Nothing is written until a person chooses add or supersede; the outcome is shown exactly as
the engine returned it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.timer import Timer
from textual.widgets import Input, Label, Select, Static, TextArea

from engine.facade import RememberResult, collapse_text, estimate_tokens, merged_text
from gno_tui.render.hidden_chars import hidden_summary
from gno_tui.render.remember import outcome_text
from gno_tui.widgets.fact_table import FactTable
from gno_tui.widgets.footer import WorkbenchFooter
from gno_tui.widgets.header import WorkbenchHeader
from gno_tui.widgets.live_select import LiveSelect
from gno_tui.widgets.scope_suggester import ScopeSuggester, split_scopes
from screens.base import Workbench
from screens.commands.remember import REMEMBER_COMMANDS
from screens.edit_prompt import MergePrompt
from screens.modal import ask
from screens.remember_candidates import Draft, RememberCandidates

# How long typing must pause before the candidates are looked up again.
DEBOUNCE_SECONDS = 0.3


@dataclass
class Written(Message):
    result: RememberResult


@dataclass
class StoreFacts(Message):
    scopes: list[str]
    collections: list[str]


class RememberScreen(RememberCandidates):
    HELP = """
## Remember

Compose a fact: its text, scopes (comma-separated; `→` accepts a completion from the
scopes the store knows), an optional source and the collection. The token count is the
recall estimate (utf-8 bytes / 4).

While you type, the current facts that say nearly the same thing are listed with their
similarity, tier (exact, likely, weak) and the matching method and threshold in force. The
draft's collection is searched first; the close facts of the other collections follow,
marked `other: <collection>` (the line above says what each search found). The
highlighted candidate is shown as a word diff against your draft. Nothing is written until
you choose:

- `ctrl+s` adds the draft as a new fact.
- `ctrl+r` supersedes the highlighted candidate with the draft (the old fact stays in
  history; its scopes are kept unless you give new ones; the successor stays in the
  candidate's collection).
- `ctrl+g` merges the draft with the highlighted candidate: one text for both, edited
  first, written as the candidate's successor.
- `ctrl+l` clears the draft.
- `tab` moves between the fields and the candidate list (`j`/`k` move in the list);
  `escape` leaves the fields for the list (then `1`-`6` switch screens), `/` goes back.

Hidden characters (zero-width, bidi controls, non-breaking spaces) are flagged before you
write. The fence preview says when recall receipts already returned this exact text: an
agent presenting one of them could not write it back (a replay). When the text is not the
same but close to a span a recall returned (a near miss), the preview lists those spans
with their similarity: a write that only rewords a recalled memory is probably a replay.
"""

    STYLES = """
    RememberScreen {
        #remember-body { height: 1fr; }
        #remember-form { width: 1fr; padding: 0 1; }
        #remember-side { width: 1fr; border-left: solid $panel; padding: 0 1; }
        #remember-text { height: 8; }
        .field-label { color: $text-muted; margin-top: 1; }
        #remember-status { height: auto; color: $text-muted; }
        #remember-warning { height: auto; color: $warning; }
        #remember-warning.-empty { display: none; }
        #remember-fence { height: auto; color: $accent; }
        #remember-fence.-empty { display: none; }
        #remember-matching { height: auto; }
        #remember-candidates { height: 10; }
        #remember-diff-box { height: 1fr; border-top: solid $panel; }
        #remember-outcome { height: auto; border: round $success; padding: 0 1; }
        #remember-outcome.-empty { display: none; }
    }
    """

    COMMANDS_LIST = REMEMBER_COMMANDS

    def __init__(self, workbench: Workbench) -> None:
        super().__init__(workbench)
        self.suggester = ScopeSuggester()
        self.candidates: list[dict[str, Any]] = []
        self.shown_draft: Draft | None = None
        self._debounce: Timer | None = None

    def compose(self) -> ComposeResult:
        yield WorkbenchHeader()
        with Horizontal(id="remember-body"):
            with Vertical(id="remember-form"):
                yield Label("Text", classes="field-label")
                yield TextArea(id="remember-text", soft_wrap=True, show_line_numbers=False)
                yield Static("0 tokens", id="remember-status")
                yield Static("", id="remember-warning", classes="-empty")
                yield Static("", id="remember-fence", classes="-empty")
                yield Label("Scopes (comma-separated)", classes="field-label")
                yield Input(
                    placeholder="e.g. user:alice, project:gno",
                    id="remember-scopes",
                    suggester=self.suggester,
                )
                yield Label("Source (optional)", classes="field-label")
                yield Input(placeholder="where the fact comes from", id="remember-source")
                yield Label("Collection", classes="field-label")
                yield LiveSelect(
                    [("memory", "memory")],
                    value="memory",
                    allow_blank=False,
                    id="remember-collection",
                )
            with Vertical(id="remember-side"):
                yield Static("Type a fact to see its near-duplicates.", id="remember-matching")
                yield FactTable(id="remember-candidates")
                with VerticalScroll(id="remember-diff-box"):
                    yield Static("", id="remember-diff")
                yield Static("", id="remember-outcome", classes="-empty")
        yield WorkbenchFooter()

    def on_mount(self) -> None:
        table = self.query_one("#remember-candidates", FactTable)
        table.add_columns("similarity", "tier", "collection", "docid", "scopes", "text")
        self.query_one("#remember-text", TextArea).focus()
        self.load_store_facts()

    # -- store facts for completion -------------------------------------------------------

    def refresh_from_store(self) -> None:
        self.load_store_facts()
        self.schedule_propose()

    @work(thread=True, exclusive=True, exit_on_error=False, group="remember-store")
    def load_store_facts(self) -> None:
        scopes = self.service.facts.known_scopes()
        collections = sorted(collection.name for collection in self.service.collections())
        self.deliver(StoreFacts(scopes, collections))

    def on_store_facts(self, message: StoreFacts) -> None:
        self.suggester.scopes = message.scopes
        # Offered when the dropdown is closed: a live refresh never moves its highlight.
        select = self.query_one("#remember-collection", LiveSelect)
        select.offer([(name, name) for name in message.collections])

    # -- the draft and its candidates -----------------------------------------------------

    def draft(self) -> Draft:
        collection = self.query_one("#remember-collection", Select).value
        source = self.query_one("#remember-source", Input).value.strip()
        return Draft(
            text=self.query_one("#remember-text", TextArea).text,
            scopes=split_scopes(self.query_one("#remember-scopes", Input).value),
            source=source or None,
            collection=collection if isinstance(collection, str) else None,
        )

    @on(TextArea.Changed, "#remember-text")
    def text_changed(self) -> None:
        text = self.query_one("#remember-text", TextArea).text
        body = collapse_text(text)
        self.query_one("#remember-status", Static).update(
            f"{estimate_tokens(body) if body else 0} tokens · {len(body.encode('utf-8'))} bytes"
        )
        warning = self.query_one("#remember-warning", Static)
        summary = hidden_summary(text)
        warning.update(f"⚠ {summary}" if summary else "")
        warning.set_class(not summary, "-empty")
        self.schedule_propose()

    @on(Input.Changed, "#remember-scopes")
    @on(Input.Changed, "#remember-source")
    @on(Select.Changed, "#remember-collection")
    def field_changed(self) -> None:
        self.schedule_propose()

    def schedule_propose(self) -> None:
        if self._debounce is not None:
            self._debounce.stop()
        self._debounce = self.set_timer(DEBOUNCE_SECONDS, self._propose_now)

    def _propose_now(self) -> None:
        self._debounce = None
        draft = self.draft()
        if not collapse_text(draft.text) or not draft.scopes:
            # No scope yet is no mistake while typing: the scopes box is below the text.
            self.show_fence(None)
            self.show_candidates(draft, None, "")
            return
        self.propose(draft)

    # -- writing ----------------------------------------------------------------------------

    def action_add(self) -> None:
        draft = self.draft()
        if not collapse_text(draft.text):
            self.notify("Type the fact first.", severity="warning")
            return
        if not draft.scopes:
            self.notify("Give the fact a scope first, e.g. user:alice.", severity="warning")
            self.query_one("#remember-scopes", Input).focus()
            return
        self.write(draft, None)

    def action_supersede(self) -> None:
        candidate = self.highlighted()
        if candidate is None:
            self.notify(
                "No candidate to supersede: supersede needs a highlighted candidate.",
                severity="warning",
            )
            return
        if candidate["match"] == "exact" and collapse_text(candidate["text"]) == collapse_text(
            self.draft().text
        ):
            self.notify("The draft is the same text as the candidate.", severity="warning")
            return
        self.write(self.draft(), candidate)

    def action_merge(self) -> None:
        candidate = self.highlighted()
        if candidate is None:
            self.notify("No candidate to merge with: highlight one first.", severity="warning")
            return
        draft = self.draft()

        ask(
            self,
            MergePrompt(
                f"Merge the draft into {candidate.get('docid') or candidate['uri']}: one text "
                "for both, superseding the candidate",
                merged_text(candidate["text"], draft.text),
            ),
            lambda text: self.write(replace(draft, text=text), candidate),
        )

    @work(thread=True, exclusive=True, exit_on_error=False, group="remember-write")
    def write(self, draft: Draft, predecessor: dict[str, Any] | None) -> None:
        request = self.request(draft, "add", draft.scopes or None)
        if predecessor is not None:
            request.decision = "supersede"
            request.predecessor = predecessor["uri"]
            request.predecessor_hash = predecessor["contentHash"]
            request.collection = None  # a successor stays in its predecessor's collection
        self.post_message(Written(self.service.remember(request)))

    def on_written(self, message: Written) -> None:
        result = message.result
        record = result.get("record", {})
        sync = result.get("sync", {})
        outcome = self.query_one("#remember-outcome", Static)
        outcome.update(outcome_text(result))
        outcome.remove_class("-empty")
        self.notify(
            f"{result['outcome']}: {record.get('uri', '')}",
            severity="warning" if sync.get("status") == "failed" else "information",
        )
        if result["outcome"] in ("added", "superseded"):
            self.query_one("#remember-text", TextArea).clear()
            self.query_one("#remember-text", TextArea).focus()
        self.load_store_facts()

    def action_leave_input(self) -> None:
        self.query_one("#remember-candidates", FactTable).focus()

    def action_edit_text(self) -> None:
        self.query_one("#remember-text", TextArea).focus()

    def action_clear(self) -> None:
        self.query_one("#remember-text", TextArea).clear()
        self.query_one("#remember-source", Input).value = ""
        outcome = self.query_one("#remember-outcome", Static)
        outcome.update("")
        outcome.add_class("-empty")
        self.query_one("#remember-text", TextArea).focus()
        self.notify("Draft cleared; nothing was written.")
