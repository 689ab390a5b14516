"""What the terminal's bytes for alt+digit become in the workbench.

Terminals that speak plain xterm (tmux, checked here; xterm and most Linux terminals; macOS
terminals set to use Option as Meta) send alt+3 as ESC followed by "3", the same bytes as
escape and 3 typed quickly. Textual reads those bytes as the character macOS types for
Option+3 ("£", and "¡™¢∞§" for 1, 2, 4, 5, 6), a mapping meant for WezTerm on macOS. In the
workbench that turned the documented screen keys (alt+1, alt+2, ..., which also work inside a
text box) into junk typed into the box. `route_escape_digits_as_alt` maps the sequences of
the screen keys' digits to alt+digit themselves. (Dropping them let the parser's own rule
apply, ESC then a character is alt+character, but only once its escape delay had passed:
every alt+digit waited 100 ms for bytes that never come, measured in tmux as 180 ms from key
to screen against 75 ms for the bare digit.)

The cost, written down in docs/decisions.md ("Keys inside a text box"): in WezTerm on macOS,
Option+1, Option+2, ... switch screens instead of typing ¡™£¢∞§. A "£" typed as a character
(shift+3 on a UK keyboard) is one byte sequence of its own and is not affected.
"""

from __future__ import annotations

from gno_tui.textual_private import add_key_sequences


def alt_digit_sequences(digits: str) -> dict[str, str]:
    """The terminal's bytes for alt+digit (escape, then the digit) and the key they are, for
    each of `digits` (the screen keys': gno_tui.screen_registry.screen_digits)."""
    return {"\x1b" + digit: f"alt+{digit}" for digit in digits}


def route_escape_digits_as_alt(digits: str) -> None:
    """Make ESC + each of `digits` reach the app as alt+digit, at once. Idempotent."""
    add_key_sequences(alt_digit_sequences(digits))
