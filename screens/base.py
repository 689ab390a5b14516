"""What every workbench screen shares: the store, the acting person, the command list, and a
refresh when the store changes."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar

from textual.screen import Screen
from textual.worker import Worker, WorkerState

from gno_tui.messages import StoreChanged
from gno_tui.workbench_commands import WorkbenchCommand

if TYPE_CHECKING:
    from engine.store import MemoryEngine


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

    def on_store_changed(self, message: StoreChanged) -> None:
        self.refresh_from_store()

    def refresh_from_store(self) -> None:
        """Reload what the screen shows; screens that show store data override this."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """A failed worker of this screen becomes a notification with its error code (state
        changes go to the node that started the worker; they do not bubble to the app)."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            self.notify_failure(event.worker.error)

    def notify_failure(self, error: Any) -> None:
        self.notify(
            getattr(error, "message", str(error)),
            title=getattr(error, "code", "Error"),
            severity="error",
            timeout=8,
        )
