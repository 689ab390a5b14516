"""The Receipts screen's collection keys: the egress policy of the highlighted collection
(`p`: a tighter one at once, a looser one after `y`, bound to the revision seen) and the
effective policy of the marked ones (`P`).

Kept as a base class of ReceiptsScreen so the screen module stays about what receipts say;
every policy change goes through the service, which logs who made it."""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass

from textual import work
from textual.message import Message
from textual.widgets import Static

from engine.facade import POLICY_STRICTNESS, CollectionRecord, EgressLineage
from gno_tui.render.receipts import effective_text
from gno_tui.widgets.fact_table import FactTable
from screens.base import WorkbenchScreen
from screens.modal import ask
from screens.policy_picker import PolicyPicker
from screens.yes_no import YesNoPrompt


@dataclass
class EffectiveShown(Message):
    names: list[str]
    effective: EgressLineage


class CollectionPolicies(WorkbenchScreen):
    """A base of ReceiptsScreen, which lists the collections and keeps their marks."""

    collections: list[CollectionRecord]
    marked: set[str]  # collection names
    effective: EgressLineage | None

    @abstractmethod
    def action_reload(self) -> None:
        """Load the receipts and the collections again (ReceiptsScreen's)."""

    def selected_collection(self) -> CollectionRecord | None:
        row = self.query_one("#collections-table", FactTable).at_cursor(self.collections)
        if row is None:
            self.notify("No collection selected.", severity="warning")
        return row

    def action_choose_policy(self) -> None:
        """Pick the policy directly: a tighter one applies at once (never by way of a looser
        one, as a cycle would); a looser one asks `y` first, bound to the revision seen."""
        row = self.selected_collection()
        if row is None:
            return

        def chosen(new: str) -> None:
            if new == row.policy:
                self.notify(f"{row.name} stays {row.policy}.")
            elif POLICY_STRICTNESS[new] < POLICY_STRICTNESS[row.policy]:
                self.set_policy(row.name, new, row.policy_revision)
            else:
                self.confirm_relax(row, new)

        ask(self, PolicyPicker(row.name, row.policy), chosen)

    def confirm_relax(self, row: CollectionRecord, new: str) -> None:
        def answered(yes: bool | None) -> None:
            if yes:
                self.set_policy(row.name, new, row.policy_revision)
            else:
                self.notify(f"{row.name} stays {row.policy}.")

        self.app.push_screen(
            YesNoPrompt(
                f"Relax {row.name} from {row.policy} to {new} (revision {row.policy_revision})? "
                f"Its facts may then leave for {'the LAN' if new == 'lan' else 'remote services'}."
            ),
            answered,
        )

    @work(thread=True, exclusive=True, exit_on_error=False, group="receipts-policy")
    def set_policy(self, name: str, policy: str, revision: int) -> None:
        current = next((c for c in self.service.collections() if c.name == name), None)
        if current is None or current.policy_revision != revision:
            self.app.call_from_thread(
                self.notify,
                f"{name}'s policy changed meanwhile (now revision "
                f"{current.policy_revision if current else '?'}); look again.",
                severity="warning",
            )
        else:
            self.service.set_policy(name, policy, actor=self.actor)
            self.app.call_from_thread(self.notify, f"{name}: {policy} (revision {revision + 1})")
        self.app.call_from_thread(self.after_policy_change)

    def after_policy_change(self) -> None:
        self.action_reload()
        if self.marked:
            self.show_effective(sorted(self.marked))

    def action_effective(self) -> None:
        names = sorted(self.marked)
        if not names:
            row = self.selected_collection()
            if row is None:
                return
            names = [row.name]
        self.show_effective(names)

    @work(thread=True, exclusive=True, exit_on_error=False, group="receipts-effective")
    def show_effective(self, names: list[str]) -> None:
        self.deliver(EffectiveShown(names, self.service.facts.effective_policy(names)))

    def on_effective_shown(self, message: EffectiveShown) -> None:
        self.effective = message.effective
        body = effective_text(message.names, message.effective)
        self.query_one("#effective-body", Static).update(body)
