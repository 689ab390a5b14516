"""What the Library shows of a fact: its row in the table and every field in the detail
pane."""

from __future__ import annotations

from datetime import datetime

from rich.text import Text

from engine.facade import FactRecord, collapse_text, is_stale, iso_utc, status_at, status_of
from gno_tui.render.badges import stamp

# The table's columns and their widths (fact_cells fills them); the summary takes the room
# the others leave (screens/library.py), from SUMMARY_LEAST cells up.
SUMMARY_LEAST = 24
COLUMNS = (
    ("summary", 36),
    ("scopes", 18),
    ("collection", 10),
    ("status", 10),
    ("provenance", 20),
    ("use policy", 13),
    ("conf.", 5),
    ("created", 16),
    ("caller", 16),
)
# When the table is too narrow for every column, the lowest ranks stay (the detail pane has
# every field): what a fact says and whether it is current come first.
COLUMN_RANKS = {"summary": 0, "status": 1, "scopes": 2, "conf.": 3, "collection": 4,
                "use policy": 5, "provenance": 6, "created": 7, "caller": 8}  # fmt: skip
# The status tabs: (key, label); "attention" is agent facts awaiting confirmation + stale.
TABS = (
    ("all", "All"),
    ("current", "Current"),
    ("attention", "Needs attention"),
    ("superseded", "Superseded"),
    ("retired", "Retired"),
    ("expired", "Expired"),
)


def shown_status(row: FactRecord, now: datetime, as_of: datetime | None = None) -> str:
    """The status the Library shows, in the row and the detail header alike: current, stale
    (current, its freshness run out), superseded, retired or expired; as of a past time, the
    one it had then."""
    status = status_of(row, now) if as_of is None else status_at(row, as_of)
    return "stale" if status == "current" and is_stale(row, as_of or now) else status


def fact_cells(
    row: FactRecord, now: datetime, marked: bool = False, as_of: datetime | None = None
) -> list[Text]:
    """The row's cells; a marked fact's summary starts with ●."""
    status = shown_status(row, now, as_of)
    style = "" if status == "current" else "dim"
    provenance = row.workbench.get("provenance", {})
    policy = row.workbench.get("usePolicy", {})
    use = ("instr" if policy.get("canUseAsInstruction") else "evid") + (
        "·confirm?" if policy.get("requiresUserConfirmation") else ""
    )
    cells = [
        # The table cuts the summary to the room it has, showing where alike rows differ.
        ("● " if marked else "") + collapse_text(row.text),
        ",".join(row.scopes)[:18],
        row.collection,
        status,
        f"{provenance.get('status', '?')}/{provenance.get('createdBy', '?')}",
        use,
        f"{float(provenance.get('confidence', 0)):.2f}",
        stamp(row.created_at)[:16].replace("T", " "),
        row.caller,
    ]
    return [Text(str(cell), style=style) for cell in cells]


def detail_text(
    row: FactRecord,
    now: datetime,
    path: str,
    recalled: int,
    last_by: str | None,
    as_of: datetime | None = None,
) -> Text:
    """Every field of the fact, with where its file is and how often it was recalled; the
    header's status is the row's (shown_status). As of a past moment, what happened to the
    fact after it (superseded, retired) is named as later, never as its state then."""
    status = shown_status(row, now, as_of)
    lines = Text()
    lines.append(f"{row.docid}  {status}\n", style="bold")
    if as_of is not None:
        then = f"as of {iso_utc(as_of)} (read-only); now {shown_status(row, now)}\n"
        lines.append(then, style="magenta")
    lines.append(f"{row.text}\n\n")
    successor = _later(row.superseded_by, row.superseded_at, as_of) or row.superseded_by
    fields = [
        ("uri", row.uri),
        ("scopes", ", ".join(row.scopes)),
        ("collection", row.collection),
        ("caller", row.caller),
        ("session", row.session),
        ("created", stamp(row.created_at)),
        ("contentHash", row.content_hash),
        ("source", row.source or "—"),
        ("file", path),
        ("supersedes", ", ".join(row.supersedes) or "—"),
        ("superseded by", successor or "—"),
    ]
    if row.retired_at:
        retired = f"by {row.retired_by}: {row.retired_reason}"
        later = _later(retired, row.retired_at, as_of)
        fields.append(("retired", later or f"{iso_utc(row.retired_at)} {retired}"))
    keyed = row.workbench.get("keyed")
    if isinstance(keyed, dict) and keyed.get("key"):
        fields += [
            ("key", f"{keyed['key']} (namespace {keyed.get('namespace', 'default')})"),
            ("revision", str(keyed.get("revision", 1))),
            ("topic", str(keyed.get("topic") or "—")),
            ("tags", ", ".join(keyed.get("tags") or []) or "—"),
        ]
    if row.expires_at:
        fields.append(("expires", iso_utc(row.expires_at)))
    for key in ("provenance", "usePolicy", "freshness"):
        for name, value in row.workbench.get(key, {}).items():
            fields.append((f"{key}.{name}", str(value)))
    fields.append(("recalled", f"{recalled}×" + (f", last by {last_by}" if last_by else "")))
    for name, value in fields:
        lines.append(f"{name:>16} ", style="bold cyan")
        lines.append(f"{value}\n")
    return lines


def _later(value: str | None, since: datetime | None, as_of: datetime | None) -> str | None:
    """As of a moment before `since` (when `value` came to be): "—" then, and `value` as
    later; None when it had happened by then (or there is no as-of moment)."""
    if value and as_of is not None and since is not None and since > as_of:
        return f"— then (later, {iso_utc(since)}: {value})"
    return None
