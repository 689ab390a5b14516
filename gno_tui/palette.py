"""The command palette (ctrl+p): every command of every screen, from any screen.

The screen in front offers its own commands as they are ("Reject (x)"); every other screen's
are named with their screen ("Review: Reject (x)"). Running one of those switches to its
screen, waits for that screen's loads (a command that needs a row acts on the row it
highlights, which a screen built just now has only then), and runs it there; one that
cannot run there (read-only, another tab) says why instead."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import suppress
from typing import Any

from textual.actions import parse
from textual.app import SystemCommand
from textual.screen import Screen
from textual.worker import WorkerError, WorkerState

from gno_tui.screen_registry import Registry, global_commands, screen_titles
from gno_tui.workbench_app import WorkbenchApp
from gno_tui.workbench_commands import WorkbenchCommand
from screens.help_screen import key_names

BUSY = (WorkerState.PENDING, WorkerState.RUNNING)
# How many rounds of loads (a load whose result starts another) a switch waits for at most.
LOAD_ROUNDS = 50


def mode_of(registry: Registry, screen: Screen[Any]) -> str | None:
    """The mode whose screen `screen` is, if it is one of the registry's."""
    return next((entry.mode for entry in registry if type(screen) is entry.screen), None)


def palette_commands(app: WorkbenchApp, screen: Screen[Any]) -> Iterator[SystemCommand]:
    """The workbench's palette entries for `screen` (Textual's own come before them): the
    global commands (the screen keys first), the screen's own, then every other screen's
    named with its screen, all in the order of the app's screen registry."""
    registry = app.SCREEN_REGISTRY
    here = mode_of(registry, screen)

    def entry(command: WorkbenchCommand, mode: str | None, label: str = "") -> SystemCommand:
        # The key in the title: the palette teaches the key for next time.
        return SystemCommand(
            f"{label}{command.title} ({key_names(app, command)})",
            command.help,
            lambda: app.call_later(run_command, app, command, mode),
        )

    for command in global_commands(registry):
        yield entry(command, None)
    for shown in registry:
        if shown.mode == here:
            for command in shown.screen.COMMANDS_LIST:
                yield entry(command, here)
    for other in registry:
        if other.mode != here:
            for command in other.screen.COMMANDS_LIST:
                yield entry(command, other.mode, f"{other.title}: ")


async def run_command(app: WorkbenchApp, command: WorkbenchCommand, mode: str | None) -> None:
    """Run `command`: an app command at once; a screen's on its screen, switched to first
    (the waiting for its loads runs in a worker, so the app goes on handling messages)."""
    if mode is None:
        await app.run_action(command.action.removeprefix("app."))
    elif mode == app.current_mode and mode_of(app.SCREEN_REGISTRY, app.screen) == mode:
        await run_there(app, command, app.screen)
    else:
        app.run_worker(switch_and_run(app, command, mode), group="palette-run")


async def switch_and_run(app: WorkbenchApp, command: WorkbenchCommand, mode: str) -> None:
    await app.switch_mode(mode)
    # The mode's own screen, not a modal over it (the palette may be opened over the help).
    built = app.built_screen(mode)
    screen = built if built is not None else app.screen
    for _ in range(LOAD_ROUNDS):
        busy = [w for w in app.workers if w.node is screen and w.state in BUSY]
        if not busy:
            break
        running = [w for w in busy if w.state == WorkerState.RUNNING]
        with suppress(WorkerError):  # a failed load is the app's to show
            if running:
                await app.workers.wait_for_complete(running)
            else:
                await asyncio.sleep(0)  # (a pending worker starts on the next turn)
        # What they posted (the rows) is handled before the screen's next message.
        handled = asyncio.Event()
        screen.call_later(handled.set)
        await handled.wait()
    await run_there(app, command, screen)


async def run_there(app: WorkbenchApp, command: WorkbenchCommand, screen: Screen[Any]) -> None:
    """Run a screen's command on `screen`, unless the screen would refuse its key now: then
    say why (a key refused is greyed out in the footer; a palette entry has no such look)."""
    _, name, parameters = parse(command.action)
    allowed = screen.check_action(name, parameters)
    if allowed:
        await screen.run_action(command.action)
        return
    registry = app.SCREEN_REGISTRY
    title = screen_titles(registry).get(mode_of(registry, screen) or "", "this screen")
    why = (
        "the workbench is read-only"
        if allowed is None and getattr(app.workbench, "read_only", False)
        else f"not on {title} as it is now (another tab, or a text box in use)"
    )
    app.notify(f"{command.title} cannot run: {why}.", title=title, severity="warning")
