"""Receipts & collections: the receipts recall issued (newest first) with a verifier and a
fence preview; the collections with their egress policy, its source and revision."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Input, Label, Static

from engine.facade import CollectionRecord, EgressLineage, Receipt, ReceiptCheck
from gno_tui.render.badges import egress_badge
from gno_tui.render.receipts import fence_verdict, issued_cell, receipt_state, receipt_text
from gno_tui.widgets.fact_table import FactTable
from gno_tui.widgets.fitted_table import Column, FittedTable
from gno_tui.widgets.footer import WorkbenchFooter
from gno_tui.widgets.header import WorkbenchHeader
from screens.base import Workbench
from screens.commands.receipts import RECEIPTS_COMMANDS
from screens.receipt_policies import CollectionPolicies
from screens.receipt_retention import ReceiptRetention
from screens.whole_row import list_in_focus, show_whole_row, whole_text_command

# The receipts' columns (width, rank): digest and state stay longest; who asked (caller and
# session) take the room left, as wide as their longest, and show where sessions that start
# alike differ; the detail pane and W show every field whole.
RECEIPT_COLUMNS = [
    Column("issued", 16, 2, to_content=True),  # as short as the day allows (issued_cell)
    Column("caller", 32, 4, min_width=8, to_content=True),
    Column("session", 40, 5, min_width=8, to_content=True),
    Column("ids", 3, 3),
    Column("digest", 8, 0),  # 7 characters and …, as short hashes go
    Column("state", 12, 1, to_content=True),
]

# The collections' columns: the mark, the name and the policy stay longest, the root goes first.
COLLECTION_COLUMNS = [
    Column(" ", 1, 0),
    Column("collection", 16, 1),
    Column("policy", 12, 2),
    Column("source", 15, 3),
    Column("revision", 8, 4),
    Column("root", 30, 5),
]
RECEIPTS_TITLE = "Receipts, newest first"  # "· loading…" added while a reload is due


@dataclass
class ReceiptsLoaded(Message):
    receipts: list[Receipt]
    checks: dict[str, ReceiptCheck]
    collections: list[CollectionRecord]


@dataclass
class ReceiptChecked(Message):
    digest: str
    check: ReceiptCheck


@dataclass
class FenceJudged(Message):
    digest: str  # the receipt judged against
    text: str  # the text judged
    fenced: bool


class ReceiptsScreen(ReceiptRetention, CollectionPolicies):
    HELP = """
## Receipts & collections

**Receipts** are content-free records of what each recall returned: who, when, which
memory ids, and a digest over them. They are newest first; *state* says whether each still
verifies and whether its facts have changed since (superseded, retired, expired).

- `V` verifies the highlighted receipt: digest, stored, and which ids have drifted.
- `f` opens the fence preview: paste a text and see whether remembering it with this
  receipt would be fenced as a replay (MEMORY_FENCED_REPLAY).
- `space` (in the receipts) marks receipts; `x` exports the marked ones, else the
  highlighted one, as JSON lines to a new file: it asks where (a new file under
  `<home>/exports/` is filled in) and says the full path it wrote; `d` deletes them after `y`;
  `D` purges every receipt issued before a time you give, after you type `purge N`.
  A deleted receipt no longer fences and can no longer be presented; the decision log
  keeps the digests and who deleted them.

**Collections** carry an egress policy (local_only < lan < remote) with its source and
revision.

- `p` chooses the highlighted collection's policy from the three (`enter` picks).
  Tightening applies at once; relaxing asks `y` first, bound to the revision you saw.
- `space` (in the collections) marks collections; `P` shows the effective policy (the
  lineage a recall over the marked collections would carry).
- `tab` moves between the receipts and the collections.
- `W` shows the highlighted receipt or collection in full (every field, uncut). *issued* is
  the time for today's receipts, else the day; caller and session take the room the list
  has (a cut one ends in …).
