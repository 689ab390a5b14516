"""The Recall screen's labels: `+` relevant, `-` irrelevant (the highlighted returned fact),
`M` missing (a fact the recall should have returned, by #docid or uri).

The screen's base class (with the receipt pane the labels are shown in), so the screen
module stays about running and showing a recall.
Labels are stored against the receipt (service.curation.label); pressing a label's key again
takes it away.
"""

from __future__ import annotations

from dataclasses import dataclass

from rich.text import Text
from textual import work
from textual.message import Message
from textual.widgets import Static

from engine.facade import LabelSummary, RecalledFact, RecallResult, ReceiptCheck
from gno_tui.render.recall import label_cell, labels_text
from gno_tui.render.receipts import receipt_text
from gno_tui.widgets.fact_table import FactTable
from screens.base import WorkbenchScreen
from screens.modal import ask
from screens.reason_prompt import ReasonPrompt


@dataclass
class LabelsLoaded(Message):
    digest: str
    labels: dict[str, str]  # record id -> label, this person's, for this recall
    summary: LabelSummary  # this person's labels across every recall


class RecallLabelling(WorkbenchScreen):
    """The base of RecallScreen: the highlighted fact, the receipt pane (which shows the
    labels), and the label keys. The screen runs the recall and sets `result`."""

    labels: dict[str, str]
    result: RecallResult | None
    summary: LabelSummary | None
    check: ReceiptCheck | None

    def _selected_fact(self) -> RecalledFact | None:
        facts: list[RecalledFact] = self.result["facts"] if self.result else []
        fact = self.query_one("#recall-table", FactTable).at_cursor(facts)
        if fact is None:
            self.notify("No fact highlighted.", severity="warning")
        return fact

    def _receipt_text(self) -> Text:
        if self.result is None:
            return Text("Run a recall to see its receipt.")
        out = receipt_text(self.result["receipt"], self.check,
                           keys="V verifies, o shows the raw JSON")  # fmt: skip
        if "hint" in self.result:
            out.append(f"\n{self.result['hint']}\n", style="italic")
        out.append_text(labels_text(self.labels, self.summary))
        return out

    def show_labels(self, message: LabelsLoaded) -> None:
        table = self.query_one("#recall-table", FactTable)
        column = "label"  # the column's key (the table may leave the column out)
        for fact in self.result["facts"] if self.result else []:
            if fact["recordId"] in table.rows:
                cell = label_cell(self.labels.get(fact["recordId"], ""))
                table.update_cell(fact["recordId"], column, cell)
        self.summary = message.summary
        self.query_one("#recall-receipt", Static).update(self._receipt_text())

    def on_labels_loaded(self, message: LabelsLoaded) -> None:
        if self.result is not None and self.result["receipt"]["digest"] == message.digest:
            self.labels = message.labels
            self.show_labels(message)

    def action_label_relevant(self) -> None:
        self._label_highlighted("relevant")

    def action_label_irrelevant(self) -> None:
        self._label_highlighted("irrelevant")

    def _label_highlighted(self, label: str) -> None:
        if self.result is None or (fact := self._selected_fact()) is None:
            return
        # The same key again takes the label away.
        wanted = "none" if self.labels.get(fact["recordId"]) == label else label
        self.set_label(self.result["receipt"]["digest"], fact["recordId"], wanted)

    def action_label_missing(self) -> None:
        if self.result is None:
            self.notify("Run a recall first.", severity="warning")
            return
        digest = self.result["receipt"]["digest"]

        ask(
            self,
            ReasonPrompt("Which fact should this recall have returned? (#docid or gno:// uri)"),
            lambda ref: self.set_label(digest, ref, "missing"),  # stripped, never blank
        )

    @work(thread=True, exclusive=False, exit_on_error=False, group="recall-labels")
    def set_label(self, digest: str, ref: str, label: str) -> None:
        self.service.curation.label(digest=digest, ref=ref, label=label, actor=self.actor)
        self.load_labels(digest)

    @work(thread=True, exclusive=True, exit_on_error=False, group="recall-labels-load")
    def load_labels(self, digest: str) -> None:
        curation = self.service.curation
        labels = curation.labels_of(digest=digest, actor=self.actor)
        self.deliver(LabelsLoaded(digest, labels, curation.label_summary(actor=self.actor)))
