"""The workbench's footer: the keys that matter most first, as many as the width holds.

Textual's footer lists every shown binding in the order the focus chain gives them and cuts
the rest at the edge, so at 100-160 columns help (F1) and the screen keys fell off. This one
puts help first, then the screen keys as one entry (1-6), then the screen's own commands in
the order its COMMANDS_LIST gives them, then the other global keys; it keeps only the entries
that fit beside the palette key. Everything left out is in the help and the palette."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from rich.cells import cell_len
from textual import events
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding
from textual.screen import Screen
from textual.widgets import Footer, Input, TextArea
from textual.widgets._footer import FooterKey

HELP_ACTION = "app.show_screen_help"
SWITCH_ACTION = "app.switch_mode"
PALETTE_WIDTH = 14  # "▏ ^p palette " as Textual draws the palette key, docked right


@dataclass(frozen=True)
class Entry:
    key: str  # the key a click presses
    display: str
    description: str
    action: str
    enabled: bool
    tooltip: str

    @property
    def width(self) -> int:
        """Cells taken by a FooterKey in the regular (not compact) style: " key desc "."""
        return (
            cell_len(self.display) + 2 + (cell_len(self.description) + 1 if self.description else 0)
        )


class WorkbenchFooter(Footer):
    _composed: tuple[tuple[Entry, ...], bool | None] | None = None  # the lineup last composed

    def entries(self, bindings: Mapping[str, ActiveBinding]) -> list[Entry]:
        """Every shown binding of the screen (`bindings`: its active bindings), in priority
        order (see the module's docstring)."""
        help_entry: list[Entry] = []
        own: list[Entry] = []
        others: list[Entry] = []
        seen: set[str] = set()
        for _, binding, enabled, tooltip in bindings.values():
            if not binding.show or binding.action in seen:
                continue
            seen.add(binding.action)
            entry = Entry(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                enabled,
                tooltip or binding.tooltip or binding.description,
            )
            if binding.action == HELP_ACTION:
                help_entry.append(entry)
            elif binding.action.startswith(SWITCH_ACTION):
                continue  # one entry for the six (screens_entry)
            elif binding.action.startswith("app."):
                others.append(entry)
            else:
                own.append(entry)
        return [*help_entry, self.screens_entry(), *own, *others]

    def screens_entry(self) -> Entry:
        """1-6 as one entry. Inside a text box the digits are text (Textual then leaves their
        bindings out), and the entry names what works there: alt+1-6."""
        typing = isinstance(self.app.focused, Input | TextArea)
        return Entry(
            "alt+1" if typing else "1",
            "alt+1-6" if typing else "1-6",
            "Screens",
            "app.switch_mode('library')",
            True,
            "Switch screen: 1 Library · 2 Remember · 3 Review · 4 Recall · 5 Chain · 6 Receipts",
        )

    def fitting(self, bindings: Mapping[str, ActiveBinding]) -> Iterator[Entry]:
        room = (self.size.width or self.app.size.width) - PALETTE_WIDTH
        for entry in self.entries(bindings):
            if entry.width > room:
                return  # the rest is of lower priority: it waits in the help and the palette
            room -= entry.width
            yield entry

    def lineup(
        self, bindings: Mapping[str, ActiveBinding] | None = None
    ) -> tuple[tuple[Entry, ...], bool | None]:
        """What the footer shows: the entries that fit, and the palette key (None: none).
        The screen's active bindings are worked out once here (each time asks every screen
        command whether it is enabled: the most of a lineup's time)."""
        if bindings is None:
            bindings = self.screen.active_bindings
        palette = bindings.get(self.app.COMMAND_PALETTE_BINDING)
        shown = self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE and palette
        return tuple(self.fitting(bindings)), (palette.enabled if shown and palette else None)

    def compose(self) -> ComposeResult:
        if not self._bindings_ready:
            return
        bindings = self.screen.active_bindings
        self._composed = self.lineup(bindings)
        for entry in self._composed[0]:
            key = FooterKey(
                entry.key,
                entry.display,
                entry.description,
                entry.action,
                disabled=not entry.enabled,
                tooltip=entry.tooltip,
            )
            # The footer's style given as the key's starting value, not data-bound as Textual's
            # footer does: a binding restyles each key once more as it mounts.
            key.set_reactive(FooterKey.compact, self.compact)
            yield key
        palette = bindings.get(self.app.COMMAND_PALETTE_BINDING)
        if self._composed[1] is not None and palette:
            binding: Binding = palette.binding
            yield FooterKey(
                binding.key,
                self.app.get_key_display(binding),
                binding.description,
                binding.action,
                classes="-command-palette",
                disabled=not palette.enabled,
                tooltip=binding.tooltip or binding.description,
            )

    def bindings_changed(self, screen: Screen[object]) -> None:
        """Textual recomposes the footer whenever the screen's bindings may have changed: on
        every focus move and every time the screen is shown again. Here only when what it
        shows did change: a recompose mounts a dozen widgets, most of a screen switch's time."""
        self._bindings_ready = True
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self.call_after_refresh(self.recompose_if_changed)

    async def recompose_if_changed(self) -> None:
        if self.is_attached and self.lineup() != self._composed:
            await self.recompose()

    def on_resize(self, event: events.Resize) -> None:
        # What fits depends on the width: choose again.
        if self._bindings_ready:
            self.call_after_refresh(self.recompose_if_changed)
