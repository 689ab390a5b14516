"""Receipts and collections as rich Text (Recall and Receipts screens): a receipt and its
verification, its state in the list, the fence verdict, and an effective egress policy."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from rich.text import Text

from engine.facade import ReceiptCheck
from gno_tui.render.badges import check_mark, egress_badge, field_lines, short_hash


def receipt_text(receipt: Mapping[str, Any], check: ReceiptCheck | None, *, keys: str) -> Text:
    """The receipt's fields; with `check`, the verdict: digest, stored, and drifted ids."""
    out = Text()
    out.append("Receipt", style="bold underline")
    out.append(f"  ({keys})\n", style="dim")
    ids = "\n".join(receipt["memoryIds"]) or "—"
    fields = [("caller", receipt["caller"]), ("session", receipt["session"]),
              ("issuedAt", receipt["issuedAt"]), ("digest", receipt["digest"]),
              ("memoryIds", ids)]  # fmt: skip
    out.append(field_lines(fields))
    if check is None:
        return out
    out.append("\nVerified\n", style="bold underline")
    digest = check_mark(check.digest_ok, "matches", "does not match")
    stored = check_mark(check.stored, "issued here", "not stored")
    out.append(field_lines([("digest", digest), ("stored", stored)]))
    if check.drifted:
        out.append(
            f"{len(check.drifted)} of {len(receipt['memoryIds'])} id(s) changed since issue:\n",
            style="bold yellow",
        )
        for record_id, why in check.drifted.items():
            out.append(f"  {record_id}: {why}\n", style="yellow")
    else:
        out.append("no drift: every fact is still current\n", style="green")
    return out


def issued_cell(issued_at: str, now: datetime) -> str:
    """When a receipt was issued, as the list shows it (as mail clients do): today's by the
    time to the second, this year's by day and minute, older ones by date. The detail pane
    and W have the whole time; the room saved goes to who asked (caller and session)."""
    day, time = issued_at[:10], issued_at[11:19]
    if day == now.date().isoformat():
        return time
    if day[:4] == f"{now.year:04d}":
        return f"{day[5:]} {time[:5]}"
    return day


def receipt_state(check: ReceiptCheck | None) -> Text:
    """The receipt list's state cell: unknown, invalid, drifted, or current."""
    if check is None:
        return Text("?", style="dim")
    if not (check.digest_ok and check.stored):
        return Text("invalid", style="bold red")
    if check.drifted:
        return Text(f"drift {len(check.drifted)}", style="yellow")
    return Text("current", style="green")


def fence_verdict(digest: str, fenced: bool) -> Text:
    """Whether remembering a text while presenting the receipt `digest` would be fenced."""
    if fenced:
        return Text(
            f"✗ would be fenced by {short_hash(digest, 12)} (MEMORY_FENCED_REPLAY)",
            style="bold red",
        )
    return Text("✓ not fenced by this receipt", style="bold green")


def effective_text(names: list[str], effective: Mapping[str, Any]) -> Text:
    """The lineage a recall over the collections `names` would carry."""
    out = Text()
    out.append("Effective policy of " + ", ".join(names), style="bold")
    out.append("\n")
    out.append(egress_badge(effective["effectivePolicy"]))
    out.append("  a recall over these would carry this lineage\n")
    for source in effective["sources"]:
        out.append(f"  {source['collection']}: {source['policy']} ({source['source']})\n")
    out.append(f"  digest {short_hash(effective['digest'], 16)}\n", style="dim")
    return out
