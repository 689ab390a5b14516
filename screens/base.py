"""What every workbench screen shares: its dependencies (given by the app when it builds the
screen), the command list, a refresh when the store changes, failed workers passed on to the
app, and the one path by which a screen curates a fact."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from textual import work
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Tab, Tabs
from textual.worker import Worker, get_current_worker

from engine.facade import Curation, CurationAction, FactRecord, MemoryService
from gno_tui.messages import StoreChanged, forward_failure
from gno_tui.workbench_commands import WorkbenchCommand
from screens.reason_prompt import ReasonPrompt


@dataclass
class Workbench:
    """What the app gives every screen: the engine's façade, who acts and in which session,
    and whether writes are refused. One object, shared: the app's `actor` and `session_id`
    write through to it."""

    service: MemoryService
    actor: str
    session: str
    read_only: bool = False


class WorkbenchScreen(Screen[None]):
    COMMANDS_LIST: ClassVar[tuple[WorkbenchCommand, ...]] = ()

    def __init__(self, workbench: Workbench) -> None:
        super().__init__()
        self.workbench = workbench

    @property
    def service(self) -> MemoryService:
        return self.workbench.service

    @property
    def actor(self) -> str:
        return self.workbench.actor

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Write commands are disabled (greyed out) in a read-only workbench."""
        if self.workbench.read_only:
            for command in self.COMMANDS_LIST:
                if command.writes and command.action.split("(")[0] == action:
                    return None
        return True

    def remeasure_tab_underline(self, tabs: Tabs) -> None:
        """Call after changing tab labels (counts). Tabs moves its underline when a label
        changes, but may measure the active tab before the new label is laid out, and the bar
        then keeps the old width: ask again once the layout has caught up."""
        active = tabs.active_tab
        if active is not None:
            self.call_after_refresh(active.post_message, Tab.Relabelled(active))

    def on_store_changed(self, message: StoreChanged) -> None:
        self.refresh_from_store()

    def refresh_from_store(self) -> None:
        """Reload what the screen shows; screens that show store data override this."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        forward_failure(self, event)

    def deliver(self, message: Message) -> None:
        """Post a loading worker's result, unless a newer worker of its group replaced it: a
        cancelled thread worker still runs to its end, and its result is stale (typing a
        filter starts one load per keystroke; only the last may paint)."""
        if not get_current_worker().is_cancelled:
            self.post_message(message)

    # -- curation: one path for every screen that shows facts -------------------------------

    @work(thread=True, exclusive=False, exit_on_error=False, group="curate")
    def curate(self, curation: Curation, label: str | None = None) -> None:
        """Write one curation decision through the façade, then say so (`label` names it in
        the notification; the action's own name by default). A refusal fails the worker: the
        app shows it with its error code."""
        self.service.curation.curate(curation)
        note = self.curated_note(label or curation.action.value, curation.ref)
        self.app.call_from_thread(self.notify, note)
        self.app.call_from_thread(self.curated)

    def curated_note(self, label: str, ref: str) -> str:
        return f"{ref}: {label} done"

    def curated(self) -> None:
        """After a curation was written (UI thread); a screen that lists facts reloads."""

    def toggle_instruction(self, row: FactRecord) -> None:
        """Flip the fact's use policy between evidence-only and usable as an instruction."""
        policy = row.workbench.get("usePolicy", {})
        flipped = not policy.get("canUseAsInstruction", False)
        self.curate(
            Curation(CurationAction.USE_POLICY, row.record_id, self.actor, instruction=flipped)
        )

    def ask_confidence(self, row: FactRecord) -> None:
        """Ask a confidence from 0 to 1 and set it (the engine refuses anything else)."""
        current = row.workbench.get("provenance", {}).get("confidence", 0.7)

        def apply(answer: str | None) -> None:
            if answer is None:
                return
            try:
                value: float | None = float(answer)
            except ValueError:
                value = None  # not a number: refused by the engine, with its hint
            self.curate(
                Curation(CurationAction.CONFIDENCE, row.record_id, self.actor, confidence=value)
            )

        self.app.push_screen(
            ReasonPrompt(f"Confidence of {row.docid} (0 to 1)", initial=str(current)), apply
        )
