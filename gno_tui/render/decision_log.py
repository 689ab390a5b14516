"""The decision log as rows and a detail: who decided what, when, and before/after."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from rich.text import Text

LOG_COLUMNS = ("when", "who", "what", "target", "before", "after")


Facts = dict[str, tuple[str, str]]  # a fact's uri -> (docid, text)


def fact_uris(target: str) -> list[str]:
    """The facts an entry's target names: one uri, or two joined by | (a duplicate pair);
    none for a proposal (`proposal:12`) or a receipt."""
    return [part for part in target.split("|") if part.startswith("gno://")]


def target_name(entry: Mapping[str, Any], facts: Facts) -> str:
    """What a decision acted on, as a person reads it: #docid and the start of the fact's
    text (a pair: both docids), a proposal's number and text; the raw target otherwise."""
    target, detail = entry["target"], entry.get("detail") or {}
    uris = fact_uris(target)
    if uris and all(uri in facts for uri in uris):
        if len(uris) > 1:
            return " · ".join(facts[uri][0] for uri in uris)
        docid, text = facts[uris[0]]
        return f"{docid} {_short(text, 60)}"
    if target.startswith("proposal:"):
        text = (detail.get("before") or {}).get("text") or ""
        return f"proposal #{target.removeprefix('proposal:')} {_short(text, 50)}".rstrip()
    return str(target)


def log_cells(entry: Mapping[str, Any], facts: Facts | None = None) -> list[str]:
    """LOG_COLUMNS for one entry of the log (`facts` names its target)."""
    detail = entry.get("detail") or {}
    return [
        (entry["at"] or "")[:19].replace("T", " "),
        entry["actor"],
        entry["action"],
        _short(target_name(entry, facts or {}), 60),
        _short(_compact(detail.get("before")), 30),
        _short(_compact(detail.get("after", _rest(detail))), 40),
    ]


def log_detail(entry: Mapping[str, Any], facts: Facts | None = None) -> Text:
    text = Text()
    text.append(f"{entry['action']} by {entry['actor']} at {entry['at']}\n", style="bold")
    for uri in fact_uris(entry["target"]):
        if uri in (facts or {}):
            docid, whole = (facts or {})[uri]
            text.append(f"{docid} {' '.join(whole.split())}\n")
    text.append(f"target: {entry['target']}\n", style="dim")
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
