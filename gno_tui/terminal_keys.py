"""What the terminal's bytes for alt+digit become in the workbench.

Terminals that speak plain xterm (tmux, checked here; xterm and most Linux terminals; macOS
terminals set to use Option as Meta) send alt+3 as ESC followed by "3", the same bytes as
escape and 3 typed quickly. Textual reads those bytes as the character macOS types for
Option+3 ("£", and "¡™¢∞§" for 1, 2, 4, 5, 6), a mapping meant for WezTerm on macOS. In the
workbench that turned the documented screen keys (alt+1 ... alt+6, which also work inside a
text box) into junk typed into the box. `route_escape_digits_as_alt` drops those six entries,
so the parser's own rule applies: ESC then a character is alt+character.

The cost, written down in docs/decisions.md ("Keys inside a text box"): in WezTerm on macOS,
Option+1 ... Option+6 switch screens instead of typing ¡™£¢∞§. A "£" typed as a character
(shift+3 on a UK keyboard) is one byte sequence of its own and is not affected.
"""

from __future__ import annotations

from textual import _ansi_sequences

# The digits whose screen keys exist (gno_tui.workbench_commands.SCREEN_MODES).
SCREEN_DIGITS = "123456"


def route_escape_digits_as_alt() -> None:
    """Make ESC + 1..6 reach the app as alt+1 .. alt+6. Idempotent."""
    # The table is typed as a read-only Mapping but is a module-level dict; Textual reads it
    # at every key, so removing the entries takes effect for every parser made afterwards.
    table = _ansi_sequences.ANSI_SEQUENCES_KEYS
    assert isinstance(table, dict)
    for digit in SCREEN_DIGITS:
        table.pop("\x1b" + digit, None)
