"""No toast is drawn over the help or the decision log, a part of GnoApp.

A notification raised while one of them is in front is held, and shown once it closes (on
the screen below), its time counted from then: they fill the terminal at small sizes, a toast
would cover what is being read, and a long read must not let it expire unseen. Toasts shown
before one opened stay on the screen below (under the modal) and expire as usual."""

from __future__ import annotations

from typing import Any

from textual.app import ScreenStackError
from textual.notifications import Notification, Notify

from gno_tui.textual_private import ToastGate
from screens.decision_log import DecisionLogScreen
from screens.help_screen import HelpScreen

HOLDS_TOASTS = (HelpScreen, DecisionLogScreen)


class ToastHold(ToastGate):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.held_notes: list[Notification] = []

    def on_notify(self, event: Notify) -> None:
        # Textual runs a message's handlers from the subclass up: this one comes before App's
        # own, which shows the toast unless the default is prevented.
        if self.toasts_held():
            event.prevent_default()
            self.held_notes.append(event.notification)

    def toasts_held(self) -> bool:
        try:
            return isinstance(self.screen, HOLDS_TOASTS)
        except ScreenStackError:  # before the first screen
            return False

    def release_held_toasts(self) -> None:
        """As the screen below is shown again (the help or the log closed): the notes held
        are raised again, their time counted from now."""
        held, self.held_notes = self.held_notes, []
        for note in held:
            self.notify(
                note.message,
                title=note.title,
                severity=note.severity,
                timeout=note.timeout,
                markup=note.markup,
            )
