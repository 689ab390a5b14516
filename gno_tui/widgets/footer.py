"""The workbench's footer: the keys a person uses most first, as many as the width holds, and
a "more: ?" at the end when some did not fit.

Textual's footer lists every shown binding in the order the focus chain gives them and cuts
the rest at the edge, so the keys a curator uses most (Retire, Undo) fell off unseen. This one
orders the entries by their command's rank (WorkbenchCommand.rank: help and the screen keys
(1-6) as one entry first, then the screen's verbs, undo, the rarer commands, the layout keys,
the log, quit). When they do not all fit beside the palette key it keeps the first that do,
then quit (always shown), then "more: ?": the help (and the palette) list every key. Inside a
text box the keys that are text there (letters, digits, /, space...) are left out: they
would type, not act; escape, the way out of the box, comes right after the screen keys."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from rich.cells import cell_len
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import ActiveBinding, Binding
from textual.screen import Screen
from textual.widgets import Input, TextArea

from gno_tui.screen_registry import (
    Registry,
    digit_span,
    global_commands,
    screen_digits,
    screen_list,
)
from gno_tui.textual_private import FooterKey, FooterOnBindings
from gno_tui.workbench_commands import FIRST, LESS_USED, QUIT, WorkbenchCommand

HELP_ACTION = "app.show_screen_help"
SWITCH_ACTION = "app.switch_mode"
QUIT_ACTIONS = ("quit", "app.quit")  # Textual's ctrl+q binding (an app binding: no namespace)
PALETTE_WIDTH = 14  # "▏ ^p palette " as Textual draws the palette key, docked right
MORE_LABEL = " more: "


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


def is_text(key: str, display: str) -> bool:
    """Whether the key types a character into a text box (it does not reach the screen)."""
    return key == "space" or (len(display) == 1 and display.isprintable())


def more_width(display: str) -> int:
    """Cells taken by the MoreKey showing `display` (" more: ? ")."""
    return cell_len(MORE_LABEL) + cell_len(display) + 1


class MoreKey(FooterKey):
    """ "more: ?" (inside a text box, where ? is text: "more: f1"): keys were left out, the
    help lists them. A click opens the help."""

    def render(self) -> Text:
        key_style = self.get_component_rich_style("footer-key--key")
        description_style = self.get_component_rich_style("footer-key--description")
        text = Text.assemble(
            (MORE_LABEL, description_style), (self.key_display, key_style), (" ", key_style)
        )
        text.stylize_before(self.rich_style)
        return text


def screens_entry(registry: Registry, typing: bool) -> Entry:
    """The screen keys of `registry` as one entry ("1-6 Screens"). Inside a text box (`typing`)
    the digits are text (Textual then leaves their bindings out), and the entry names what
    works there: alt+1-6."""
    prefix = "alt+" if typing else ""
    return Entry(
        prefix + screen_digits(registry)[0],
        prefix + digit_span(registry),
        "Screens",
        f"app.switch_mode('{registry[0].mode}')",
        True,
        "Switch screen: " + screen_list(registry),
    )


class WorkbenchFooter(FooterOnBindings):
    # The lineup last composed: the entries, the more key's display (None: nothing cut) and
    # whether the palette key is enabled (None: not shown).
    composed_lineup: tuple[tuple[Entry, ...], str | None, bool | None] | None = None
    # Set once the screen's bindings were first announced (composing before shows nothing).
    bindings_ready = False

    def registry(self) -> Registry:
        """The app's screens (GnoApp.SCREEN_REGISTRY), whose keys the footer shows; none in
        an app without screen keys."""
        registry: Registry = getattr(self.app, "SCREEN_REGISTRY", ())
        return registry

    def ranks(self) -> dict[str, tuple[int, int]]:
        """Binding id -> (rank, declared place) of the app's and the screen's commands: the
        footer's order, ties in the order the commands are declared."""
        commands: Iterable[WorkbenchCommand] = (
            *global_commands(self.registry()),
            *getattr(self.screen, "COMMANDS_LIST", ()),
        )
        return {c.id: (c.rank, place) for place, c in enumerate(commands)}

    def typing(self) -> bool:
        """Whether the focus is in a text box, where letters, digits and ? are text."""
        return isinstance(self.app.focused, Input | TextArea)

    def entries(self, bindings: Mapping[str, ActiveBinding]) -> list[Entry]:
        """Every shown binding of the screen (`bindings`: its active bindings), and quit, in
        the footer's order (see the module's docstring)."""
        ranks = self.ranks()
        unranked = (LESS_USED, len(ranks))  # a widget's own shown binding: after the verbs
        typing = self.typing()
        registry = self.registry()
        ranked: list[tuple[tuple[int, int], Entry]] = (
            [((FIRST, -1), screens_entry(registry, typing))] if registry else []
        )
        seen: set[str] = set()
        for _, binding, enabled, tooltip in bindings.values():
            quits = binding.action in QUIT_ACTIONS
            leaves = typing and binding.key == "escape"
            if not (binding.show or quits or leaves) or binding.action in seen:
                continue
            if binding.action.startswith(SWITCH_ACTION):
                continue  # one entry for them all (screens_entry)
            display = self.app.get_key_display(binding)
            if typing and is_text(binding.key, display):
                continue  # typed into the box (its other key, F1 say, may still show)
            seen.add(binding.action)
            entry = Entry(
                binding.key,
                display,
                QUIT.title if quits else binding.description,
                binding.action,
                enabled,
                QUIT.help if quits else tooltip or binding.tooltip or binding.description,
            )
            if quits:
                rank = (QUIT.rank, 0)
            elif leaves:
                rank = (FIRST, 0)  # after the screen keys: the way out of the box first
            elif binding.action == HELP_ACTION:
                rank = (FIRST, -2)  # ahead of the screen keys
            else:
                rank = ranks.get(binding.id or "", unranked)
            ranked.append((rank, entry))
        ranked.sort(key=lambda pair: pair[0])
        return [entry for _, entry in ranked]

    def fitting(self, entries: list[Entry], more: str) -> tuple[list[Entry], bool]:
        """The entries shown, and whether some were left out. All if they fit; else the first
        that fit (a prefix: the footer reads in the order of use), then quit, with room kept
        for the more key (showing `more`)."""
        room = (self.size.width or self.app.size.width) - PALETTE_WIDTH
        if sum(entry.width for entry in entries) <= room:
            return entries, False
        kept = [entry for entry in entries if entry.action in QUIT_ACTIONS]
        room -= more_width(more) + sum(entry.width for entry in kept)
        shown: list[Entry] = []
        for entry in entries:
            if entry in kept:
                continue
            if entry.width > room:
                break  # the rest is of lower rank: it waits in the help and the palette
            room -= entry.width
            shown.append(entry)
        return [*shown, *kept], True

    def lineup(
        self, bindings: Mapping[str, ActiveBinding] | None = None
    ) -> tuple[tuple[Entry, ...], str | None, bool | None]:
        """What the footer shows: the entries that fit, the more key's display (None: all
        fit) and the palette key (None: none). The screen's active bindings are worked out
        once here (each time asks every screen command whether it is enabled: the most of a
        lineup's time)."""
        if bindings is None:
            bindings = self.screen.active_bindings
        palette = bindings.get(self.app.COMMAND_PALETTE_BINDING)
        shown = self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE and palette
        more = "f1" if self.typing() else "?"  # inside a text box ? is text; F1 works there
        entries, cut = self.fitting(self.entries(bindings), more)
        return (
            tuple(entries),
            more if cut else None,
            palette.enabled if shown and palette else None,
        )

    def compose(self) -> ComposeResult:
        if not self.bindings_ready:
            return
        bindings = self.screen.active_bindings
        self.composed_lineup = entries, more, palette_enabled = self.lineup(bindings)
        for entry in entries:
            yield self.footer_key(
                FooterKey(
                    entry.key,
                    entry.display,
                    entry.description,
                    entry.action,
                    disabled=not entry.enabled,
                    tooltip=entry.tooltip,
                )
            )
        if more is not None:
            tooltip = "More keys than fit here: the help (F1 or ?) lists every one"
            yield self.footer_key(MoreKey("f1", more, "more", HELP_ACTION, tooltip=tooltip))
        palette = bindings.get(self.app.COMMAND_PALETTE_BINDING)
        if palette_enabled is not None and palette:
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

    def footer_key(self, key: FooterKey) -> FooterKey:
        # The footer's style given as the key's starting value, not data-bound as Textual's
        # footer does: a binding restyles each key once more as it mounts.
        key.set_reactive(FooterKey.compact, self.compact)
        return key

    def screen_bindings_changed(self, screen: Screen[object]) -> None:
        """Textual recomposes the footer whenever the screen's bindings may have changed: on
        every focus move and every time the screen is shown again. Here only when what it
        shows did change: a recompose mounts a dozen widgets, most of a screen switch's time."""
        self.bindings_ready = True
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            self.call_after_refresh(self.recompose_if_changed)

    async def recompose_if_changed(self) -> None:
        if self.is_attached and self.lineup() != self.composed_lineup:
            await self.recompose()

    def on_resize(self, event: events.Resize) -> None:
        # What fits depends on the width: choose again.
        if self.bindings_ready:
            self.call_after_refresh(self.recompose_if_changed)
