"""Help for the screen in front (F1 or ?): what it shows, every key it has, the global keys
(quit among them, on every screen) and the rule for leaving a text box. A modal that scrolls
(j/k, arrows, page keys) and closes on escape, q, F1 or ?, so it is never cut off and never a
trap, at any terminal size."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, ClassVar

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from gno_tui.workbench_commands import QUIT, WorkbenchCommand
from screens.modal import Modal


def key_names(app: App[Any], command: WorkbenchCommand) -> str:
    """The command's keys as the footer shows them (`/`, `^s`, `F1`...), joined by " / "."""
    keys = (key.strip() for key in command.key.split(","))
    return " / ".join(app.get_key_display(Binding(key, command.action)) for key in keys)


def keys_table(app: App[Any], title: str, commands: Iterable[WorkbenchCommand]) -> Table:
    table = Table(title=title, title_justify="left", show_header=False, box=None, expand=True)
    table.add_column("key", style="bold cyan", no_wrap=True, min_width=8)
    table.add_column("what")
    for command in commands:
        table.add_row(key_names(app, command), f"{command.title}: {command.help}")
    return table


class HelpScreen(Modal[None]):
    STYLES = """
    HelpScreen {
        #help-box { width: 96; height: 100%; padding: 0 1; }
        #help-title { text-style: bold; color: $primary; }
        #help-scroll { height: 1fr; }
        #help-keys-hint { color: $text-muted; }
    }
    """
    BOX_ID = "help-box"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding(
            "escape,q,f1,question_mark",
            "close",
            "Close",
            id="help.close",
            tooltip="Close the help",
        ),
        Binding("j", "scroll('down')", "Down", show=False, id="help.down"),
        Binding("k", "scroll('up')", "Up", show=False, id="help.up"),
    ]

    def __init__(
        self,
        help_text: str,
        commands: Iterable[WorkbenchCommand],
        global_commands: Iterable[WorkbenchCommand],
        input_rule: str,
    ) -> None:
        """`global_commands` and `input_rule` (the rule for keys inside a text box) are the
        app's: made from its screen registry (gno_tui.workbench_commands)."""
        super().__init__()
        self.help_text = help_text
        self.commands = tuple(commands)
        self.input_rule = input_rule
        # Quit is Textual's binding, not one of the workbench's commands: added here, so that
        # every screen's help names it.
        listed = tuple(global_commands)
        self.global_commands = listed if QUIT in listed else (*listed, QUIT)

    def box_content(self) -> ComposeResult:
        from rich.markdown import Markdown  # at the first F1, not at the workbench's start

        yield Label("Help", id="help-title")
        with VerticalScroll(id="help-scroll"):
            yield Static(
                Group(
                    Markdown(self.help_text.strip() or "## This screen"),
                    Text(""),
                    keys_table(self.app, "Keys on this screen", self.commands),
                    Text(""),
                    keys_table(self.app, "Keys on every screen", self.global_commands),
                    Text(""),
                    Text("Text boxes: ", style="bold").append(self.input_rule, style=""),
                ),
                id="help-body",
            )
        yield Label(
            "j/k, arrows, page up/down scroll · escape, q, F1 or ? closes · ctrl+q quits",
            id="help-keys-hint",
        )

    def on_mount(self) -> None:
        self.query_one("#help-scroll").focus()

    def action_scroll(self, direction: str) -> None:
        scroll = self.query_one("#help-scroll", VerticalScroll)
        if direction == "down":
            scroll.scroll_down(animate=False)
        else:
            scroll.scroll_up(animate=False)
