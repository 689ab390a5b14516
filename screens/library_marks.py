"""The Library's marks and batch decisions: the marking keys of every list (screens.list_marks:
`space`, `v`, `ctrl+a`, `~`, `ctrl+\\`) over its facts, and `y`, which decides the marked
facts (each its own decision or one for all) in the batch prompt, applied as one undo step."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable

from textual import work
from textual.coordinate import Coordinate

from engine.facade import Curation, CurationAction, FactRecord, LibraryFilter, MemoryFailure
from gno_tui.render.library import fact_cells
from gno_tui.widgets.fact_table import FactTable
from screens.batch_prompt import BatchChoice, BatchItem, FactBatchPrompt
from screens.list_marks import ListMarks


def batch_curation(choice: BatchChoice) -> Callable[[str, str], Curation]:
    """A batch choice as the curation of each marked fact (by ref, for an actor). The choices
    are curation actions by name, and `evidence-only`: a use-policy change. An unknown name
    is refused (MemoryFailure), never taken for another action."""
    if choice.action == "evidence-only":
        return lambda ref, actor: Curation(CurationAction.USE_POLICY, ref, actor, instruction=False)
    action = CurationAction.parse(choice.action)
    return lambda ref, actor: Curation(action, ref, actor, reason=choice.reason or "")


class LibraryMarks(ListMarks[str]):
    """The half of LibraryScreen (its subclass) that marks and decides in batches; the marks
    are record ids."""

    rows: list[FactRecord]
    filter: LibraryFilter  # its `as_of`: the moment the rows show (None: now)

    @abstractmethod
    def reload(self, offset: int = 0) -> None:
        """The screen's: load the list again."""

    @abstractmethod
    def refused_in_the_past(self) -> bool:
        """The screen's: in the as-of view, says so (True)."""

    def mark_keys(self) -> list[str]:
        return [row.record_id for row in self.rows]

    def marks_table(self) -> FactTable:
        return self.query_one(FactTable)

    def _show_mark(self, index: int) -> None:
        row = self.rows[index]
        # As the row was drawn: its state at the as-of moment, if the list shows one.
        cells = fact_cells(row, self.service.now(), row.record_id in self.marked, self.filter.as_of)
        table = self.query_one(FactTable)
        table.update_cell_at(Coordinate(table.shown_row(index), 0), cells[0])

    def action_batch(self) -> None:
        if self.refused_in_the_past():
            return
        # In the list's order; a fact marked and since filtered out of the list comes last.
        listed = [
            BatchItem(r.record_id, r.docid, r.text) for r in self.rows if r.record_id in self.marked
        ]
        hidden = self.marked - {item.id for item in listed}
        items = listed + [BatchItem(rid, rid, "") for rid in sorted(hidden)]
        FactBatchPrompt.ask(self, items, self.decide_all)

    @work(thread=True, exclusive=False, exit_on_error=False, group="library-curate")
    def decide_all(self, chosen: list[tuple[str, BatchChoice]]) -> None:
        """One decision per fact, each its own write; a fact the engine refuses (already
        retired, say) is counted with its error code and the rest go on."""
        done: dict[str, int] = {}
        refused: dict[str, list[str]] = {}
        with self.service.curation.batch():  # one `z` takes the whole batch back
            for record_id, choice in chosen:
                curation = batch_curation(choice)(record_id, self.actor)  # unknown: fails loudly
                try:
                    self.service.curation.curate(curation)
                    done[choice.action] = done.get(choice.action, 0) + 1
                except MemoryFailure as failure:
                    refused.setdefault(choice.action, []).append(failure.code)
        notes = []
        for action in dict.fromkeys(choice.action for _, choice in chosen):
            note, codes = f"{action}: {done.get(action, 0)} done", refused.get(action, [])
            notes.append(note + (f", {len(codes)} refused ({', '.join(sorted(set(codes)))})"
                                 if codes else ""))  # fmt: skip
        self.app.call_from_thread(
            self.notify, " · ".join(notes), severity="warning" if refused else "information"
        )
        self.app.call_from_thread(self._batch_applied, [record_id for record_id, _ in chosen])

    def _batch_applied(self, decided: list[str]) -> None:
        self.marked.difference_update(decided)  # the undecided stay marked
        self.reload()
