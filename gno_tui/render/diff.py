"""Word diffs as rich Text: what a proposal or a newer version changes, word by word, inline
(one text, removals struck through) or split (old and new apart)."""

from __future__ import annotations

import difflib
import re

from rich.text import Text

_WORDS = re.compile(r"\S+|\s+")


def append_unchanged(
    out: Text, tokens: list[str], context: int | None, *, first: bool, last: bool
) -> None:
    """An unchanged run of words (and the spaces between), cut to `context` words on each
    side of the changes around it (None: all of it); what is cut shows as a dim "…"."""
    words = [index for index, token in enumerate(tokens) if not token.isspace()]
    head = 0 if first else context
    tail = 0 if last else context
    if context is None or len(words) <= (head or 0) + (tail or 0) + 1:
        out.append("".join(tokens))
        return
    assert head is not None and tail is not None
    cut_from = words[head]
    # Kept: the words before the cut with the space after them, the `tail` words after it;
    # with no tail words, the space after the last word (it separates the next change).
    resume_at = words[len(words) - tail] if tail else words[-1] + 1
    out.append("".join(tokens[:cut_from]))
    out.append("… " if tail else "…", style="dim")
    out.append("".join(tokens[resume_at:]))


def word_diff(old: str, new: str, context: int | None = None) -> Text:
    """`new` against `old`: removed words struck through in red, added words green;
    unchanged runs cut to `context` words around each change (None: whole text)."""
    before, after = _WORDS.findall(old), _WORDS.findall(new)
    out = Text()
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    codes = matcher.get_opcodes()
    for position, (op, a0, a1, b0, b1) in enumerate(codes):
        if op == "equal":
            append_unchanged(out, before[a0:a1], context, first=position == 0,
                             last=position == len(codes) - 1)  # fmt: skip
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


def split_diff(old: str, new: str, context: int | None = None) -> tuple[Text, Text]:
    """`old` with its removed words struck through in red, `new` with its added words green;
    unchanged runs cut to `context` words around each change (None: whole text)."""
    before, after = _WORDS.findall(old), _WORDS.findall(new)
    left, right = Text(), Text()
    matcher = difflib.SequenceMatcher(a=before, b=after, autojunk=False)
    codes = matcher.get_opcodes()
    for position, (op, a0, a1, b0, b1) in enumerate(codes):
        if op == "equal":
            ends = {"first": position == 0, "last": position == len(codes) - 1}
            append_unchanged(left, before[a0:a1], context, **ends)
            append_unchanged(right, after[b0:b1], context, **ends)
            continue
        if op in ("delete", "replace"):
            left.append("".join(before[a0:a1]), style="strike red")
        if op in ("insert", "replace"):
            right.append("".join(after[b0:b1]), style="bold green")
    return left, right


# Below this share of words in common, a word diff interleaves two unrelated texts into
# nonsense ("Alice ~~prefers green~~ drinks tea ~~in the morning~~"): the texts are shown apart.
SHARED_ENOUGH = 0.5


def shared_words(old: str, new: str) -> float:
    """The share of words the two texts have in common, in order (0 to 1, case aside)."""
    before, after = old.lower().split(), new.lower().split()
    return difflib.SequenceMatcher(a=before, b=after, autojunk=False).ratio()


def pair_diff(
    old: str, new: str, labels: tuple[str, str] = ("old", "new"), indent: str = ""
) -> Text:
    """A word diff of `new` against `old` when they share enough words; otherwise both texts
    whole, one under the other, each named by its label (a weak pair reads better apart).
    Every line starts with `indent`."""
    if shared_words(old, new) >= SHARED_ENOUGH:
        return Text(indent).append_text(word_diff(old, new))
    width = max(len(label) for label in labels)
    out = Text()
    for label, text, style in ((labels[0], old, "red"), (labels[1], new, "green")):
        out.append(f"{indent}{label:<{width}} ", style=f"dim {style}")
        out.append(text)
        out.append("\n")
    out.append(f"{indent}little in common: shown apart, not as a word diff", style="dim")
    return out
