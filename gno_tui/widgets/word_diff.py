"""Word diffs as rich Text: what a proposal or a newer version changes, word by word."""

from __future__ import annotations

import difflib
import re

from rich.text import Text

_WORDS = re.compile(r"\S+|\s+")


def word_diff(old: str, new: str) -> Text:
    """`new` against `old`: removed words struck through in red, added words green."""
    before, after = _WORDS.findall(old), _WORDS.findall(new)
    out = Text()
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            out.append("".join(before[a0:a1]))
            continue
        if op in ("delete", "replace"):
            out.append("".join(before[a0:a1]), style="strike red")
        if op in ("insert", "replace"):
            if op == "replace":
                out.append(" ")
            out.append("".join(after[b0:b1]), style="bold green")
    return out


def changed_words(old: str, new: str) -> int:
    """How many words differ: a quick size of a change for lists."""
    before, after = old.split(), new.split()
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    return sum(
        max(a1 - a0, b1 - b0) for op, a0, a1, b0, b1 in matcher.get_opcodes() if op != "equal"
    )
