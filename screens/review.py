"""Review: the proposals agents left for a person, and near-duplicates among current facts.

Every decision goes through the engine's review path (the same remember path as any write) and
is logged; `@` shows the log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import (
    DataTable,
    Input,
    Select,
    Static,
    TabbedContent,
    TabPane,
    Tabs,
    TextArea,
)

from engine.facade import ReviewQueue, ThresholdCheck
from gno_tui.render.proposals import calibration_line, proposal_cells, proposal_detail
from gno_tui.widgets.duplicates_pane import DuplicatesPane, PairsCounted
from gno_tui.widgets.fact_table import FactTable
from gno_tui.widgets.fitted_table import ROOM_LEFT, Column, FittedTable
from gno_tui.widgets.footer import WorkbenchFooter
from gno_tui.widgets.header import WorkbenchHeader
from screens.base import Workbench
from screens.commands.review import REVIEW_COMMANDS
from screens.list_marks import ListMarks
from screens.review_decide import ProposalDecisions
from screens.whole_row import list_in_focus, show_whole_row, whole_text_command

PROPOSAL_ACTIONS = {
    "add",
    "add_confirmed",
    "supersede",
    "reject",
    "edit",
    "merge",
    "mark",
    "visual",
    "mark_all",
    "invert_marks",
    "clear_marks",
    "batch",
    "next_target",
    "prev_target",
}
DUPLICATE_ACTIONS = {"retire_older", "retire_newer", "keep_both"}
LETTER_KEYS = PROPOSAL_ACTIONS | DUPLICATE_ACTIONS | {"whole_text"}


# The proposals' columns (gno_tui.render.proposals.proposal_cells), by rank for the width: the
# mark, the id and the text stay longest; the text keeps 60% of the list's width (or what its
# longest needs) before the other columns come in, and takes what room is left. The detail
# pane (and W) show every field.
PROPOSAL_COLUMNS = [
    Column(" ", 1, 0),
    Column("id", 8, 1, to_content=True),  # #12 … #12345
    Column("age", 4, 4),
    Column("caller", 16, 5, to_content=True),
    Column("scopes", 18, 3, to_content=True),
    Column("intent", 9, 6),
    Column("cand.", 5, 7),
    Column("provenance", 10, 8),
    Column("text", ROOM_LEFT, 2, min_width=16, share=0.6, to_content=True),
]


@dataclass
class QueueLoaded(Message):
    queue: ReviewQueue


class ReviewScreen(ListMarks[int], ProposalDecisions):
    HELP = """
## Review

**Proposals**: writes an agent asked for on a propose-only surface, held for a person.
The selected proposal is shown beside each candidate it may duplicate, as a word diff with
the similarity, tier and the threshold in force. One key decides; the cursor then moves on.
Under the queue, the threshold in force is checked against your own verdicts (adding says
"not the same" of every candidate, superseding or merging says "the same" of its target):
precision and recall tell whether it suits this store.

- `a` add · `C` add and confirm (you vouch for it) · `s` supersede the chosen candidate
  (`J`/`K` choose) · `m` merge with the chosen candidate: one text for both, edited
  first, that supersedes it · `x` reject, with a reason · `e` edit the text, then add
  (`ctrl+o` there opens it in $VISUAL / $EDITOR).
- `space` marks a proposal and moves on; `v` starts a range and `v` again marks every row
  between; `ctrl+a` marks every proposal, `~` inverts the marks, `ctrl+\\` clears them.
  `y` lists the marked ones: `a`/`x`/`e` decide the highlighted one and move on, `*` then
  a key decides them all; a summary ("2 add · 1 reject"), then `y` applies (one `z` undoes
  the batch) or `n` cancels.

