"""Characters a person cannot see in a fact's text: zero-width characters, bidi controls and
non-breaking spaces. They change the contentHash (and can hide instructions), so the workbench
warns about them before a write."""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass

ZERO_WIDTH = {0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF, 0x180E, 0x00AD}
BIDI_CONTROLS = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
NON_BREAKING = {0x00A0, 0x2007, 0x202F}


@dataclass(frozen=True)
class HiddenChar:
    index: int
    char: str
    kind: str  # zero-width | bidi control | non-breaking space | control

    @property
    def label(self) -> str:
        name = unicodedata.name(self.char, "")
        return f"U+{ord(self.char):04X}" + (f" {name}" if name else "")


def find_hidden(text: str) -> list[HiddenChar]:
    found = []
    for index, char in enumerate(text):
        code = ord(char)
        if code in ZERO_WIDTH:
            kind = "zero-width"
        elif code in BIDI_CONTROLS:
            kind = "bidi control"
        elif code in NON_BREAKING:
            kind = "non-breaking space"
        elif unicodedata.category(char) == "Cc" and char not in "\n\t\r":
            kind = "control"
        else:
            continue
        found.append(HiddenChar(index, char, kind))
    return found


def hidden_summary(text: str) -> str:
    """One line for the status bar, or "" when the text is clean."""
    found = find_hidden(text)
    if not found:
        return ""
    kinds: dict[str, int] = {}
    for hidden in found:
        kinds[hidden.kind] = kinds.get(hidden.kind, 0) + 1
    parts = ", ".join(f"{count} {kind}" for kind, count in kinds.items())
    first = found[0]
    return f"hidden characters: {parts} (first at {first.index}: {first.label})"
