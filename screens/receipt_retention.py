"""The Receipts screen's retention keys: export (`x`), delete (`d`) and purge (`D`).

Kept as the screen's base class so the screen module stays about what receipts say;
everything here asks first and writes through service.receipts, which logs who did it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from textual import work

from engine.facade import MemoryService, Receipt, iso_utc, parse_iso
from gno_tui.widgets.fact_table import FactTable
from screens.base import WorkbenchScreen
from screens.modal import ask
from screens.reason_prompt import ReasonPrompt, time_problem
from screens.yes_no import YesNoPrompt


def export_path(text: str) -> Path:
    """An answer to the export prompt as a full path (~ expanded; relative to the current
    directory), so the notification names exactly where the file is."""
    return Path(text.strip()).expanduser().resolve()


def export_path_problem(service: MemoryService, text: str) -> str | None:
    """Why receipts cannot be exported to `text` (None when they can): a new file in an
    existing folder, never over a file (an export is not a merge) nor inside a collection's
    root or the home's own files, whose contents are canonical."""
    path = export_path(text)
    if path.is_dir():
        return f"{path} is a folder: end the path with a file name, e.g. receipts.jsonl."
    if path.exists():
        return f"{path} exists already: choose a new file name (nothing is overwritten)."
    # <home>/exports is made by the first export; any other folder must exist (a typo in it
    # would otherwise scatter folders).
    if not path.parent.is_dir() and path.parent != service.home.resolve() / "exports":
        return f"The folder {path.parent} does not exist: create it first, or pick another."
    if path.parent == service.home.resolve():
        return f"{path.parent} is the store's home: export under its exports/ folder or elsewhere."
    for row in service.collections():
        if row.root and path.is_relative_to(Path(row.root).resolve()):
            return f"{path} is inside collection {row.name!r}'s root, whose files are facts."
    return None


# The purge prompt starts at this age: older receipts are the usual candidates.
DEFAULT_PURGE_AGE = timedelta(days=30)


class ReceiptRetention(WorkbenchScreen):
    """The base of ReceiptsScreen, which lists the receipts and keeps the marks."""

    marked_receipts: set[str]
    receipts: list[Receipt]  # as listed, newest first

    def selected_receipt(self) -> Receipt | None:
        return self.query_one("#receipts-table", FactTable).at_cursor(self.receipts)

    def chosen_digests(self) -> list[str]:
        """The marked receipts, else the highlighted one."""
        if self.marked_receipts:
            return sorted(self.marked_receipts)
        receipt = self.selected_receipt()
        return [receipt["digest"]] if receipt is not None else []

    def action_export(self) -> None:
        """Ask where (prefilled with a new file under <home>/exports/), refusing a path that
        cannot be written in the prompt itself; then say the full path written."""
        digests = self.chosen_digests()
        if not digests:
            self.notify("No receipt to export: highlight or mark one.", severity="warning")
            return
        prompt = ReasonPrompt(
            f"Export {len(digests)} receipt(s) as JSON lines to (a new file):",
            initial=str(self.service.receipts.default_export_path()),
            context=self.receipts_line(digests),
            check=lambda text: export_path_problem(self.service, text),
        )
        ask(self, prompt, lambda answer: self.export_chosen(digests, export_path(answer)))

    @work(thread=True, exclusive=True, exit_on_error=False, group="receipts-retention")
    def export_chosen(self, digests: list[str], path: Path) -> None:
        written = self.service.receipts.export(digests=digests, path=path)
        self.app.call_from_thread(
            self.notify,
            f"{len(digests)} receipt(s) exported to {written}",
            title="Exported",
            markup=False,
        )

    def action_delete(self) -> None:
        digests = self.chosen_digests()
        if not digests:
            self.notify("No receipt to delete: highlight or mark one.", severity="warning")
            return

        ask(
            self,
            YesNoPrompt(
                f"Delete {len(digests)} receipt(s)? They stop fencing and cannot be presented "
                "again; the decision log keeps their digests.",
                context=self.receipts_line(digests),
            ),
            lambda _: self.delete_chosen(digests),
        )

    def receipts_line(self, digests: list[str], most: int = 5) -> str:
        """The receipts a prompt acts on, one a line: digest, when, by whom, how many ids."""
        by_digest = {receipt["digest"]: receipt for receipt in self.receipts}
        lines = []
        for digest in digests[:most]:
            receipt: Mapping[str, Any] = by_digest.get(digest, {})
            issued = str(receipt.get("issuedAt", ""))[:19].replace("T", " ")
            ids = len(receipt.get("memoryIds", []))
            lines.append(f"{digest[:12]}  {issued}  {receipt.get('caller', '?')}  {ids} id(s)")
        if len(digests) > most:
            lines.append(f"… and {len(digests) - most} more")
        return "\n".join(lines)

    @work(thread=True, exclusive=True, exit_on_error=False, group="receipts-retention")
    def delete_chosen(self, digests: list[str]) -> None:
        count = self.service.receipts.delete(digests=digests, actor=self.actor)
        self.marked_receipts.clear()
        self.app.call_from_thread(self.notify, f"{count} receipt(s) deleted", title="Deleted")
        self.app.call_from_thread(self.refresh_from_store)

    def action_purge(self) -> None:
        initial = iso_utc(self.service.now() - DEFAULT_PURGE_AGE)

        def chosen(value: str | None) -> None:
            if not value:
                return
            try:
                before = parse_iso(value.strip())
            except ValueError:
                self.notify(
                    f"{value!r} is not a time: write 2026-11-01 or 2026-11-01T09:00Z.",
                    severity="error",
                )
                return
            self.confirm_purge(before)

        self.app.push_screen(
            ReasonPrompt(
                "Purge every receipt issued before (ISO time, UTC if no zone):",
                initial=initial,
                check=time_problem,
            ),
            chosen,
        )

    @work(thread=True, exclusive=True, exit_on_error=False, group="receipts-retention")
    def confirm_purge(self, before: datetime) -> None:
        count = self.service.receipts.issued_before(before)
        if not count:
            self.app.call_from_thread(
                self.notify, f"No receipt was issued before {iso_utc(before)}."
            )
            return
        word = f"purge {count}"

        def typed(value: str | None) -> None:
            if value is None:
                return
            if value.strip() != word:
                self.notify(f"Not purged: type {word!r} exactly to confirm.", severity="warning")
                return
            self.purge_before(before)

        self.app.call_from_thread(
            self.app.push_screen,
            ReasonPrompt(
                f"{count} receipt(s) were issued before {iso_utc(before)}. Type {word!r} to "
                "delete them all:"
            ),
            typed,
        )

    @work(thread=True, exclusive=True, exit_on_error=False, group="receipts-retention")
    def purge_before(self, before: datetime) -> None:
        count = self.service.receipts.purge(before=before, actor=self.actor)
        self.app.call_from_thread(self.notify, f"{count} receipt(s) purged", title="Purged")
        self.app.call_from_thread(self.refresh_from_store)