**Duplicates**: near-duplicate pairs among the current facts of every scope, or of the scope
picked above the list (both facts in it). `scopes` shows each side's scopes, older ↔ newer
when they differ: such a pair is one fact stored twice, and retiring a side leaves the scopes
only it had without the fact (the detail says which). The best 200 pairs are listed; a big
store compares its newest 10,000 facts (3,000 without a model), as the line under them says.

- `r` retires the older fact as a duplicate of the newer, `R` the newer one.
- `b` keeps both; the pair is not offered again.
- `E` toggles the newer fact's use policy (evidence only / instruction), `%` sets its
  confidence, `S` marks it stale.

`W` shows the highlighted row in full (every field, uncut). A text cut in the list shows where
rows that start alike differ: "Alice…variant 17 of the file" (… is the part left out).

`@` shows the decision log: who decided what, when, and before/after. `[`/`]` switch tabs.
Reject only sets a state and retire keeps the file; the one thing that removes a fact is
`z` on an accept, which takes back the fact that accept wrote (the proposal is pending again).
"""

    STYLES = """
    ReviewScreen {
        #review-tabs { height: 1fr; }
        .review-body { height: 1fr; }
        #review-list { width: 1fr; }
        #review-detail { width: 1fr; border-left: solid $panel; padding: 0 1; }
        /* Wraps (never cut) where the list is narrow: the precision and recall numbers stay. */
        #review-summary { height: auto; padding: 0 1; color: $text-muted; }
    }
    """

    COMMANDS_LIST = (*REVIEW_COMMANDS, whole_text_command("review", "proposal or pair"))
    STALE_LABEL = None  # the notification names the action itself

    def __init__(self, workbench: Workbench) -> None:
        super().__init__(workbench)
        self.proposals: list[dict[str, Any]] = []
        self.predecessors: dict[str, dict[str, Any]] = {}
        self.heads: dict[str, dict[str, Any]] = {}  # a superseded target's uri -> its head
        self.marked: set[int] = set()  # proposal ids (marking: screens.list_marks)
        self.visual_anchor: int | None = None  # the row a `v` range starts from
        self.chosen = 0
        self.chosen_for: int | None = None  # the proposal `chosen` picks a target of
        self.restored: int | None = None  # an undo put it back: the cursor goes to it
        self.calibration: ThresholdCheck | None = None
        self.shown = False  # in front at least once (not only built ahead)
        self.pairs_due = False  # the Duplicates tab's pairs wait for the screen to be shown
        self.pairs_counted = False  # their count is on the tab (from the first pass on)
        self.queue_loading = False  # shown again after the store moved: the queue reloads
        # The tabs, once composed: check_action asks which is active for every binding each
        # time the footer lines up its keys, and a query of the screen for them each time was
        # a third of what building the screen and every switch to it cost.
        self.tabbed: TabbedContent | None = None

    def compose(self) -> ComposeResult:
        yield WorkbenchHeader()
        self.tabbed = TabbedContent(id="review-tabs", initial="proposals")
        with self.tabbed:
            with TabPane("Proposals", id="proposals"):
                with Horizontal(classes="review-body"):
                    with Vertical(id="review-list"):
                        yield FittedTable(PROPOSAL_COLUMNS, id="review-proposals")
                        yield Static("", id="review-summary")
                    with VerticalScroll(id="review-detail"):
                        yield Static("", id="review-detail-body")
            with TabPane("Duplicates", id="duplicates"):
                yield DuplicatesPane(self.service, id="dup-pane")
        yield WorkbenchFooter()

    def on_mount(self) -> None:
        self.query_one("#review-proposals", FactTable).focus()
        self.load_pairs_when_shown()

    def start_first_loads(self) -> None:
        self.load_proposals()

    def refresh_from_store(self) -> None:
        self.load_proposals()
        self.load_pairs_when_shown()

    def show_loading(self) -> None:
        # Shown again after the store moved: the count of before would be wrong until the
        # queue is in (seconds, at times): said as loading.
        self.queue_loading = True
        tabs = self.query_one(TabbedContent)
        tabs.get_tab("proposals").label = "Proposals …"
        self.remeasure_tab_underline(tabs.query_one(Tabs))
        self._summary()

    def load_pairs_when_shown(self) -> None:
        # The near-duplicate pairs take a pass over every current fact (0.5 s at 10k facts,
        # seconds at 100k): worked out when the screen is in front, not while the workbench
        # builds it ahead (a quit would wait for that pass); after their first count, again
        # only while the Duplicates tab is open. Behind the Proposals tab, where agents'
        # proposals keep the store moving, the tab's count reads "…" until it is opened.
        duplicates_open = self.tabbed is not None and self.tabbed.active == "duplicates"
        if self.shown and (not self.pairs_counted or duplicates_open):
            self.pairs_due = False
            self.query_one(DuplicatesPane).reload()
            return
        self.pairs_due = True
        if self.pairs_counted and self.tabbed is not None:
            self.tabbed.get_tab("duplicates").label = "Duplicates …"
            self.remeasure_tab_underline(self.tabbed.query_one(Tabs))

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        super().on_screen_resume(event)
        # Textual resumes a screen built ahead too: only the one in front counts as shown.
        self.shown = self.shown or self.app.screen is self
        if self.shown and self.pairs_due:
            self.load_pairs_when_shown()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        allowed = super().check_action(action, parameters)
        if not allowed:
            return allowed
        if action in LETTER_KEYS and isinstance(self.focused, Input | TextArea | Select):
            return False  # single letters never act while typing or choosing
        # Asked for the footer and the keys from the moment the screen exists, before its
        # widgets are composed (a key 3 pressed at once): no tabs yet, no tab's keys either.
        tab = self.tabbed.active if self.tabbed is not None and self.tabbed.is_attached else None
        if action in PROPOSAL_ACTIONS:
            return tab == "proposals"
        if action in DUPLICATE_ACTIONS:
            return tab == "duplicates"
        return True

    # -- proposals: loading and showing ----------------------------------------------------

    @work(thread=True, exclusive=True, exit_on_error=False, group="review-load")
    def load_proposals(self) -> None:
        self.deliver(QueueLoaded(self.service.curation.queue()))

    def on_queue_loaded(self, message: QueueLoaded) -> None:
        queue = message.queue
        self.proposals, self.predecessors = queue.proposals, queue.predecessors
        self.calibration, self.heads = queue.calibration, queue.heads
        self.queue_loading = False
        self.marked &= {p["id"] for p in self.proposals}
        now = self.service.now()
        table = self.query_one("#review-proposals", FactTable)
        table.refill(
            (proposal_cells(proposal, now, proposal["id"] in self.marked), str(proposal["id"]))
            for proposal in self.proposals
        )
        if self.restored is not None and str(self.restored) in table.rows:
            table.place_cursor(str(self.restored), table.cursor_row)
            self.restored = None
        self.query_one(TabbedContent).get_tab(
            "proposals"
        ).label = f"Proposals {len(self.proposals)}"
        self.remeasure_tab_underline(self.query_one(TabbedContent).query_one(Tabs))
        self._summary()
        self.show_proposal()

    def show_restored(self, proposal_id: int) -> None:
        """An undo put `proposal_id` back in the queue: reloaded, with the cursor on it (a load
        begun before the undo, without it, leaves the cursor where it is)."""
        self.restored = proposal_id
        self.refresh_from_store()

    def _summary(self) -> None:
        if self.queue_loading:
            self.query_one("#review-summary", Static).update("… pending: loading the queue")
            return
        marked = f" · {len(self.marked)} marked (y decides them)" if self.marked else ""
        marked += " · visual: v marks to here" if self.visual_anchor is not None else ""
        self.query_one("#review-summary", Static).update(
            f"{len(self.proposals)} pending{marked}\n{calibration_line(self.calibration)}"
        )

    def current(self) -> dict[str, Any] | None:
        return self.query_one("#review-proposals", FactTable).at_cursor(self.proposals)

    def mark_keys(self) -> list[int]:
        return [proposal["id"] for proposal in self.proposals]

    def marks_table(self) -> FactTable:
        return self.query_one("#review-proposals", FactTable)

    def targets(self, proposal: dict[str, Any]) -> list[dict[str, Any]]:
        """What `s` may supersede: the predecessor the agent named, then the candidates. One
        superseded since the proposal was made is offered as its chain's current head (with
        the stale fact named), since superseding the old one could only conflict."""
        first = self.predecessors.get(proposal.get("predecessor") or "")
        offered: list[dict[str, Any]] = []
        for target in ([first] if first else []) + list(proposal["candidates"]):
            head = self.heads.get(target["uri"])
            if head is not None:
                target = {**head, "similarity": target.get("similarity"),
                          "match": f"current head of {head['was']} (superseded)"}  # fmt: skip
            if all(target["uri"] != seen["uri"] for seen in offered):
                offered.append(target)
        return offered

    @on(DataTable.RowHighlighted, "#review-proposals")
    def proposal_highlighted(self) -> None:
        # A refresh highlights the same proposal again: its chosen target stays.
        proposal = self.current()
        if proposal is None or proposal["id"] != self.chosen_for:
            self.chosen = 0
            self.chosen_for = proposal["id"] if proposal is not None else None
        self.show_proposal()

    def show_proposal(self) -> None:
        body = self.query_one("#review-detail-body", Static)
        proposal = self.current()
        if proposal is None:
            body.update(
                "No proposal waits for a decision. Agents on a propose-only surface "
                "(gno-tui mcp without --enable-write) queue their writes here."
            )
            return
        body.update(proposal_detail(proposal, self.targets(proposal), self.chosen))

    # -- duplicates --------------------------------------------------------------------------

    def action_retire_older(self) -> None:
        self.query_one(DuplicatesPane).retire(newer=False, actor=self.actor)

    def action_retire_newer(self) -> None:
        self.query_one(DuplicatesPane).retire(newer=True, actor=self.actor)

    def fact_in_hand(self) -> str | None:
        """The newer fact of the duplicate pair (the fact keys act on nothing else here)."""
        pair = self.query_one(DuplicatesPane).current_pair()
        if self.query_one(TabbedContent).active != "duplicates" or pair is None:
            self.notify(
                "Use policy and confidence apply to a duplicate pair's newer fact "
                "(Duplicates tab).",
                severity="warning",
            )
            return None
        newer: str = pair.right.record_id
        return newer

    def action_keep_both(self) -> None:
        self.query_one(DuplicatesPane).keep_both(actor=self.actor)

    def on_pairs_counted(self, message: PairsCounted) -> None:
        self.pairs_counted = True
        self.query_one(TabbedContent).get_tab("duplicates").label = f"Duplicates {message.count}"
        self.remeasure_tab_underline(self.query_one(TabbedContent).query_one(Tabs))

    # -- shared ------------------------------------------------------------------------------

    def action_next_tab(self) -> None:
        self._switch_tab()

    def action_prev_tab(self) -> None:
        self._switch_tab()

    def action_whole_text(self) -> None:
        show_whole_row(self, list_in_focus(self, "#review-proposals"))

    def _switch_tab(self) -> None:
        tabs = self.query_one(TabbedContent)
        tabs.active = "duplicates" if tabs.active == "proposals" else "proposals"

    @on(TabbedContent.TabActivated, "#review-tabs")
    def tab_activated(self, event: TabbedContent.TabActivated) -> None:
        table = "#review-proposals" if event.pane.id == "proposals" else "#dup-table"
        self.query_one(table, FactTable).focus()
        self.refresh_bindings()
        if event.pane.id == "duplicates" and self.pairs_due:
            self.load_pairs_when_shown()  # the store moved while the tab was closed
