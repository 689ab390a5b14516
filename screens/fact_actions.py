"""Two keys on a fact, wherever a screen lists facts (Library, Chain): `Y` copies its text, uri
or #docid to the clipboard (then `t`, `u` or `d`), `o` shows it read-only in the person's
editor ($VISUAL or $EDITOR) with the workbench suspended meanwhile."""

from __future__ import annotations

import os
import shlex
import subprocess
import tempfile
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult, SuspendNotSupported
from textual.binding import Binding, BindingType
from textual.widgets import Label, Static

from engine.facade import FactRecord
from gno_tui.workbench_commands import LESS_USED, WorkbenchCommand
from screens.base import WorkbenchScreen
from screens.modal import Modal

COPY_KEY = "Y"  # y is the batch key: Y ("yank") copies, as in vim and lazygit
EDITOR_KEY = "o"  # "open the file", as in lazygit; read-only, so not Review's `e`
HOME = "<home>/"  # how MemoryService.fact_location names a file under the home

# The choice's key -> what is copied (its label in the notification).
COPY_CHOICES: dict[str, str] = {"t": "text", "u": "uri", "d": "docid"}


def fact_commands(screen: str, what: str) -> tuple[WorkbenchCommand, ...]:
    """The two keys as commands of `screen` (a binding, a palette entry and a help line each)."""
    return (
        WorkbenchCommand(
            f"{screen}.copy",
            COPY_KEY,
            "copy_fact",
            "Copy",
            f"Copy the {what}'s text, uri or #docid to the clipboard (then t, u or d); "
            "OSC 52: the terminal must allow it",
            rank=LESS_USED + 5,
        ),
        WorkbenchCommand(
            f"{screen}.editor",
            EDITOR_KEY,
            "view_in_editor",
            "$EDITOR",
            f"Show the {what} (its fact file) read-only in $VISUAL / $EDITOR",
            rank=LESS_USED + 6,
        ),
    )


def copied_value(row: FactRecord, choice: str) -> str:
    """What `t`, `u` or `d` copies: the docid as `:` takes it (with its #)."""
    if choice == "u":
        return row.uri
    if choice == "d":
        return row.docid if row.docid.startswith("#") else f"#{row.docid}"
    return row.text


def one_line(text: str, limit: int = 70) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


class CopyChoice(Modal[str | None]):
    """Which of the fact's fields to copy: one key, each shown with its value."""

    # Its own CSS (not the app's sheet of STYLES): a rare modal, parsed once on first use.
    DEFAULT_CSS = """
    CopyChoice {
        #copy-box { width: 80; }
        .copy-keys { color: $text-muted; margin-top: 1; }
    }
    """
    BOX_ID = "copy-box"
    BINDINGS: ClassVar[list[BindingType]] = [
        *(
            Binding(key, f"choose('{key}')", label.title(), id=f"copy.{label}")
            for key, label in COPY_CHOICES.items()
        ),
        Binding("escape,q", "close", "Cancel", id="copy.cancel", tooltip="Copy nothing"),
    ]

    def __init__(self, row: FactRecord) -> None:
        super().__init__()
        self.row = row

    def box_content(self) -> ComposeResult:
        yield Label(f"Copy what of {copied_value(self.row, 'd')} to the clipboard?")
        for key, label in COPY_CHOICES.items():
            value = one_line(copied_value(self.row, key))
            yield Static(f"{key}  {label:<5}  {value}", markup=False, id=f"copy-{label}")
        yield Label("t / u / d: copy · escape: nothing", classes="copy-keys")

    def action_choose(self, key: str) -> None:
        self.dismiss(key)


def editor_command() -> str | None:
    return os.environ.get("VISUAL") or os.environ.get("EDITOR") or None


def run_editor(screen: WorkbenchScreen, argv: list[str]) -> int:
    """Run the editor in the terminal, the workbench suspended until it exits (its return
    code). Headless (tests, scripts) there is no terminal to hand over: it runs as it is,
    as Review's edit prompt does (screens/edit_prompt.py)."""
    if screen.app.is_headless:
        return subprocess.run(argv, check=False).returncode
    with screen.app.suspend():
        return subprocess.run(argv, check=False).returncode


class FactActions(WorkbenchScreen):
    """The copy and editor keys, for a screen that says which fact is in view (`shown_fact`).
    A mixin of LibraryScreen and SupersessionScreen (ahead of their other bases)."""

    def shown_fact(self) -> FactRecord | None:
        """The highlighted fact, or None having said why there is none."""
        return self.record_in_hand()

    def action_copy_fact(self) -> None:
        if (row := self.shown_fact()) is None:
            return

        def copy(choice: str | None) -> None:
            if choice not in COPY_CHOICES:
                return
            value = copied_value(row, choice)
            # OSC 52: the terminal puts it on the system clipboard, if it allows programs to.
            self.app.copy_to_clipboard(value)
            docid = copied_value(row, "d")
            self.notify(f"Copied the {COPY_CHOICES[choice]} of {docid}: {one_line(value)}")

        self.app.push_screen(CopyChoice(row), copy)

    def fact_file(self, row: FactRecord) -> Path | None:
        """The fact's file, when the store keeps one and it is there (where a fact is a row,
        its text is all there is)."""
        return self.service.fact_file(row)

    def action_view_in_editor(self) -> None:
        if (row := self.shown_fact()) is None:
            return
        command = editor_command()
        if command is None:
            self.notify(
                "Set $VISUAL or $EDITOR (e.g. export EDITOR=vim) to see a fact in your editor.",
                severity="warning",
            )
            return
        source = self.fact_file(row)
        name = source.name if source else f"{copied_value(row, 'd').lstrip('#')}.md"
        body = source.read_text(encoding="utf-8") if source else row.text + "\n"
        # A read-only copy: an edit behind the engine's back would leave the index, the
        # chain and the decision log wrong. Changing a fact is superseding it.
        with tempfile.TemporaryDirectory(prefix="gno-tui-view-") as folder:
            path = Path(folder) / name
            path.write_text(body, encoding="utf-8")
            path.chmod(0o444)
            try:
                status = run_editor(self, [*shlex.split(command), str(path)])
            except (OSError, SuspendNotSupported) as error:
                self.notify(f"Could not run {command}: {error}", severity="error")
                return
        where = self.service.fact_location(row) if source else "its text (no fact file)"
        if status != 0:
            self.notify(f"{command} exited with status {status}.", severity="warning")
        else:
            self.notify(
                f"Viewed {copied_value(row, 'd')} ({where}), read-only: to change it, "
                "supersede it on the Chain (s)."
            )
