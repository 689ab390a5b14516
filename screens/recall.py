"""Recall: run a recall under a budget, see the ranked facts, the budget, the lineage and
the receipt; verify the receipt and look at the raw JSON."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual import on, work
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widgets import DataTable, Input, Label, ProgressBar, Static

from engine.facade import (
    ALIGNMENT_WEIGHT,
    MAX_FACTS_LIMIT,
    MAX_TOKENS_LIMIT,
    POLICIES,
    SEMANTIC_WEIGHT,
    LabelSummary,
    NoMatch,
    Ob1RecallResponse,
    RecallRequest,
    RecallResult,
    ReceiptCheck,
    ScoreParts,
    WhyNot,
    schema_errors,
)
from gno_tui.messages import OpenChain
from gno_tui.render.recall import (
    COLUMN_FIT,
    COLUMNS,
    FACT_SHARE,
    cut_line,
    fact_cells,
    schema_verdict,
    status_text,
    use_policy,
)
from gno_tui.render.why_not import why_not_text
from gno_tui.widgets.budget_input import BudgetInput
from gno_tui.widgets.fact_table import FactTable
from gno_tui.widgets.fitted_table import Column, FittedTable
from gno_tui.widgets.footer import WorkbenchFooter
from gno_tui.widgets.header import WorkbenchHeader
from screens.base import Workbench
from screens.commands.recall import RECALL_COMMANDS
from screens.json_modal import JsonModal
from screens.recall_labelling import RecallLabelling
from screens.whole_row import list_in_focus, show_whole_row, whole_text_command

FORMATS = ("gno", "ob1")
SCHEMA_LABELS = {
    "recall": "memory-recall@1.0",
    "ob1_recall": "openbrain.openclaw.recall_response.v1",
}


@dataclass
class RecallDone(Message):
    result: RecallResult
    document: RecallResult | Ob1RecallResponse  # what `o` shows: the gno result or its OB1 shape
    schema: str  # recall | ob1_recall
    errors: list[str]
    uses: dict[str, str]  # recordId -> the fact's use policy when it was recalled
    parts: dict[str, ScoreParts]  # recordId -> what its score is made of
    no_match: NoMatch | None = None  # why nothing was returned (None: facts were)


@dataclass
class WhyNotReady(Message):
    digest: str
    report: WhyNot


@dataclass
class ReceiptVerified(Message):
    digest: str
    check: ReceiptCheck


@dataclass
class ScopesKnown(Message):
    scopes: list[str]


class RecallScreen(RecallLabelling):
    HELP = f"""
## Recall

Recall the facts an agent would get for a query, under a budget.

- Fill the query, scopes (comma-separated), max facts and max tokens; `enter` runs it.
  Max facts (1 to {MAX_FACTS_LIMIT}) and max tokens (1 to {MAX_TOKENS_LIMIT}) are whole
  numbers: anything else is refused in the field (red, with the range under it) and no
  recall runs.
  `/` goes back to the query box, `b` to the budget, `escape` to the results.
