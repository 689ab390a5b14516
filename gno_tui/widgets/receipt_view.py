"""A recall receipt and its verification as rich Text (Recall and Receipts screens)."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from engine.memory.receipts import ReceiptCheck
from gno_tui.widgets.badges import check_mark, field_lines


def receipt_text(receipt: dict[str, Any], check: ReceiptCheck | None, *, keys: str) -> Text:
    """The receipt's fields; with `check`, the verdict: digest, stored, and drifted ids."""
    out = Text()
    out.append("Receipt", style="bold underline")
    out.append(f"  ({keys})\n", style="dim")
    ids = "\n".join(receipt["memoryIds"]) or "—"
    fields = [("caller", receipt["caller"]), ("session", receipt["session"]),
              ("issuedAt", receipt["issuedAt"]), ("digest", receipt["digest"]),
              ("memoryIds", ids)]  # fmt: skip
    out.append(field_lines(fields))  # type: ignore[arg-type]
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
