"""No toast is drawn over the help or the decision log, a part of GnoApp.

A notification raised while one of them is in front is held, and shown once it closes (on
the screen below), its time counted from then: they fill the terminal at small sizes, a toast
would cover what is being read, and a long read must not let it expire unseen. Toasts shown
before one opened stay on the screen below (under the modal) and expire as usual."""

from __future__ import annotations

from dataclasses import replace
from time import time
from typing import Any

from textual.app import App, ScreenStackError
from textual.notifications import Notification, Notify

from screens.decision_log import DecisionLogScreen
from screens.help_screen import HelpScreen

HOLDS_TOASTS = (HelpScreen, DecisionLogScreen)


class ToastHold(App[None]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._held_notes: list[Notification] = []

    def _on_notify(self, event: Notify) -> None:
        # Runs before App's own handler, which shows the toast unless prevented.
        if self._toasts_held():
            event.prevent_default()
            self._held_notes.append(event.notification)

    def _toasts_held(self) -> bool:
        try:
            return isinstance(self.screen, HOLDS_TOASTS)
        except ScreenStackError:  # before the first screen
            return False

    def _refresh_notifications(self) -> None:
        """Textual calls this as each screen is shown (a modal closing shows the one below):
        nothing is drawn on the help or the log; once they close, the held ones are."""
        if self._toasts_held():
            return
        for note in self._held_notes:
            self._notifications.add(replace(note, raised_at=time()))
        self._held_notes.clear()
        super()._refresh_notifications()