- The table lists the facts in rank order with their score, what the score is made of, the
  spanHash, egress badge and use policy (instruction or evidence; `conf?` = still needs a
  person's confirmation); the line at the bottom is the budget cut (matches that did not fit).
  `W` shows the highlighted fact's row in full.
- Score parts: `lex` is BM25 over the query's ceiling (1 = every query word, at saturation),
  `cos` the sentence cosine, `align` the word alignment (each query word to the fact's closest
  word); hybrid score = lex + {SEMANTIC_WEIGHT:g} x cos + {ALIGNMENT_WEIGHT:g} x align.
  In lexical mode the score is BM25 and the semantic parts show `—`.
- `t` cycles the output format (gno / ob1); the retrieval mode (hybrid or lexical, with the
  reason the model is unavailable) is shown above the results. `e` cycles the egress ceiling
  for the next recall (`enter`); neither key recalls again (a recall issues a receipt).
- `w` shows why-not: the matches left out, by scope, egress ceiling, budget or status, as
  the store was when the recall ran (its receipt's time): its budget count is the recall's
  "omitted" (if the store changed so that the cut facts cannot be told, it says so).
- `V` verifies the receipt (digest, stored, drift since issue); `o` shows the raw JSON,
  validated against its schema.
- `c` confirms the highlighted fact, `S` marks it stale; `enter` on a fact opens its chain.
"""

    STYLES = """
    RecallScreen {
        #recall-form { height: 3; }
        #recall-form Input { width: 1fr; border-title-color: $primary; }
        #recall-query { width: 3fr; }
        #recall-scopes { width: 2fr; }
        #recall-status { height: auto; padding: 0 1; }
        #recall-budget-row { height: 1; padding: 0 1; }
        #recall-budget { width: auto; margin-right: 2; }
        #recall-budget-label { width: 1fr; }
        #recall-body { height: 1fr; }
        #recall-results { width: 2fr; }
        #recall-why { display: none; margin-top: 1; }
        #recall-why.-visible { display: block; }
        #recall-receipt-pane { width: 1fr; border-left: solid $panel; padding: 0 1; }
    }
    """

    DETAIL_PANE = "#recall-receipt-pane"
    COMMANDS_LIST = (*RECALL_COMMANDS, whole_text_command("recall", "fact"))

    def __init__(self, workbench: Workbench) -> None:
        super().__init__(workbench)
        self.format = "gno"
        self.egress = "local_only"
        self.result: RecallResult | None = None
        self.document: RecallResult | Ob1RecallResponse | None = None
        self.schema = "recall"
        self.errors: list[str] = []
        self.check: ReceiptCheck | None = None
        self.last_request: RecallRequest | None = None
        self.last_done: RecallDone | None = None
        self.shown_query: str | None = None  # the query of the results on screen
        self.why: WhyNot | None = None
        self.why_digest: str | None = None  # the receipt of the recall `why` explains
        self.labels: dict[str, str] = {}  # record id -> this person's label, for this recall
        self.summary: LabelSummary | None = None  # this person's labels across recalls

    def compose(self) -> ComposeResult:
        yield WorkbenchHeader()
        with Horizontal(id="recall-form"):
            yield Input(placeholder="query — what to recall (enter runs)", id="recall-query")
            yield Input(placeholder="scopes, comma-separated", id="recall-scopes")
            yield BudgetInput("8", MAX_FACTS_LIMIT, placeholder="max facts", id="recall-max-facts")
            yield BudgetInput(
                "512", MAX_TOKENS_LIMIT, placeholder="max tokens", id="recall-max-tokens"
            )
        yield Static(status_text(self.result, self.format, self.egress), id="recall-status")
        with Horizontal(id="recall-budget-row"):
            yield ProgressBar(total=512, show_eta=False, show_percentage=False, id="recall-budget")
            yield Label("budget: no recall yet", id="recall-budget-label")
        with Horizontal(id="recall-body"):
            with Vertical(id="recall-results"):
                columns = [
                    Column(t, *COLUMN_FIT[t], share=FACT_SHARE if t == "fact" else 0.0)
                    for t in COLUMNS
                ]
                yield FittedTable(columns, id="recall-table")
            with VerticalScroll(id="recall-receipt-pane"):
                yield Static("Run a recall to see its receipt.", id="recall-receipt")
                yield Static("", id="recall-why")
        yield WorkbenchFooter()

    def on_mount(self) -> None:
        for name, title in (
            ("query", "query"),
            ("scopes", "scopes"),
            ("max-facts", "max facts"),
            ("max-tokens", "max tokens"),
        ):
            self.query_one(f"#recall-{name}", Input).border_title = title
        self.query_one("#recall-query", Input).focus()

    def start_first_loads(self) -> None:
        self.load_scopes()

    @work(thread=True, exclusive=True, exit_on_error=False, group="recall-scopes")
    def load_scopes(self) -> None:
        self.deliver(ScopesKnown(self.service.facts.known_scopes()[:8]))

    def on_scopes_known(self, message: ScopesKnown) -> None:
        box = self.query_one("#recall-scopes", Input)
        if not box.value:
            box.value = ", ".join(message.scopes)

    # -- running ------------------------------------------------------------------------

    def request(self) -> RecallRequest:
        def value(name: str) -> str:
            return self.query_one(f"#recall-{name}", Input).value.strip()

        scopes = [s.strip() for s in value("scopes").split(",") if s.strip()]
        return RecallRequest(
            query=value("query"),
            scopes=scopes,
            caller=self.actor,
            session=self.workbench.session,
            max_facts=value("max-facts"),
            max_tokens=value("max-tokens"),
            egress=self.egress,
        )

    @on(Input.Submitted)
    def input_submitted(self, event: Input.Submitted) -> None:
        if event.input.id and event.input.id.startswith("recall-"):
            self.action_run_recall()

    def action_run_recall(self) -> None:
        for budget in ("#recall-max-facts", "#recall-max-tokens"):
            if self.query_one(budget, BudgetInput).accepted() is None:
                return  # refused in the field, which says what it takes: no recall runs
        self.last_request = self.request()
        self.run_recall(self.last_request, self.format)

    @work(thread=True, exclusive=True, exit_on_error=False, group="recall-run")
    def run_recall(self, request: RecallRequest, output: str) -> None:
        explained = self.service.recall_explained(request)
        result, parts = explained.result, explained.parts
        uses = {
            fact["recordId"]: use_policy(self.service.facts.get(fact["recordId"]).workbench)
            for fact in result["facts"]
        }
        document: RecallResult | Ob1RecallResponse
        document, schema = result, "recall"
        if output == "ob1":
            document, schema = self.service.recall_as_ob1(result), "ob1_recall"
        errors = schema_errors(schema, document)
        no_match = self.service.facts.no_match(request, result)
        self.deliver(RecallDone(result, document, schema, errors, uses, parts, no_match))
        # Why-not now, while the recall's ranking can surely be found again (a fact it ranked
        # may be retired later); posted even if `t` cancelled this worker: kept for `w`.
        why = self.service.facts.why_not(request, result)
        self.post_message(WhyNotReady(result["receipt"]["digest"], why))

    def on_recall_done(self, message: RecallDone) -> None:
        self.last_done = message  # what t shows again in the other format
        query = self.last_request.query if self.last_request is not None else None
        rerun, self.shown_query = query == self.shown_query, query
        self.result, self.document = message.result, message.document
        self.schema, self.errors, self.check = message.schema, message.errors, None
        result = message.result
        table = self.query_one("#recall-table", FactTable)
        budget = result["budget"]
        rows: list[tuple[list[Any], str | None]] = [
            (
                fact_cells(
                    rank,
                    fact,
                    message.uses.get(fact["recordId"], "?"),
                    message.parts.get(fact["recordId"]),
                    "",
                ),
                fact["recordId"],
            )
            for rank, fact in enumerate(result["facts"], start=1)
        ]
        if budget["omitted"]:
            rows.append(([""] * (len(COLUMNS) - 1) + [cut_line(budget["omitted"])], "budget-cut"))
        # The same query run again (a mode, the egress) keeps the cursor on the same fact; a
        # new query starts at its best match.
        table.refill(rows)
        if not rerun and table.row_count:
            table.move_cursor(row=0)
        bar = self.query_one("#recall-budget", ProgressBar)
        bar.update(total=budget["maxTokens"], progress=budget["usedTokens"])
        self.query_one("#recall-budget-label", Label).update(
            f"budget: {budget['usedTokens']}/{budget['maxTokens']} tokens · "
            f"{len(result['facts'])}/{budget['maxFacts']} facts · {budget['omitted']} omitted"
        )
        self.query_one("#recall-status", Static).update(
            status_text(self.result, self.format, self.egress)
        )
        self.query_one("#recall-receipt", Static).update(self._receipt_text())
        if self.query_one("#recall-why").has_class("-visible"):
            self._show_why()
        self.labels = {}
        self.load_labels(result["receipt"]["digest"])
        if result["facts"]:
            table.focus()
        else:
            why = message.no_match
            self.notify(why.message if why else result.get("hint", "No fact matched."),
                        title="No fact returned", severity="warning", timeout=12)  # fmt: skip

    # -- actions ------------------------------------------------------------------------

    # t and e never recall again: a recall issues a receipt, and a person flipping through
    # the formats would leave a receipt per press. `enter` recalls.

    def action_whole_text(self) -> None:
        show_whole_row(self, list_in_focus(self, "#recall-table"))

    def action_cycle_format(self) -> None:
        self.format = FORMATS[(FORMATS.index(self.format) + 1) % len(FORMATS)]
        self._show_status()
        if self.last_done is not None:
            self.reshape(self.last_done, self.format)

    @work(thread=True, exclusive=True, exit_on_error=False, group="recall-run")
    def reshape(self, done: RecallDone, output: str) -> None:
        """The result on screen in the other output format (no second recall, no receipt)."""
        document: RecallResult | Ob1RecallResponse
        document, schema = done.result, "recall"
        if output == "ob1":
            document, schema = self.service.recall_as_ob1(done.result), "ob1_recall"
        errors = schema_errors(schema, document)
        self.deliver(RecallDone(done.result, document, schema, errors, done.uses, done.parts))

    def action_cycle_egress(self) -> None:
        self.egress = POLICIES[(POLICIES.index(self.egress) + 1) % len(POLICIES)]
        self._show_status()
        if self.result is not None:
            self.notify(f"Egress ceiling {self.egress}: enter recalls under it.")

    def _show_status(self) -> None:
        self.query_one("#recall-status", Static).update(
            status_text(self.result, self.format, self.egress)
        )

    def action_verify_receipt(self) -> None:
        if self.result is None:
            self.notify("Run a recall first (enter in the query box).", severity="warning")
            return
        self.verify(dict(self.result["receipt"]))

    @work(thread=True, exclusive=True, exit_on_error=False, group="recall-verify")
    def verify(self, receipt: dict[str, Any]) -> None:
        check = self.service.receipts.verify(receipt)
        self.deliver(ReceiptVerified(receipt["digest"], check))

    def on_receipt_verified(self, message: ReceiptVerified) -> None:
        if self.result is None or self.result["receipt"]["digest"] != message.digest:
            return
        self.check = message.check
        self.query_one("#recall-receipt", Static).update(self._receipt_text())
        ok = message.check.digest_ok and message.check.stored
        self.notify(
            ("receipt verified" if ok else "receipt does NOT verify")
            + (f"; {len(message.check.drifted)} fact(s) drifted" if message.check.drifted else ""),
            severity="information" if ok else "error",
        )

    def action_why_not(self) -> None:
        box = self.query_one("#recall-why", Static)
        if box.has_class("-visible"):
            box.remove_class("-visible")
        elif self.result is None:
            self.notify("Run a recall first (enter in the query box).", severity="warning")
        else:
            box.add_class("-visible")
            if not self._show_why() and self.last_request is not None:
                self.compute_why_not(self.last_request, self.result)

    def _show_why(self) -> bool:
        """The why-not of the recall on screen, if it is known yet (else "Looking…")."""
        known = self.result is not None and self.why_digest == self.result["receipt"]["digest"]
        looking = "Looking for what was left out…"
        self.query_one("#recall-why", Static).update(
            why_not_text(self.why) if known and self.why else looking
        )
        return known

    @work(thread=True, exclusive=True, exit_on_error=False, group="recall-why")
    def compute_why_not(self, request: RecallRequest, result: RecallResult) -> None:
        report = self.service.facts.why_not(request, result)
        self.deliver(WhyNotReady(result["receipt"]["digest"], report))

    def on_why_not_ready(self, message: WhyNotReady) -> None:
        if self.result is None or self.result["receipt"]["digest"] != message.digest:
            return
        if self.why_digest == message.digest and self.why and not self.why.unexplained:
            return  # an exact report is never replaced by a later, inexact one
        self.why, self.why_digest = message.report, message.digest
        if self.query_one("#recall-why").has_class("-visible"):
            self._show_why()

    def action_show_raw(self) -> None:
        if self.document is None:
            self.notify("Run a recall first (enter in the query box).", severity="warning")
            return
        verdict = schema_verdict(self.errors, SCHEMA_LABELS[self.schema])
        self.app.push_screen(JsonModal(f"Raw {self.format} recall result", self.document, verdict))

    def fact_in_hand(self) -> str | None:
        return fact["recordId"] if (fact := self._selected_fact()) is not None else None

    @on(DataTable.RowSelected, "#recall-table")
    def open_chain(self, event: DataTable.RowSelected) -> None:
        record_id = event.row_key.value
        if record_id and record_id != "budget-cut":
            self.post_message(OpenChain(record_id))

    def action_edit_query(self) -> None:
        self.query_one("#recall-query", Input).focus()

    def action_edit_budget(self) -> None:
        self.query_one("#recall-max-tokens", Input).focus()

    def action_focus_results(self) -> None:
        self.query_one("#recall-table", FactTable).focus()
