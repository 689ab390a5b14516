"""The workbench's `z` (undo) and `ctrl+z` (redo) on every screen, a part of GnoApp.

The engine takes back the person's latest decision or refuses, saying why (the failure is
shown with its code, as every failed worker's is); it never skips to an older one. A step
that would relax a collection's policy asks y/n first, as relaxing does on Receipts: the yes
is bound to that step's decision, so a decision made meanwhile is never the one it applies to.
After an undo on Review the cursor goes to the proposal it put back."""

from __future__ import annotations

from textual import work
from textual.app import App

from engine.facade import NeedsYes, Redone, Undone
from screens.base import UsesWorkbench, WorkbenchScreen
from screens.review import ReviewScreen
from screens.yes_no import YesNoPrompt


class UndoKeys(UsesWorkbench, App[None]):
    def action_undo(self) -> None:
        self.step_back_or_forth(undo=True)

    def action_redo(self) -> None:
        self.step_back_or_forth(undo=False)

    @work(thread=True, exclusive=True, exit_on_error=False, group="app-undo")
    def step_back_or_forth(self, *, undo: bool, yes: int | None = None) -> None:
        """Take back the person's latest decision (undo), or do again what their latest undo
        took back (redo); `yes`: the decision of a NeedsYes the person said yes to. A refusal
        is a MemoryFailure: the worker failure handler shows it with its code."""
        curation = self.service.curation
        step: Undone | Redone
        try:
            if undo:
                step = curation.undo(actor=self.actor, yes=yes)
            else:
                step = curation.redo(actor=self.actor, yes=yes)
        except NeedsYes as asked:
            self.call_from_thread(self.ask_yes, asked, undo)
            return
        what = f"{step.action} on {step.target}"
        if step.count > 1:
            what = f"a batch of {step.count} ({what}, …)"
        note = f"{'undone' if undo else 'redone'}: {what}"
        left = step.not_undone if isinstance(step, Undone) else ()
        if left:  # part of a batch the store moved on from since: named, not hidden
            note += "\nnot undone (changed since): " + "; ".join(left)
        self.call_from_thread(self.notify, note, timeout=8 if left else 5)
        screen = self.screen
        if undo and isinstance(screen, ReviewScreen) and step.target.startswith("proposal:"):
            self.call_from_thread(screen.show_restored, int(step.target.removeprefix("proposal:")))
        elif isinstance(screen, WorkbenchScreen):
            self.call_from_thread(screen.refresh_from_store)

    def ask_yes(self, asked: NeedsYes, undo: bool) -> None:
        verb = "Undo" if undo else "Redo"

        def answered(yes: bool | None) -> None:
            if yes:
                self.step_back_or_forth(undo=undo, yes=asked.decision)
            else:
                self.notify(f"Nothing {'undone' if undo else 'redone'}: the policy stays.")

        self.push_screen(YesNoPrompt(f"{asked.question} {verb} it?"), answered)
