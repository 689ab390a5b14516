"""The Recall screen's commands: each a key binding and a command-palette entry."""

from __future__ import annotations

from gno_tui.workbench_commands import VERB, VIEW, WorkbenchCommand
from screens.commands.shared import shared

# The footer (rank): run, then what a person changes or asks of a recall most (budget, why-not,
# egress, format), then the receipt (verify, raw); the labels and the fact keys after undo.
# Escape leaves a box: the footer puts it first inside one, and with the layout keys outside.
RECALL_COMMANDS: tuple[WorkbenchCommand, ...] = (
    WorkbenchCommand(
        "recall.run",
        "enter",
        "run_recall",
        "Run",
        "Run the recall with the query, scopes and budget",
        rank=VERB,
    ),
    WorkbenchCommand(
        "recall.format",
        "t",
        "cycle_format",
        "Format",
        "Cycle the output format: gno / ob1",
        rank=VERB + 5,
    ),
    WorkbenchCommand(
        "recall.egress",
        "e",
        "cycle_egress",
        "Egress",
        "Cycle the egress ceiling: local_only / lan / remote",
        rank=VERB + 4,
    ),
    WorkbenchCommand(
        "recall.budget",
        "b",
        "edit_budget",
        "Budget",
        "Change the token budget (max tokens)",
        rank=VERB + 2,
    ),
    WorkbenchCommand(
        "recall.verify",
        "V",
        "verify_receipt",
        "Verify",
        "Verify the receipt: digest, stored, drift since issue",
        rank=VERB + 6,
    ),
    WorkbenchCommand(
        "recall.raw",
        "o",
        "show_raw",
        "Raw JSON",
        "The raw result, validated against its schema",
        rank=VERB + 7,
    ),
    WorkbenchCommand(
        "recall.why_not",
        "w",
        "why_not",
        "Why not?",
        "Matches this recall left out (as of its receipt): scope, egress, budget, status",
        rank=VERB + 3,
    ),
    WorkbenchCommand(
        "recall.relevant",
        "plus",
        "label_relevant",
        "Relevant",
        "Label the highlighted fact relevant to this recall (again: remove the label)",
        writes=True,
    ),
    WorkbenchCommand(
        "recall.irrelevant",
        "minus",
        "label_irrelevant",
        "Irrelevant",
        "Label the highlighted fact irrelevant to this recall (again: remove the label)",
        writes=True,
    ),
    WorkbenchCommand(
        "recall.missing",
        "M",
        "label_missing",
        "Missing",
        "Name a fact this recall should have returned (#docid or uri)",
        writes=True,
    ),
    shared("recall", "confirm", "Confirm the highlighted fact (user_confirmed)"),
    shared("recall", "evidence", "Toggle the highlighted fact's use policy"),
    shared("recall", "confidence", "Set the highlighted fact's confidence (0 to 1)"),
    shared("recall", "stale", "Mark the highlighted fact stale", show=False),
    WorkbenchCommand(
        "recall.edit", "slash", "edit_query", "Query", "Back to the query box", show=False
    ),
    WorkbenchCommand(
        "recall.results",
        "escape",
        "focus_results",
        "Results",
        "Leave the inputs for the results; then the number keys switch screens",
        rank=VIEW,
    ),
    shared("recall", "detail", "Hide or show the receipt pane (the results get its width)"),
)
