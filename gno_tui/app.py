"""GnoApp: a thin shell that gives the screens their dependencies, switches between them,
navigates on their messages, watches the store for changes, and shows every failed worker.

Built by `create_app`, the one factory used by the CLI, the tests and the screenshot script."""

from __future__ import annotations

import gc
import getpass
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, ClassVar, TypeVar

from textual import events, work
from textual.app import SystemCommand
from textual.screen import Screen
from textual.worker import Worker, WorkerState, get_current_worker

from engine.facade import ChangeFeed, MemoryFailure, MemoryService, open_service
from gno_tui.idle_work import CHECK_SECONDS, IdleWork
from gno_tui.jump_back import JumpBack
from gno_tui.messages import (
    OpenChain,
    OpenLibraryAsOf,
    StoreChanged,
    WorkerFailed,
    forward_failure,
)
from gno_tui.palette import palette_commands
from gno_tui.render.decision_log import fact_uris
from gno_tui.screen_registry import (
    Registry,
    app_bindings,
    global_commands,
    input_rule,
    screen_digits,
)
from gno_tui.terminal_keys import route_escape_digits_as_alt
from gno_tui.textual_private import NoPaintHold, build_mode_screen, mark_styles_current
from gno_tui.theme import WORKBENCH_THEME
from gno_tui.toast_hold import ToastHold
from gno_tui.undo_keys import UndoKeys
from gno_tui.workbench_app import WorkbenchApp
from gno_tui.workbench_commands import writes
from screens import SCREEN_REGISTRY, workbench_styles
from screens.base import Workbench, WorkbenchScreen
from screens.decision_log import DecisionLogScreen
from screens.help_screen import HelpScreen
from screens.library import LibraryScreen
from screens.reason_prompt import ReasonPrompt
from screens.supersession import SupersessionScreen

# The store watcher's longest single wait on the change feed: how soon it sees that it was
# cancelled if nothing closed the feed (a quit closes it, which ends the wait at once).
STORE_WAIT_SECONDS = 1.0
# The worker group of the store watcher, which runs as long as the app (tests wait for every
# other worker: tests/pilot_helpers.py).
STORE_WATCH_GROUP = "store-watch"
# A store watcher that failed (its failure is shown) starts again this much later.
STORE_RETRY_SECONDS = 5.0
# A screen is built ahead once the workbench was quiet this long (prebuild_when_quiet), and
# asked again this often until then.
PREBUILD_QUIET_SECONDS = 0.15
PREBUILD_RETRY_SECONDS = 0.05
BUSY = (WorkerState.PENDING, WorkerState.RUNNING)

_Shown = TypeVar("_Shown", bound=WorkbenchScreen)

# The terminal's bytes for alt+digit reach the app as the screen keys (gno_tui/terminal_keys.py).
route_escape_digits_as_alt(screen_digits(SCREEN_REGISTRY))


def failure_notice(worker: Worker[Any]) -> tuple[str, str]:
    """(title, message) for a failed worker: an engine refusal by its error code and its
    message (which says how to fix it); anything else, a bug, by its type and the worker."""
    error = worker.error
    if isinstance(error, MemoryFailure):
        return error.code, error.message or str(error)
    if error is None:
        return "Error", f"{worker.name or worker.group} failed"
    return "Error", f"{type(error).__name__}: {error}"


