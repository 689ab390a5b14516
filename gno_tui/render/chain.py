"""A supersession chain as text: its table rows, its status line, and each version with the
word diff from the one before it, inline (one text, removals struck through) or split (old |
new side by side)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from engine.facade import FactRecord, iso_utc, status_of
from gno_tui.render.badges import stamp
from gno_tui.render.diff import changed_words, split_diff, word_diff


def chain_row(
    versions: Sequence[FactRecord], index: int, now: datetime, as_of_id: str | None
) -> list[str | Text]:
    """The chain table's cells for version `index`: v, docid, created, writer, relation,
    state, text; ◆ marks the version current at the as-of time."""
    version = versions[index]
    state = status_of(version, now)
    relation = f"supersedes {versions[index - 1].docid}" if index else "original"
    if index == len(versions) - 1:
        relation += " · head"
    marker = "◆" if version.record_id == as_of_id else " "
    style = "" if state == "current" else "dim"
    return [
        Text(f"{marker}{index + 1}", style="bold magenta" if marker != " " else ""),
        version.docid,
        stamp(version.created_at)[:16].replace("T", " "),
        version.caller,
        relation,
        Text(state, style=style),
        Text(" ".join(version.text.split()), style=style),  # whole: the table cuts it
    ]


def chain_status(
    versions: Sequence[FactRecord], now: datetime, as_of: datetime | None, as_of_id: str | None
) -> Text:
    """The line above the chain: its length and head, and what the as-of time found."""
    if not versions:
        return Text("No fact chosen.")
    head = versions[-1]
    out = Text(
        f"chain of {len(versions)} version(s) · head {head.docid} "
        f"({status_of(head, now)}) · {head.uri}"
    )
    if as_of is not None:
        out.append("\nas of ", style="bold magenta")
        out.append(iso_utc(as_of), style="bold magenta")
        out.append(" (record time): ")
        index = next((i for i, v in enumerate(versions) if v.record_id == as_of_id), None)
        if index is None:
            out.append("no version of this fact was current then", style="yellow")
        else:
            out.append(f"◆ v{index + 1} {versions[index].docid} was current", style="bold")
    return out


def chain_diff(versions: Sequence[FactRecord], *, selected: int, as_of_id: str | None,
               split: bool, context: int | None = None) -> RenderableType:  # fmt: skip
    parts: list[RenderableType] = []
    for index, version in enumerate(versions):
        chosen = index == selected
        head = Text(f"{'▶' if chosen else ' '} v{index + 1} {version.docid}  "
                    f"{stamp(version.created_at)}  by {version.caller}",
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
