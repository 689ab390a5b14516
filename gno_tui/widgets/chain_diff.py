"""A supersession chain as text: each version, and the word diff from the one before it,
inline (one text, removals struck through) or split (old | new side by side)."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from engine.contract.normalize import iso_utc
from gno_tui.widgets.word_diff import append_unchanged, changed_words, word_diff

_WORDS = re.compile(r"\S+|\s+")


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


def chain_diff(versions: Sequence[Any], *, selected: int, as_of_id: str | None,
               split: bool, context: int | None = None) -> RenderableType:  # fmt: skip
    parts: list[RenderableType] = []
    for index, version in enumerate(versions):
        chosen = index == selected
        head = Text(f"{'▶' if chosen else ' '} v{index + 1} {version.docid}  "
                    f"{iso_utc(version.created_at)}  by {version.caller}",
                    style="bold reverse" if chosen else "bold")  # fmt: skip
        keyed = version.workbench.get("keyed")
        if isinstance(keyed, dict) and keyed.get("key"):
            head.append(f"  key {keyed['key']} rev {keyed.get('revision', 1)}", style="cyan")
            if keyed.get("topic"):
                head.append(f" · topic {keyed['topic']}", style="cyan")
            if keyed.get("tags"):
                head.append(f" · tags {', '.join(keyed['tags'])}", style="cyan")
        if version.expires_at is not None:
            head.append(f"  expires {iso_utc(version.expires_at)}", style="yellow")
        if version.record_id == as_of_id:
            head.append("  ◆ as of", style="bold magenta")
        parts.append(head)
        if index == 0:
            parts.append(Text(version.text))
        else:
            before = versions[index - 1].text
            parts.append(Text(f"  {changed_words(before, version.text)} word(s) changed "
                              f"from v{index}:", style="dim"))  # fmt: skip
            if split:
                table = Table.grid(expand=True, padding=(0, 2))
                table.add_column(ratio=1)
                table.add_column(ratio=1)
                table.add_row(Text(f"v{index}", style="dim"), Text(f"v{index + 1}", style="dim"))
                table.add_row(*split_diff(before, version.text, context))
                parts.append(table)
            else:
                parts.append(word_diff(before, version.text, context))
        notes = Text()
        if version.source:
            notes.append(f"  source: {version.source}\n", style="dim")
        if version.retired_at:
            notes.append(f"  retired {iso_utc(version.retired_at)} by {version.retired_by}: "
                         f"{version.retired_reason}\n", style="yellow")  # fmt: skip
        parts.append(notes)
    return Group(*parts)
