"""What the terminal's bytes for alt+digit become in the workbench.

Terminals that speak plain xterm (tmux, checked here; xterm and most Linux terminals; macOS
terminals set to use Option as Meta) send alt+3 as ESC followed by "3", the same bytes as
escape and 3 typed quickly. Textual reads those bytes as the character macOS types for
Option+3 ("£", and "¡™¢∞§" for 1, 2, 4, 5, 6), a mapping meant for WezTerm on macOS. In the
workbench that turned the documented screen keys (alt+1 ... alt+6, which also work inside a
text box) into junk typed into the box. `route_escape_digits_as_alt` maps those six
sequences to alt+1 ... alt+6 themselves. (Dropping them let the parser's own rule apply, ESC
then a character is alt+character, but only once its escape delay had passed: every alt+digit
waited 100 ms for bytes that never come, measured in tmux as 180 ms from key to screen
against 75 ms for the bare digit.)

The cost, written down in docs/decisions.md ("Keys inside a text box"): in WezTerm on macOS,
Option+1 ... Option+6 switch screens instead of typing ¡™£¢∞§. A "£" typed as a character
(shift+3 on a UK keyboard) is one byte sequence of its own and is not affected.
"""

from __future__ import annotations

from enum import StrEnum

from textual import _ansi_sequences

# The digits whose screen keys exist (gno_tui.workbench_commands.SCREEN_MODES).
SCREEN_DIGITS = "123456"


class AltDigit(StrEnum):
    """Key names for the table: the parser makes a key event of each entry's `.value`, as it
    does for Textual's own `Keys`, with no character (nothing is typed into a text box)."""

    ALT_1 = "alt+1"
    ALT_2 = "alt+2"
    ALT_3 = "alt+3"
    ALT_4 = "alt+4"
    ALT_5 = "alt+5"
    ALT_6 = "alt+6"


def route_escape_digits_as_alt() -> None:
    """Make ESC + 1..6 reach the app as alt+1 .. alt+6 at once. Idempotent."""
    # The table is typed as a read-only Mapping of Textual's Keys but is a module-level dict
    # that the parser reads at every key: what it needs of an entry is a tuple of items with
    # a `.value`, the key's name.
    table = _ansi_sequences.ANSI_SEQUENCES_KEYS
    assert isinstance(table, dict)
    for digit in SCREEN_DIGITS:
        table["\x1b" + digit] = (AltDigit(f"alt+{digit}"),)
