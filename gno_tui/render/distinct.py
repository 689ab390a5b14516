"""Cells cut to a column's width so that a person can still tell the rows apart.

A plain cut keeps the start of each text: twenty proposals that begin "Alice prefers dark
theme in the editor, variant" then all read the same. Here a text that shares its start with
another row's, further than the width shows, keeps a short head and leaves out the shared
middle ("Alice…variant 17 of the settings file"), so the part where the rows differ is in
view. Anything cut says so with an ellipsis. Cells are `str` or rich `Text` (its styles kept).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TypeVar

from rich.cells import cell_len, set_cell_size
from rich.text import Text

ELLIPSIS = "…"
AFTER = 6  # characters past the first difference that must show for a plain cut to do
HEAD_SHARE = 4  # the kept head is at most a quarter of the width (a word or two)

Cell = TypeVar("Cell", str, Text)


def plain(cell: object) -> str:
    return cell.plain if isinstance(cell, Text) else str(cell)


def clip(cell: Cell, width: int) -> Cell:
    """`cell` cut to `width` cells, ending in an ellipsis when anything was left out."""
    text = plain(cell)
    if cell_len(text) <= width:
        return cell
    if isinstance(cell, Text):
        cut = cell.copy()
        cut.truncate(width, overflow="ellipsis")
        return cut
    return set_cell_size(text, max(width - 1, 0)) + ELLIPSIS if width > 0 else ""


def differs_at(texts: Sequence[str]) -> list[int]:
    """For each text, how far it agrees with the row most like it (the longest prefix it
    shares with any other text): the first character that tells it apart. The closest text is
    a neighbour in sorted order, so this is one sort, not every pair."""
    order = sorted(range(len(texts)), key=lambda i: texts[i])
    shared = [0] * len(texts)
    for before, after in pairwise(order):
        length = _common_prefix(texts[before], texts[after])
        shared[before] = max(shared[before], length)
        shared[after] = max(shared[after], length)
    return shared


def _common_prefix(first: str, second: str) -> int:
    length = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        length += 1
    return length


def distinguish(cells: Sequence[object], width: int) -> list[str | Text]:
    """Every cell cut to `width`, each showing where it differs from the rows like it."""
    texts = [plain(cell) for cell in cells]
    return [
        elide(cell, width, at) if isinstance(cell, Text) else elide(str(cell), width, at)
        for cell, at in zip(cells, differs_at(texts), strict=True)
    ]


def fit_cell(cell: object, width: int) -> object:
    """A table cell cut to `width` (a text or a string; anything else is left to the table)."""
    if isinstance(cell, Text):
        return clip(cell, width)
    return clip(cell, width) if isinstance(cell, str) else cell


def elide(cell: Cell, width: int, at: int) -> Cell:
    """`cell` in `width` cells with its character `at` (where it differs from its closest row)
    in view: a plain cut when that shows it, else a short head, an ellipsis for the shared
    middle and the text from the word before the difference on."""
    text = plain(cell)
    if cell_len(text) <= width or cell_len(text) != len(text):  # wide characters: plain cut
        return clip(cell, width)
    if at + min(AFTER, len(text) - at) <= width - 1:
        return clip(cell, width)
    head = _head(text, width)
    room = width - head - 1  # after the head and the ellipsis
    start = _tail_start(text, at, room)
    if start <= head or room < AFTER:
        return clip(cell, width)
    tail = cell[start:]
    if len(text) - start > room:
        tail = clip(tail, room)
    else:  # room to spare: a longer head, up to a whole word before the tail
        spare = room - (len(text) - start)
        head = max(head, text.rfind(" ", 0, min(head + spare, start - 1) + 1))
    return cell[:head] + ELLIPSIS + tail


def _head(text: str, width: int) -> int:
    """Where the kept head ends: after the last whole word within a quarter of the width (0:
    none, when the first word is longer)."""
    space = text.rfind(" ", 0, width // HEAD_SHARE + 1)
    return space if space > 0 else 0


def _tail_start(text: str, at: int, room: int) -> int:
    """Where the shown tail starts: at the word before the one that differs (context for the
    difference), further back when the rest of the text leaves room, always at a word."""
    word = text.rfind(" ", 0, at) + 1  # the start of the word that differs
    before = text.rfind(" ", 0, max(word - 1, 0)) + 1  # and of the word before it
    start = before if at - before < room // 2 else word
    if at - start >= room - AFTER:  # one long word: start just before the difference
        start = max(at - (room - AFTER), 0)
    if len(text) - start < room:  # the end is in view: use the room to show more before it
        earliest = len(text) - room
        at_word = earliest == 0 or text[earliest - 1] == " "
        space = earliest - 1 if at_word else text.find(" ", earliest)
        start = space + 1 if 0 <= space + 1 < start else start
    return start
