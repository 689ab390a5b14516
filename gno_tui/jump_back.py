"""Jump back, a part of GnoApp: enter on a fact (Library, Recall), `:` or the Chain's own key
(5) opens a chain; on the Chain screen `ctrl+o` or `backspace` (and `escape`, from the
versions) returns to the screen, and the row, it was opened from. Several jumps stack up, as
in vim's jump list and tig."""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from textual.app import App
from textual.css.query import NoMatches
from textual.widget import AwaitMount

from gno_tui.widgets.fact_table import FactTable
from screens.supersession import SupersessionScreen

CHAIN_MODE = "supersession"
JUMPS_KEPT = 50  # older places are forgotten: nobody goes back fifty chains


@dataclass(frozen=True)
class Place:
    mode: str
    table: str | None  # the list that had the focus (its id), if one had
    key: str | None  # the row under its cursor (a record id): rows move as others write
    chain: str | None  # the chain shown, when the place is the Chain screen


class JumpBack(App[None]):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.jumps: list[Place] = []

    def remember_place(self) -> None:
        """As a chain opens: where the person is, to come back to."""
        screen = self.screen
        focused = screen.focused
        table = focused if isinstance(focused, FactTable) else None
        chain = screen.ref if isinstance(screen, SupersessionScreen) else None
        place = Place(
            self.current_mode,
            table.id if table is not None else None,
            table.key_at_cursor() if table is not None else None,
            chain,
        )
        if not self.jumps or self.jumps[-1] != place:
            self.jumps = [*self.jumps[-(JUMPS_KEPT - 1) :], place]

    def switch_mode(self, mode: str) -> AwaitMount:
        """Coming to the Chain by its key (5, or the palette) is a jump too: escape or ctrl+o
        there returns to the screen and row the person came from. Unless the chain was opened
        from that same screen (enter, then back there and 5): back goes to the fact it was
        opened on, not to wherever the cursor wandered since."""
        came_from = self.current_mode
        # From a screen: not from Textual's mode before the first screen was shown.
        on_a_screen = came_from != self.DEFAULT_MODE
        to_chain = mode == CHAIN_MODE and on_a_screen and came_from != CHAIN_MODE
        if to_chain and (not self.jumps or self.jumps[-1].mode != came_from):
            self.remember_place()
        return super().switch_mode(mode)

    def action_jump_back(self, quiet: bool = False) -> None:
        """Back to the latest place a chain was opened from; `quiet` (escape): nothing said
        when there is none, as escape on a screen with nothing to leave."""
        if not self.jumps:
            if not quiet:
                self.notify(
                    "Nothing to go back to: ctrl+o returns to where enter (or :) opened a chain.",
                )
            return
        place = self.jumps.pop()
        self.switch_mode(place.mode)
        screen = self.screen
        if isinstance(screen, SupersessionScreen) and place.chain and place.chain != screen.ref:
            screen.open(place.chain)
        if place.table is None:
            return
        with suppress(NoMatches):  # a list that is gone (never, today): the screen as it is
            table = screen.query_one(f"#{place.table}", FactTable)
            # By key: a reload meanwhile (another process wrote) moved the rows.
            table.place_cursor(place.key, table.cursor_row)
            table.focus()
