"""GnoApp: a thin shell that holds the store, switches screens and watches for changes.

Built by `create_app`, the one factory used by the CLI, the tests and the screenshot script."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App, SystemCommand
from textual.screen import Screen
from textual.worker import Worker, WorkerState

from engine.curation import review
from engine.curation.undo import redo_last, undo_last
from engine.storage.store import MemoryEngine
from gno_tui.messages import StoreChanged
from gno_tui.theme import WORKBENCH_THEME
from gno_tui.workbench_commands import GLOBAL_COMMANDS, WorkbenchCommand, bindings
from screens import SCREENS_BY_MODE
from screens.decision_log import DecisionLogScreen
from screens.library import LibraryScreen
from screens.reason_prompt import ReasonPrompt
from screens.supersession import SupersessionScreen

# How often the app asks the store whether another process wrote (a cheap one-row read).
STORE_POLL_SECONDS = 1.0


class GnoApp(App[None]):
    TITLE = "gno-tui"
    CSS_PATH = "app.tcss"
    MODES = dict(SCREENS_BY_MODE)
    BINDINGS = bindings(GLOBAL_COMMANDS)

    def __init__(
        self,
        store: MemoryEngine,
        *,
        start: str = "library",
        actor: str | None = None,
        read_only: bool = False,
        watch_store: bool = True,
    ) -> None:
        super().__init__()
        self.store = store
        self.actor = actor or f"tui:{_user()}"
        self.read_only = read_only
        self._start = start if start in self.MODES else "library"
        self._watch_store = watch_store
        self._generation = store.generation()
        # The fact the Supersession screen opens next (set by Library's enter and by `:`).
        self.selected_fact: str | None = None

    def on_mount(self) -> None:
        self.register_theme(WORKBENCH_THEME)
        self.theme = WORKBENCH_THEME.name
        self.switch_mode(self._start)
        if self._watch_store:
            self.set_interval(STORE_POLL_SECONDS, self.poll_store)

    def poll_store(self) -> None:
        self.read_generation()

    @work(thread=True, exclusive=True, exit_on_error=False, group="store-watch")
    def read_generation(self) -> None:
        generation = self.store.generation()
        if generation != self._generation:
            self._generation = generation
            self.call_from_thread(self.screen.post_message, StoreChanged(generation))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        """The one place a failed worker becomes something a person sees."""
        if event.state == WorkerState.ERROR and event.worker.error is not None:
            error = event.worker.error
            message = getattr(error, "message", None) or f"{type(error).__name__}: {error}"
            self.notify(message, title=getattr(error, "code", "Error"), severity="error", timeout=8)

    def action_jump(self) -> None:
        def open_chain(ref: str | None) -> None:
            if not ref:
                return
            if ref.strip().startswith("@"):
                self.open_library_as_of(ref.strip()[1:])
                return
            self.selected_fact = ref.strip()
            if isinstance(self.screen, SupersessionScreen):
                self.screen.open(self.selected_fact)
            else:
                self.switch_mode("supersession")

        self.push_screen(
            ReasonPrompt("Jump to a fact (#docid, mem-…, gno://…) or to a time (@2026-11-01)"),
            open_chain,
        )

    def open_library_as_of(self, moment: str) -> None:
        """`:@time`: the Library as the store was then."""

        def show() -> None:
            library = self.screen
            if isinstance(library, LibraryScreen):
                library.show_as_of(moment)

        self.switch_mode("library")
        # A first visit mounts the screen on the next refresh: fill its filter after that.
        self.call_after_refresh(show)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Global write commands (undo, redo) are disabled in a read-only workbench, as the
        screens' own are."""
        if self.read_only and any(
            command.writes and command.action.removeprefix("app.") == action
            for command in GLOBAL_COMMANDS
        ):
            return None
        return True

    def action_undo(self) -> None:
        self.undo_latest()

    @work(thread=True, exclusive=True, exit_on_error=False, group="app-undo")
    def undo_latest(self) -> None:
        # A refusal (nothing to undo, a review decision) is a MemoryFailure: the worker
        # failure handler below shows it with its code.
        undone = undo_last(self.store, actor=self.actor)
        self.call_from_thread(self.notify, f"undone: {undone.action} on {undone.target}")
        self._refresh_screen()

    def action_redo(self) -> None:
        self.redo_latest()

    @work(thread=True, exclusive=True, exit_on_error=False, group="app-undo")
    def redo_latest(self) -> None:
        redone = redo_last(self.store, actor=self.actor)
        self.call_from_thread(self.notify, f"redone: {redone.action} on {redone.target}")
        self._refresh_screen()

    def _refresh_screen(self) -> None:
        refresh = getattr(self.screen, "refresh_from_store", None)
        if refresh is not None:
            self.call_from_thread(refresh)

    def action_show_decision_log(self) -> None:
        self.load_decision_log()

    @work(thread=True, exclusive=True, exit_on_error=False, group="app-log")
    def load_decision_log(self) -> None:
        entries = review.decision_log(self.store)
        self.call_from_thread(self.push_screen, DecisionLogScreen(entries))

    def action_show_screen_help(self) -> None:
        if self.screen.query("HelpPanel"):
            self.action_hide_help_panel()
        else:
            self.action_show_help_panel()

    def get_system_commands(self, screen: Screen[Any]) -> Any:
        yield from super().get_system_commands(screen)
        commands: list[WorkbenchCommand] = [*GLOBAL_COMMANDS, *getattr(screen, "COMMANDS_LIST", ())]
        for command in commands:
            yield SystemCommand(
                command.title, command.help, lambda c=command: self._run_command(c, screen)
            )

    def _run_command(self, command: WorkbenchCommand, screen: Screen[Any]) -> None:
        # run_action is a coroutine: scheduled, so the palette's synchronous callback can fire it.
        if command.action.startswith("app."):
            self.call_later(self.run_action, command.action.removeprefix("app."))
        else:
            self.call_later(screen.run_action, command.action)


def _user() -> str:
    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name in some containers
        return "unknown"


def create_app(
    *,
    home: str | Path | None = None,
    db_url: str | None = None,
    model: str | Path | None = None,
    screen: str | None = None,
    store: MemoryEngine | None = None,
    read_only: bool = False,
    watch_store: bool = True,
) -> GnoApp:
    """The one way to build the workbench (CLI, tests, screenshots)."""
    if store is None:
        from engine.facade.factory import open_engine

        store = open_engine(home=home, db_url=db_url, model=model)
    return GnoApp(store, start=screen or "library", read_only=read_only, watch_store=watch_store)
