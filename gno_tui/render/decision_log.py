"""The decision log as rows and a detail: who decided what, when, and before/after."""

from __future__ import annotations

import json
from typing import Any

from rich.text import Text

LOG_COLUMNS = ("when", "who", "what", "target", "before", "after")


def log_cells(entry: dict[str, Any]) -> list[str]:
    """LOG_COLUMNS for one entry of the log."""
    detail = entry.get("detail") or {}
    return [
        (entry["at"] or "")[:19].replace("T", " "),
        entry["actor"],
        entry["action"],
        _short(entry["target"], 40),
        _short(_compact(detail.get("before")), 30),
        _short(_compact(detail.get("after", _rest(detail))), 40),
    ]


def log_detail(entry: dict[str, Any]) -> Text:
    text = Text()
    text.append(f"{entry['action']} by {entry['actor']} at {entry['at']}\n", style="bold")
    text.append(f"target: {entry['target']}\n")
    # The batch tag is the journal's own (one undo step); its value means nothing to a person.
    detail = {k: v for k, v in (entry.get("detail") or {}).items() if k != "batch"}
    if "batch" in (entry.get("detail") or {}):
        text.append("one undo step with the rest of its batch\n", style="dim")
    text.append(json.dumps(detail, ensure_ascii=False, sort_keys=True))
    return text


def _rest(detail: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in detail.items() if k != "before"}


def _compact(value: Any) -> str:
    if value in (None, {}, ""):
        return "—"
    if isinstance(value, dict):
        return " ".join(f"{k}={_compact(v)}" for k, v in value.items() if v is not None)
    if isinstance(value, list):
        return ",".join(_compact(v) for v in value)
    return str(value)


def _short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"
