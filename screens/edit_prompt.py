"""The Review screen's modal for editing a proposal's text before it is added, in place or
in the person's own editor ($VISUAL or $EDITOR)."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.widgets import Label, TextArea

from screens.modal import TextPrompt, problem_line


def prompt_bindings(save_title: str, save_tooltip: str) -> list[BindingType]:
    """The prompt's keys; only what ctrl+s does differs between edit and merge."""
    return [
        Binding("ctrl+s", "save", save_title, id="edit.save", tooltip=save_tooltip),
        Binding(
            "ctrl+o",
            "external_editor",
            "$EDITOR",
            id="edit.external",
            tooltip="Edit the text in $VISUAL / $EDITOR; saving and quitting brings it back",
        ),
        Binding("escape", "close", "Cancel", id="edit.cancel", tooltip="Close without deciding"),
    ]


class EditPrompt(TextPrompt):
    """The proposal's text, editable; ctrl+s adds the edited text, escape cancels."""

    STYLES = """
    EditPrompt {
        #edit-box { width: 90; }
        #edit-text { height: 10; }
    }
    """
    BOX_ID = "edit-box"
    EMPTY = "The text is empty (escape cancels)."
    BINDINGS: ClassVar[list[BindingType]] = prompt_bindings(
        "Add edited", "Add the edited text as a new fact"
    )
    HINT = "ctrl+s adds the edited text · ctrl+o opens $EDITOR · escape cancels"

    def __init__(self, question: str, text: str) -> None:
        super().__init__(question)
        self.text = text

    def box_content(self) -> ComposeResult:
        yield Label(self.question)
        yield TextArea(self.text, id="edit-text", soft_wrap=True)
        yield from problem_line()
        yield Label(self.HINT, classes="muted")

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def action_save(self) -> None:
        self.answer(self.query_one(TextArea).text)

    def action_external_editor(self) -> None:
        command = os.environ.get("VISUAL") or os.environ.get("EDITOR")
        if not command:
            self.notify(
                "Set $VISUAL or $EDITOR (e.g. export EDITOR=vim) to edit in your own editor.",
                severity="warning",
            )
            return
        area = self.query_one(TextArea)
        with tempfile.TemporaryDirectory(prefix="gno-tui-edit-") as folder:
            path = Path(folder) / "fact.md"
            path.write_text(area.text, encoding="utf-8")
            argv = [*shlex.split(command), str(path)]
            if self.app.is_headless:
                # No terminal to hand over (tests, scripts): the editor runs as it is.
                finished = subprocess.run(argv, check=False)
            else:
                with self.app.suspend():
                    finished = subprocess.run(argv, check=False)
            if finished.returncode != 0:
                self.notify(
                    f"{command} exited with status {finished.returncode}; the text is unchanged.",
                    severity="warning",
                )
                return
            area.text = path.read_text(encoding="utf-8").rstrip("\n")


class MergePrompt(EditPrompt):
    """A proposal and a candidate combined into one text, editable; ctrl+s writes it as the
    candidate's successor."""

    BINDINGS: ClassVar[list[BindingType]] = prompt_bindings(
        "Merge", "Write the merged text as the candidate's successor"
    )
    HINT = (
        "ctrl+s writes this text, superseding the candidate · ctrl+o opens $EDITOR · escape cancels"
    )
