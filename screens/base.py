"""What every workbench screen shares: its dependencies (given by the app when it builds the
screen), the command list (its key bindings too), a refresh when the store changes, failed
workers passed on to the app, and the one path by which a screen curates a fact."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from textual import events, work
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Tab, Tabs
from textual.worker import Worker, WorkerState, get_current_worker

from engine.facade import Curation, CurationAction, FactRecord, MemoryService
from gno_tui.messages import StoreChanged, forward_failure
from gno_tui.widgets import list_search
from gno_tui.workbench_commands import WorkbenchCommand, bindings, writes
from screens.commands.shared import with_list_commands
from screens.modal import ask, quoted
from screens.reason_prompt import ReasonPrompt, confidence_problem

BUSY = (WorkerState.PENDING, WorkerState.RUNNING)
LOADING = "loading…"  # the header's subtitle while a screen shown again reloads


@dataclass
class Workbench:
    """What the app gives every screen: the engine's façade, who acts and in which session,
    and whether writes are refused. One object, shared by the app and its screens (create_app
    sets who acts and the session)."""

    service: MemoryService
    actor: str
    session: str
    read_only: bool = False
    generation: int = 0  # the newest store generation the app's watcher has seen


class UsesWorkbench:
    """The parts of the workbench every screen (and the app) uses most, by name."""

    workbench: Workbench

    @property
    def service(self) -> MemoryService:
        return self.workbench.service

    @property
    def actor(self) -> str:
        return self.workbench.actor


class WorkbenchScreen(UsesWorkbench, Screen[None]):
    """A screen declares its COMMANDS_LIST; its key bindings are made from it, with the list
    keys every screen has (search, n / N, sort: screens.commands.shared) added."""

    COMMANDS_LIST: ClassVar[tuple[WorkbenchCommand, ...]] = ()

    def __init_subclass__(cls, **options: Any) -> None:
        if "COMMANDS_LIST" in cls.__dict__:  # before Textual merges the class's BINDINGS
            cls.COMMANDS_LIST = with_list_commands(cls.COMMANDS_LIST)
            cls.BINDINGS = bindings(cls.COMMANDS_LIST)
        super().__init_subclass__(**options)

    def __init__(self, workbench: Workbench) -> None:
        super().__init__()
        self.workbench = workbench
        # The store generation what the screen shows was loaded at (about: its first loads
        # start when it is built). A screen in the background hears of no change.
        self.generation_shown = workbench.generation
        # Its first ScreenResume came (when it was built: shown by its key, or built ahead in
        # the background): any later one is a showing of data loaded earlier.
        self.resumed_before = False
        self.reloading: set[Worker[Any]] = set()  # the reload started as it was shown again

    def on_compose(self) -> None:
        """Before Textual builds the screen's widgets (most of a first visit's time, on the
        UI thread): the first loads start now, in their workers, so the data is there for the
        first paint instead of one load's time after it. Their results arrive as messages,
        which the screen handles after its on_mount."""
        # What they read is the watcher's generation (set in __init__) or newer: a later
        # showing may reload once for nothing, never skip a change. Not read from the store
        # here: on the UI thread at launch that read waited behind the first loads' workers
        # (a key 3 at the first rows took 180 ms instead of 100).
        self.start_first_loads()

    def start_first_loads(self) -> None:
        """Start the workers that load what the screen first shows; they must not touch its
        widgets (there are none yet). Screens that show store data override this."""

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Write commands are disabled (greyed out) in a read-only workbench."""
        return None if self.workbench.read_only and writes(self.COMMANDS_LIST, action) else True

    # The pane the backslash key hides (and shows again), leaving its width to the list.
    DETAIL_PANE: ClassVar[str | None] = None

    def action_toggle_detail(self) -> None:
        if self.DETAIL_PANE is None:
            return
        pane = self.query_one(self.DETAIL_PANE)
        pane.display = not pane.display
        if not pane.display and pane.has_focus_within:
            self.focus_next()  # the focus leaves with the pane

    # -- the list keys (ctrl+f, n / N, O), on the list in focus ------------------------------

    def action_find(self) -> None:
        list_search.open_search(self)

    def action_find_next(self) -> None:
        list_search.find_again(self, 1)

    def action_find_prev(self) -> None:
        list_search.find_again(self, -1)

    def action_sort(self) -> None:
        list_search.choose_sort(self)

    def remeasure_tab_underline(self, tabs: Tabs) -> None:
        """Call after changing tab labels (counts). Tabs moves its underline when a label
        changes, but may measure the active tab before the new label is laid out, and the bar
        then keeps the old width: ask again once the layout has caught up."""
        active = tabs.active_tab
        if active is not None:
            self.call_after_refresh(active.post_message, Tab.Relabelled(active))

    def on_store_changed(self, message: StoreChanged) -> None:
        if message.generation == self.generation_shown:
            return  # reloaded for it already: it was read from the store as the screen showed
        self.generation_shown = message.generation
        self.refresh_from_store()

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        """Shown (its key, or a modal closed): reloaded only if the store changed while it was
        in the background; otherwise what it shows is still true and stays as it is."""
        # Textual restyles every widget of a screen each time it is shown (handled after this,
        # by Screen), and a restyled table drops its rendered rows: most of the time a screen key
        # took, and a third of a first visit's (its widgets were styled as they mounted, with
        # the one stylesheet: screens.workbench_styles). Nothing of a screen's style changes
        # while it is hidden; a CSS or theme change is caught by switch_mode itself, which
        # then refreshes the CSS of every screen.
        event.refresh_styles = False
        if not self.resumed_before:
            self.resumed_before = True
            return  # just built: its first loads are under way
        try:
            moved = self.store_moved()
        except Exception:  # noqa: BLE001 - unreadable now: the watcher shows why, and retries
            moved = self.generation_shown != self.workbench.generation
            self.generation_shown = self.workbench.generation
        if moved:
            self.show_loading()
            self.refresh_from_store()
            # The header says "loading…" until the reload's workers are done.
            self.reloading = {w for w in self.app.workers if w.node is self and w.state in BUSY}
            self.sub_title = LOADING if self.reloading else None

    def store_moved(self) -> bool:
        """Whether the store changed since what the screen shows was loaded. Asked of the store
        itself as the screen is shown (one read of its generation): the watcher hears of a
        write up to a second later on SQLite, and a screen shown meanwhile painted old counts
        for seconds. Screens that show what the generation does not count check that too."""
        generation = self.service.generation()
        moved = generation != self.generation_shown
        self.generation_shown = generation
        return moved

    def show_loading(self) -> None:
        """Shown while the store moved and the reload is not in yet: a screen that paints
        counts shows them as loading here (never the old number); its reload paints them."""

    def refresh_from_store(self) -> None:
        """Reload what the screen shows; screens that show store data override this."""

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        forward_failure(self, event)
        # A worker's result is posted before its end is, so it has been painted by now.
        if event.worker in self.reloading and event.state not in BUSY:
            self.reloading.discard(event.worker)
            if not self.reloading:
                self.sub_title = None

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

    # -- the fact keys (c, S, E, %), on the fact the screen has in hand ---------------------

    STALE_LABEL: ClassVar[str | None] = "stale"  # how marking stale is named when it is done

    def fact_in_hand(self) -> str | None:
        """The record id of the fact the fact keys act on (the highlighted one, say); None,
        having said why, when there is none. A screen that shows facts says which it is."""
        return None

    def record_in_hand(self) -> FactRecord | None:
        """The fact in hand with its fields, for the keys that read them (E, %)."""
        ref = self.fact_in_hand()
        return None if ref is None else self.service.facts.get(ref)

    def curate_in_hand(self, action: CurationAction, label: str | None = None) -> None:
        if (ref := self.fact_in_hand()) is not None:
            self.curate(Curation(action, ref, self.actor), label)

    def action_confirm(self) -> None:
        self.curate_in_hand(CurationAction.CONFIRM)

    def action_mark_stale(self) -> None:
        self.curate_in_hand(CurationAction.MARK_STALE, self.STALE_LABEL)

    def action_toggle_instruction(self) -> None:
        """Flip the fact's use policy between evidence-only and usable as an instruction."""
        if (row := self.record_in_hand()) is None:
            return
        policy = row.workbench.get("usePolicy", {})
        flipped = not policy.get("canUseAsInstruction", False)
        self.curate(
            Curation(CurationAction.USE_POLICY, row.record_id, self.actor, instruction=flipped)
        )

    def action_set_confidence(self) -> None:
        """Ask a confidence from 0 to 1 and set it; the prompt refuses anything else in place
        (the engine would too)."""
        if (row := self.record_in_hand()) is None:
            return
        current = row.workbench.get("provenance", {}).get("confidence", 0.7)

        def apply(answer: str) -> None:
            try:
                value: float | None = float(answer)
            except ValueError:
                value = None  # not a number: refused by the engine, with its hint
            self.curate(
                Curation(CurationAction.CONFIDENCE, row.record_id, self.actor, confidence=value)
            )

        question = f"Confidence of {row.docid} (0 to 1)"
        context = quoted(row.text)
        prompt = ReasonPrompt(
            question, initial=str(current), context=context, check=confidence_problem
        )
        ask(self, prompt, apply)
