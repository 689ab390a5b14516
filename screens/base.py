"""What every workbench screen shares: the store, the acting person, the command list, and a
refresh when the store changes."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

from textual.screen import Screen
from textual.widgets import Tab, Tabs
from textual.worker import Worker, WorkerState

from gno_tui.messages import StoreChanged
from gno_tui.workbench_commands import WorkbenchCommand

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine


class WorkbenchScreen(Screen[None]):
    COMMANDS_LIST: ClassVar[tuple[WorkbenchCommand, ...]] = ()

    @property
    def store(self) -> MemoryEngine:
        return self.app.store  # type: ignore[attr-defined,no-any-return]

    @property
    def actor(self) -> str:
        return self.app.actor  # type: ignore[attr-defined,no-any-return]

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Write commands are disabled (greyed out) in a read-only workbench."""
        if getattr(self.app, "read_only", False):
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
        """A failed worker of this screen becomes a notification with its error code (state
        changes go to the node that started the worker; they do not bubble to the app)."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify_failure(event.worker.error)

    # -- curation shared by the screens that show facts (Library, Recall) -------------------

    def toggle_instruction(
        self, record_id: str, workbench: dict[str, Any], curate: Callable[..., Any]
    ) -> None:
        """Flip the fact's use policy between evidence-only and usable as an instruction."""
        policy = workbench.get("usePolicy", {})
        flipped = not policy.get("canUseAsInstruction", False)
        curate(
            "use-policy",
            record_id,
            changes={"usePolicy": {"canUseAsInstruction": flipped, "canUseAsEvidence": True}},
        )

    def ask_confidence(
        self, record_id: str, docid: str, workbench: dict[str, Any], curate: Callable[..., Any]
    ) -> None:
        """Ask a confidence from 0 to 1 and set it; anything else is refused with a hint."""
        from screens.reason_prompt import ReasonPrompt

        current = workbench.get("provenance", {}).get("confidence", 0.7)

        def apply(answer: str | None) -> None:
            if answer is None:
                return
            try:
                value = float(answer)
            except ValueError:
                value = -1.0
            if not 0.0 <= value <= 1.0:
                self.notify("Confidence is a number from 0 to 1, e.g. 0.8.", severity="warning")
                return
            curate("confidence", record_id, changes={"provenance": {"confidence": value}})

        self.app.push_screen(
            ReasonPrompt(f"Confidence of {docid} (0 to 1)", initial=str(current)), apply
        )

    def notify_failure(self, error: Any) -> None:
        self.notify(
            getattr(error, "message", str(error)),
            title=getattr(error, "code", "Error"),
            severity="error",
            timeout=8,
        )
