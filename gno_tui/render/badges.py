"""Small rich renderings shared by the recall, chain and receipts screens."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from rich.text import Text

from engine.facade import iso_utc

# Egress policies, strictest first, with the colour of their badge.
POLICY_STYLES = {"local_only": "bold green", "lan": "bold yellow", "remote": "bold red"}


def egress_badge(policy: str) -> Text:
    """A coloured badge for an egress policy: local_only (green) < lan (yellow) < remote (red)."""
    return Text(f" {policy} ", style=f"{POLICY_STYLES.get(policy, 'bold')} reverse")


def short_hash(value: str, length: int = 10) -> str:
    return value[:length] + "…" if len(value) > length else value


def clip(text: str, width: int) -> str:
    """One line of at most `width` characters, with an ellipsis when cut."""
    line = " ".join(text.split())
    return line if len(line) <= width else line[: width - 1] + "…"


def check_mark(ok: bool, yes: str = "yes", no: str = "no") -> Text:
    return Text(f"✓ {yes}", style="bold green") if ok else Text(f"✗ {no}", style="bold red")


def field_lines(fields: Sequence[tuple[str, str | Text]], width: int = 10) -> Text:
    """`name  value` lines with the names right-aligned and coloured, as in detail panes."""
    out = Text()
    for name, value in fields:
        out.append(f"{name:>{width}} ", style="bold cyan")
        out.append(value if isinstance(value, Text) else str(value))
        out.append("\n")
    return out


def stamp(moment: datetime | None) -> str:
    """A stored time as ISO 8601 UTC (a fact's required times are never None; "—" if one is)."""
    return "—" if moment is None else iso_utc(moment)