"""

    STYLES = """
    ReceiptsScreen {
        #receipts-top { height: 1fr; }
        #receipts-list { width: 3fr; }
        #receipts-detail { width: 2fr; border-left: solid $panel; padding: 0 1; }
        #fence-row { height: 3; }
        #fence-text { width: 3fr; border-title-color: $primary; }
        #fence-verdict { width: 2fr; padding: 1 1 0 1; }
        #collections-row { height: 9; }
        #collections-table { width: 3fr; }
        #collections-effective { width: 2fr; border-left: solid $panel; padding: 0 1; }
    }
    """

    DETAIL_PANE = "#receipts-detail"
    COMMANDS_LIST = (*RECEIPTS_COMMANDS, whole_text_command("receipts", "receipt or collection"))

    def __init__(self, workbench: Workbench) -> None:
        super().__init__(workbench)
        self.receipts: list[Receipt] = []
        self.checks: dict[str, ReceiptCheck] = {}
        self.verified: set[str] = set()
        self.collections: list[CollectionRecord] = []
        self.marked: set[str] = set()  # collection names
        self.marked_receipts: set[str] = set()  # digests, for x and d
        self.effective: EgressLineage | None = None

    def compose(self) -> ComposeResult:
        yield WorkbenchHeader()
        yield Label(RECEIPTS_TITLE, classes="pane-title", id="receipts-title")
        with Horizontal(id="receipts-top"):
            with Vertical(id="receipts-list"):
                yield FittedTable(RECEIPT_COLUMNS, id="receipts-table")
            with VerticalScroll(id="receipts-detail"):
                yield Static("No receipt yet: recalls issue them.", id="receipts-detail-body")
        with Horizontal(id="fence-row"):
            yield Input(
                placeholder="fence preview (f): paste a text to check against the "
                "highlighted receipt",
                id="fence-text",
            )
            yield Static("", id="fence-verdict")
        yield Label(
            "Collections (space marks · p chooses the policy · P effective policy)",
            classes="pane-title",
        )
        with Horizontal(id="collections-row"):
            yield FittedTable(COLLECTION_COLUMNS, id="collections-table")
            with VerticalScroll(id="collections-effective"):
                yield Static("Mark collections with space, then P.", id="effective-body")
        yield WorkbenchFooter()

    def on_mount(self) -> None:
        self.query_one("#fence-text", Input).border_title = "fence preview"
        self.query_one("#receipts-table", FactTable).focus()

    def start_first_loads(self) -> None:
        self.load()

    def refresh_from_store(self) -> None:
        self.action_reload()

    def store_moved(self) -> bool:
        # A recall issues a receipt without moving the store's generation: the newest receipt
        # is asked too (one row), so receipts issued meanwhile are never missing when shown.
        moved = super().store_moved()
        shown = {receipt["digest"] for receipt in self.receipts}
        newest = self.service.receipts.recent(limit=1)
        return moved or any(receipt["digest"] not in shown for receipt in newest)

    def show_loading(self) -> None:
        self.query_one("#receipts-title", Label).update(f"{RECEIPTS_TITLE} · loading…")

    def action_reload(self) -> None:
        self.load()

    @work(thread=True, exclusive=True, exit_on_error=False, group="receipts-load")
    def load(self) -> None:
        service = self.service
        receipts = service.receipts.recent()
        checks = {r["digest"]: service.receipts.verify(r) for r in receipts}
        self.deliver(ReceiptsLoaded(receipts, checks, service.collections()))

    def on_receipts_loaded(self, message: ReceiptsLoaded) -> None:
        self.receipts, self.checks = message.receipts, message.checks
        self.query_one("#receipts-title", Label).update(RECEIPTS_TITLE)
        self.marked_receipts &= {receipt["digest"] for receipt in self.receipts}
        self.query_one("#receipts-table", FactTable).refill(
            (self._receipt_cells(receipt), receipt["digest"]) for receipt in self.receipts
        )
        self.collections = message.collections
        self.render_collections()
        self.show_detail()

    def render_collections(self) -> None:
        self.query_one("#collections-table", FactTable).refill(
            (self._collection_cells(row), row.name) for row in self.collections
        )

    def _receipt_cells(self, receipt: Receipt) -> tuple[str | Text, ...]:
        mark = "● " if receipt["digest"] in self.marked_receipts else ""
        return (
            mark + issued_cell(receipt["issuedAt"], self.service.now()),
            receipt["caller"],
            receipt["session"],
            str(len(receipt["memoryIds"])),
            receipt["digest"],  # whole: the column shows its start, W all of it
            receipt_state(self.checks.get(receipt["digest"])),
        )

    def _collection_cells(self, row: CollectionRecord) -> tuple[str | Text, ...]:
        return (
            "●" if row.name in self.marked else " ",
            row.name,
            egress_badge(row.policy),
            row.policy_source,
            str(row.policy_revision),
            self._root(row.root),
        )

    def _root(self, root: str) -> str:
        """A collection's root, relative to the store's home when it lives there; a server
        collection has none (its root is empty)."""
        if not root:
            return "(in the database)"
        path, home = Path(root), self.service.home
        return str(path.relative_to(home)) if path.is_relative_to(home) else root

    # -- receipts -----------------------------------------------------------------------

    @on(DataTable.RowHighlighted, "#receipts-table")
    def receipt_highlighted(self) -> None:
        self.show_detail()
        self.update_fence()

    def show_detail(self) -> None:
        body = self.query_one("#receipts-detail-body", Static)
        receipt = self.selected_receipt()
        if receipt is None:
            body.update("No receipt yet: every recall issues one (press 4 to recall).")
            return
        check = self.checks.get(receipt["digest"])
        verified = check if receipt["digest"] in self.verified else None
        body.update(receipt_text(receipt, verified, keys="V verifies"))

    def action_verify(self) -> None:
        receipt = self.selected_receipt()
        if receipt is None:
            self.notify("No receipt selected.", severity="warning")
            return
        self.verify_one(receipt)

    @work(thread=True, exclusive=True, exit_on_error=False, group="receipts-verify")
    def verify_one(self, receipt: dict[str, Any]) -> None:
        check = self.service.receipts.verify(receipt)
        self.deliver(ReceiptChecked(receipt["digest"], check))

    def on_receipt_checked(self, message: ReceiptChecked) -> None:
        self.checks[message.digest] = message.check
        self.verified.add(message.digest)
        table = self.query_one("#receipts-table", FactTable)
        if message.digest in table.rows:
            table.update_cell(message.digest, "state", receipt_state(message.check))
        self.show_detail()

    def action_fence(self) -> None:
        self.query_one("#fence-text", Input).focus()

    def action_whole_text(self) -> None:
        show_whole_row(self, list_in_focus(self, "#receipts-table"))

    def action_focus_receipts(self) -> None:
        self.query_one("#receipts-table", FactTable).focus()

    @on(Input.Changed, "#fence-text")
    def update_fence(self) -> None:
        text = self.query_one("#fence-text", Input).value
        receipt = self.selected_receipt()
        if not text.strip() or receipt is None:
            self.query_one("#fence-verdict", Static).update("")
        else:
            self.judge_fence(receipt, text)

    @work(thread=True, exclusive=True, exit_on_error=False, group="receipts-fence")
    def judge_fence(self, receipt: dict[str, Any], text: str) -> None:
        """The fence's own judgement (fence forms of the receipt's spans, not only their
        hashes): what remember would answer for this text with this receipt."""
        fenced = self.service.receipts.would_fence(receipt, text)
        self.deliver(FenceJudged(receipt["digest"], text, fenced))

    def on_fence_judged(self, message: FenceJudged) -> None:
        receipt = self.selected_receipt()
        text = self.query_one("#fence-text", Input).value
        if receipt is None or receipt["digest"] != message.digest or text != message.text:
            return  # the box or the highlighted receipt changed meanwhile
        verdict = fence_verdict(message.digest, message.fenced)
        self.query_one("#fence-verdict", Static).update(verdict)

    @on(Input.Submitted, "#fence-text")
    def fence_submitted(self) -> None:
        self.action_focus_receipts()

    # -- collections --------------------------------------------------------------------

    def action_mark(self) -> None:
        receipts = self.query_one("#receipts-table", FactTable)
        if receipts.has_focus:
            receipt = self.selected_receipt()
            if receipt is not None:
                self.marked_receipts.symmetric_difference_update({receipt["digest"]})
                marked = self._receipt_cells(receipt)[0]  # the issued time, with the mark
                receipts.update_cell(receipt["digest"], "issued", marked)
                receipts.action_cursor_down()
            return
        row = self.selected_collection()
        if row is None:
            return
        self.marked.symmetric_difference_update({row.name})
        self.render_collections()
        table = self.query_one("#collections-table", FactTable)
        table.action_cursor_down()