class GnoApp(UndoKeys, JumpBack, ToastHold, NoPaintHold, WorkbenchApp):
    """Undo and redo (`z`, `ctrl+z`) are UndoKeys' (gno_tui/undo_keys.py); going back from
    a chain to where it was opened, JumpBack's (gno_tui/jump_back.py); holding toasts while
    the help or the log is in front, ToastHold's (gno_tui/toast_hold.py); no paint held after
    a screen switch, NoPaintHold's (gno_tui/textual_private.py)."""

    TITLE = "gno-tui"
    # Its own path: Textual reads a relative one beside the module of the class (a subclass's).
    CSS_PATH = Path(__file__).with_name("app.tcss")
    CSS = workbench_styles()
    # The screens, in the order of their keys (screens.SCREEN_REGISTRY): the app's modes, its
    # screen keys, the palette's screen names and the help's screen lines are made from it.
    SCREEN_REGISTRY: ClassVar[Registry] = SCREEN_REGISTRY
    BINDINGS = app_bindings(SCREEN_REGISTRY)

    def __init_subclass__(cls, **options: Any) -> None:
        # A subclass's own screens (a test's) get their keys, before Textual merges BINDINGS.
        if "SCREEN_REGISTRY" in cls.__dict__:
            cls.BINDINGS = app_bindings(cls.SCREEN_REGISTRY)
        super().__init_subclass__(**options)

    def __init__(
        self,
        service: MemoryService,
        *,
        start: str = "library",
        actor: str | None = None,
        session: str | None = None,
        read_only: bool = False,
        watch_store: bool = True,
        chain: str | None = None,
        prebuild_screens: bool = False,
    ) -> None:
        super().__init__()
        self.workbench = Workbench(
            service,
            actor=actor or f"tui:{_user()}",
            session=session or f"tui:{os.getpid()}",
            read_only=read_only,
        )
        self._screen_kinds = {entry.mode: entry.screen for entry in self.SCREEN_REGISTRY}
        self._start = start if start in self._screen_kinds else self.SCREEN_REGISTRY[0].mode
        self._watch_store = watch_store
        self.workbench.generation = service.generation()
        self._prebuild = prebuild_screens
        self._first_chain = chain  # the fact the Supersession screen opens when first built
        self._changes: ChangeFeed | None = None  # the store watcher's, while it runs
        self._idle = IdleWork()  # what runs in the person's pauses
        for mode in self._screen_kinds:
            self.add_mode(mode, self._screen_builder(mode))

    # -- what the screens are given: the workbench (service and actor: UsesWorkbench) --------

    def _screen_builder(self, mode: str) -> Callable[[], Screen[Any]]:
        def build() -> Screen[Any]:
            screen = self._screen_kinds[mode](self.workbench)
            # Its rules are in the app's stylesheet from the start (screens.workbench_styles):
            # marked up to date, Textual does not parse the whole sheet again and restyle every
            # screen for it (0.1-0.2 s of the key that first shows it); its widgets take their
            # styles as they mount.
            mark_styles_current(self, screen)
            self.mode_screens[mode] = screen
            if isinstance(screen, SupersessionScreen) and self._first_chain:
                screen.call_later(screen.open, self._first_chain)
            return screen

        return build

    def _show(self, mode: str, kind: type[_Shown]) -> _Shown:
        """Switch to `mode` (building its screen on the first visit) and return its screen."""
        self.switch_mode(mode)
        screen = self.mode_screens[mode]
        if not isinstance(screen, kind):
            raise TypeError(f"mode {mode!r} shows {type(screen).__name__}, not {kind.__name__}")
        return screen

    # -- running ------------------------------------------------------------------------------

    def on_mount(self) -> None:
        if self._prebuild:
            # The CLI's workbench has its process to itself: what it has loaded by now lives
            # as long as it, and full collections wait for a pause (gno_tui.idle_work).
            # Not in tests, which run many apps in one process: frozen, their cycles would
            # never be collected.
            self._idle.take_over_process()
            self.set_interval(CHECK_SECONDS, self.collect_when_idle)
        self.register_theme(WORKBENCH_THEME)
        self.theme = WORKBENCH_THEME.name
        self.switch_mode(self._start)
        if self._watch_store:
            self.follow_store()
        if self._prebuild:
            self.call_after_refresh(self.prebuild_when_quiet)

    def collect_when_idle(self) -> None:
        self._idle.collect_if_idle(busy=self._loading())

    def _loading(self) -> bool:
        """A worker runs or waits to (the store watcher, which always runs, aside)."""
        return any(w.state in BUSY and w.group != STORE_WATCH_GROUP for w in self.workers)

    async def on_event(self, event: events.Event) -> None:
        if isinstance(event, events.Key | events.MouseDown):
            self._idle.input_seen()
        await super().on_event(event)

    def prebuild_when_quiet(self) -> None:
        """Build the next screen ahead once the workbench has been quiet (no load, no key)
        for PREBUILD_QUIET_SECONDS; until then ask again. A key pressed as the first rows
        show builds its own screen at once rather than waiting behind one built ahead."""
        if self._idle.quiet(PREBUILD_QUIET_SECONDS, busy=self._loading()):
            self.prebuild_next_screen()
        else:
            self.set_timer(PREBUILD_RETRY_SECONDS, self.prebuild_when_quiet)

    def prebuild_next_screen(self) -> None:
        """Build the next screen not built yet, in the background, unless a worker loads:
        the first visit of a screen then only shows it. Building one (its widgets, their
        styles, its first loads) takes the UI thread 30-100 ms, which a screen key would
        otherwise wait for. One screen at a time, each after the workbench was quiet again,
        so a key pressed meanwhile waits for one screen at most, and the first rows of the
        screen shown first are never slowed down."""
        if self._loading():
            self.set_timer(PREBUILD_RETRY_SECONDS, self.prebuild_when_quiet)
            return
        for mode in self._screen_kinds:
            if mode not in self.mode_screens:
                # Composed, mounted and laid out, not shown.
                build_mode_screen(self, mode)
                self.call_after_refresh(self.prebuild_when_quiet)
                return
        # Every screen is built: it too lives as long as the app (see on_mount).
        self._idle.settle()

    def run(self, *args: Any, **kwargs: Any) -> Any:
        """Run in a terminal until quit (the CLI's way; tests use run_test). After it the
        process ends, and its interpreter's last garbage collection over everything loaded
        took 0.4-0.9 s before the shell came back: everything is left to the exit itself
        (frozen objects are not walked; files and the database are closed as always)."""
        try:
            return super().run(*args, **kwargs)
        finally:
            gc.freeze()

    @work(thread=True, exclusive=True, exit_on_error=False, group=STORE_WATCH_GROUP)
    def follow_store(self) -> None:
        """As long as the app runs: wait on the store's change feed (PostgreSQL notifies it;
        on SQLite it reads the counter each second) and tell the screen in front when any
        process wrote. The feed starts from the generation the screens were loaded at, so a
        write made before it opened is not missed."""
        worker = get_current_worker()
        with self.service.changes(since=self.workbench.generation) as feed:
            self._changes = feed
            if worker.is_cancelled:  # quit before the feed existed: on_unmount missed it
                return
            while not worker.is_cancelled:
                generation = feed.wait(STORE_WAIT_SECONDS)
                if generation is not None and not worker.is_cancelled:
                    self.store_changed(generation)

    def store_changed(self, generation: int) -> None:
        """From the store watcher's thread: a new generation reached the screen in front."""
        if generation == self.workbench.generation:
            return
        # Set here, read by the screens in the background when they are shown again.
        self.workbench.generation = generation
        self.call_from_thread(self.screen.post_message, StoreChanged(generation))

    def on_unmount(self) -> None:
        """Quitting: the store watcher's wait ends now, not at its timeout, so its thread is
        gone before the process ends (which waits for worker threads)."""
        for worker in self.workers:
            if worker.group == STORE_WATCH_GROUP:
                worker.cancel()
        if self._changes is not None:
            self._changes.close()

    # -- failed workers: one handler ----------------------------------------------------------

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        forward_failure(self, event)  # the app's own workers: to the same handler
        if event.state == WorkerState.ERROR and event.worker.group == STORE_WATCH_GROUP:
            # The store could not be read (shown by the handler): watch again in a while,
            # from the generation shown, so nothing written meanwhile is missed.
            self.set_timer(STORE_RETRY_SECONDS, self.follow_store)

    def on_worker_failed(self, message: WorkerFailed) -> None:
        """The one place a failed worker (the app's, a screen's or a widget's: they post
        WorkerFailed) becomes something a person sees. Loud: every failure is shown."""
        title, text = failure_notice(message.worker)
        self.notify(text, title=title, severity="error", timeout=8)

    # -- navigation ---------------------------------------------------------------------------

    def on_open_chain(self, message: OpenChain) -> None:
        """Library's and Recall's enter, and `:`: the Supersession screen on that fact."""
        self.remember_place()  # where ctrl+o on the Chain comes back to
        chain = self._show("supersession", SupersessionScreen)
        # Queued on the screen: a screen built just now opens it once mounted.
        chain.call_later(chain.open, message.ref)

    def on_open_library_as_of(self, message: OpenLibraryAsOf) -> None:
        """`:@time`: the Library as the store was then."""
        library = self._show("library", LibraryScreen)
        library.call_later(library.show_as_of, message.moment)

    def action_jump(self) -> None:
        def jump(answer: str | None) -> None:
            if not answer:
                return
            ref = answer.strip()
            if ref.startswith("@"):
                self.post_message(OpenLibraryAsOf(ref[1:]))
            else:
                self.jump_if_found(ref)

        self.push_screen(
            ReasonPrompt("Jump to a fact (#docid, mem-…, gno://…) or to a time (@2026-11-01)"),
            jump,
        )

    @work(thread=True, exclusive=True, exit_on_error=False, group="app-jump")
    def jump_if_found(self, ref: str) -> None:
        """Only a fact that exists opens its chain: one that does not is said once (with
        where to find it), and the screen in front stays as it was."""
        try:
            self.service.facts.get(ref)
        except MemoryFailure as failure:
            if failure.code != "MEMORY_NOT_FOUND":
                raise
            note = SupersessionScreen.not_found_note(ref)
            self.call_from_thread(self.notify, note, title="Not found", severity="warning")
            return
        self.post_message(OpenChain(ref))

    # -- global commands ----------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Global write commands (undo, redo) are disabled in a read-only workbench, as the
        screens' own are."""
        commands = global_commands(self.SCREEN_REGISTRY)
        return None if self.workbench.read_only and writes(commands, action) else True

    def action_show_decision_log(self) -> None:
        self.load_decision_log()

    @work(thread=True, exclusive=True, exit_on_error=False, group="app-log")
    def load_decision_log(self) -> None:
        entries = self.service.curation.decision_log()
        facts: dict[str, tuple[str, str]] = {}  # uri -> (docid, text), for a person to read
        for uri in dict.fromkeys(u for e in entries for u in fact_uris(e["target"])):
            try:
                row = self.service.facts.get(uri)
            except MemoryFailure:
                continue  # gone from the index (purged elsewhere): the uri is all there is
            facts[uri] = (row.docid, row.text)
        self.call_from_thread(self.push_screen, DecisionLogScreen(entries, facts))

    def action_show_screen_help(self) -> None:
        """F1 / ?: the help of the screen in front, in a modal that scrolls (HelpScreen
        closes itself on the same keys)."""
        screen = self.screen
        if isinstance(screen, HelpScreen):
            screen.dismiss()
            return
        own = screen.COMMANDS_LIST if isinstance(screen, WorkbenchScreen) else ()
        help_text = str(getattr(screen, "HELP", None) or "")
        commands, rule = global_commands(self.SCREEN_REGISTRY), input_rule(self.SCREEN_REGISTRY)
        self.push_screen(HelpScreen(help_text, own, commands, rule))

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        yield from palette_commands(self, screen)  # every screen's (gno_tui/palette.py)


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
    service: MemoryService | None = None,
    read_only: bool = False,
    watch_store: bool = True,
    chain: str | None = None,
    actor: str | None = None,
    session: str | None = None,
    prebuild_screens: bool = False,
) -> GnoApp:
    """The one way to build the workbench (CLI, tests, screenshots). Without `service`, the
    home (or $GNO_TUI_HOME ...) is opened. `chain`: the fact the Supersession screen opens
    first; `actor` and `session`: who the workbench's decisions and recalls are by;
    `prebuild_screens`: build the other screens in the background once the first is shown (as
    the CLI does; tests build each screen when it is first shown, as they ask for it)."""
    if service is None:
        service = open_service(home=home, db_url=db_url, model=model)
    return GnoApp(
        service,
        start=screen or "library",
        read_only=read_only,
        watch_store=watch_store,
        chain=chain,
        actor=actor,
        session=session,
        prebuild_screens=prebuild_screens,
    )
