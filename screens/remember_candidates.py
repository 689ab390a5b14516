"""The Remember screen's candidates: the current facts a draft would duplicate, looked up in
the draft's collection and, labelled with theirs, in every other collection (a duplicate one
collection over is still a duplicate a person wants to see), with the fence preview.

The screen's base class, so the screen module stays about the form and the writes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from rich.text import Text
from textual import on, work
from textual.message import Message
from textual.widgets import DataTable, Static

from engine.facade import (
    FenceExposure,
    FenceNearMiss,
    MemoryFailure,
    RememberRequest,
    RememberResult,
)
from gno_tui.render.remember import (
    candidate_cells,
    candidate_diff,
    fence_text,
    matching_summary,
    near_misses_text,
    waiting_text,
)
from gno_tui.widgets.fact_table import FactTable
from screens.base import WorkbenchScreen


@dataclass(frozen=True)
class Draft:
    """What the form holds, read on the UI thread and handed to a worker."""

    text: str
    scopes: list[str]
    source: str | None
    collection: str | None


@dataclass
class CandidatesFound(Message):
    draft: Draft
    result: RememberResult | None  # the propose result, or None when the draft is invalid
    problem: str = ""  # why there is no result: "CODE: message"
    fence: FenceExposure | None = None  # receipts that returned this exact text
    near: list[FenceNearMiss] = field(default_factory=list)  # receipted spans close to it
    docids: dict[str, str] = field(default_factory=dict)  # record id -> docid of `near`
    # The same lookup in the other collections: their candidates, each with its "collection".
    elsewhere: list[dict[str, Any]] = field(default_factory=list)
    others: list[str] = field(default_factory=list)  # the other collections looked in


def as_candidates(result: Mapping[str, Any], collection: str) -> list[dict[str, Any]]:
    """A propose result's candidates (an exact duplicate as one), tagged with `collection`."""
    if result["outcome"] == "existing":
        found = [{**result["record"], "similarity": 1.0, "match": "exact"}]
    else:
        found = list(result.get("candidates", []))
    return [{**candidate, "collection": collection} for candidate in found]


class RememberCandidates(WorkbenchScreen):
    """The base of RememberScreen: the candidate lookup, the candidate pane and the fence
    line. The screen reads the form (`draft`) and writes."""

    candidates: list[dict[str, Any]]
    shown_draft: Draft | None

    def request(self, draft: Draft, decision: str, scopes: list[str] | None) -> RememberRequest:
        """The draft as a request by this person, in this session."""
        return RememberRequest(
            text=draft.text,
            scopes=scopes,
            caller=self.actor,
            session=self.workbench.session,
            decision=decision,
            collection=draft.collection,
            source=draft.source,
            created_by="user",
        )

    @work(thread=True, exclusive=True, exit_on_error=False, group="remember-propose")
    def propose(self, draft: Draft) -> None:
        request = self.request(draft, "propose", draft.scopes)
        fence = self.service.receipts.exposure(draft.text)
        near = [] if fence.receipts else self.service.receipts.near_misses(draft.text)
        docids = self.docids_of(near)
        try:
            result = self.service.remember(request)
        except MemoryFailure as failure:
            problem = f"{failure.code}: {failure.message}"
            self.deliver(CandidatesFound(draft, None, problem, fence, near, docids))
            return
        others = [c.name for c in self.service.collections() if c.name != draft.collection]
        elsewhere = self.elsewhere(draft, others)
        self.deliver(CandidatesFound(draft, result, "", fence, near, docids, elsewhere, others))

    def elsewhere(self, draft: Draft, collections: list[str]) -> list[dict[str, Any]]:
        """The draft's candidates in each of `collections` (the same lookup, nothing written),
        closest first."""
        found: list[dict[str, Any]] = []
        for name in collections:
            request = self.request(replace(draft, collection=name), "propose", draft.scopes)
            try:
                found += as_candidates(self.service.remember(request), name)
            except MemoryFailure:
                continue  # gone meanwhile: nothing to offer from it
        return sorted(found, key=lambda candidate: -candidate["similarity"])

    def docids_of(self, misses: list[FenceNearMiss]) -> dict[str, str]:
        """record id -> docid of the near misses' facts (those still found)."""
        docids: dict[str, str] = {}
        for miss in misses:
            try:
                docids[miss.record_id] = self.service.facts.get(miss.record_id).docid
            except MemoryFailure:
                continue  # gone meanwhile: the record id stands for it
        return docids

    def on_candidates_found(self, message: CandidatesFound) -> None:
        self.show_fence(message.fence, message.near, message.docids)
        self.show_candidates(
            message.draft, message.result, message.problem, message.elsewhere, message.others
        )

    def show_fence(
        self,
        fence: FenceExposure | None,
        near: list[FenceNearMiss] | None = None,
        docids: dict[str, str] | None = None,
    ) -> None:
        """The exact fence (receipts returned this text), else the near misses, else nothing."""
        box = self.query_one("#remember-fence", Static)
        if fence is not None and fence.receipts:
            box.update(fence_text(fence))
        elif near:
            box.update(near_misses_text(near, docids or {}))
        else:
            box.update("")
            box.add_class("-empty")
            return
        box.remove_class("-empty")

    def show_candidates(
        self,
        draft: Draft,
        result: Mapping[str, Any] | None,
        problem: str,
        elsewhere: list[dict[str, Any]] | None = None,
        others: list[str] | None = None,
    ) -> None:
        """The draft's collection's candidates first, then the other collections' ones."""
        self.shown_draft = draft
        table = self.query_one("#remember-candidates", FactTable)
        table.clear()
        self.candidates = []
        matching = self.query_one("#remember-matching", Static)
        if result is None:
            matching.update(
                Text(problem, style="yellow") if problem else waiting_text(draft.text, draft.scopes)
            )
            self.show_diff()
            return
        collection = draft.collection or "memory"
        own = as_candidates(result, collection)
        self.candidates = own + (elsewhere or [])
        matching.update(matching_summary(result, own, collection, elsewhere or [], others or []))
        for candidate in self.candidates:
            cells = candidate_cells(candidate, other=candidate["collection"] != collection)
            table.add_row(*cells, key=candidate["uri"])
        self.show_diff()

    @on(DataTable.RowHighlighted, "#remember-candidates")
    def candidate_highlighted(self) -> None:
        self.show_diff()

    def highlighted(self) -> dict[str, Any] | None:
        return self.query_one("#remember-candidates", FactTable).at_cursor(self.candidates)

    def show_diff(self) -> None:
        diff = self.query_one("#remember-diff", Static)
        candidate = self.highlighted()
        if candidate is None or self.shown_draft is None:
            diff.update("")
            return
        diff.update(candidate_diff(candidate, self.shown_draft.text.strip()))
