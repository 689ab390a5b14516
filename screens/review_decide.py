"""Review's decisions on proposals: one key per decision on the highlighted proposal (the
cursor then moves on), the candidate `J`/`K` choose as the target, and marks decided together
behind the batch summary. Every decision goes through the engine's review path and is logged."""

from __future__ import annotations

from abc import abstractmethod
from contextlib import nullcontext
from typing import Any

from textual import work

from engine.facade import Decision, merged_text
from screens.base import WorkbenchScreen
from screens.batch_prompt import BatchChoice, BatchItem, ProposalBatchPrompt
from screens.edit_prompt import EditPrompt, MergePrompt
from screens.modal import ask, quoted
from screens.reason_prompt import ReasonPrompt


class ProposalDecisions(WorkbenchScreen):
    """The deciding half of ReviewScreen (screens.review), which keeps the queue and shows it."""

    proposals: list[dict[str, Any]]
    marked: set[int]
    chosen: int
    chosen_for: int | None

    @abstractmethod
    def current(self) -> dict[str, Any] | None:
        """The proposal under the cursor, None when the queue is empty (ReviewScreen's)."""

    @abstractmethod
    def targets(self, proposal: dict[str, Any]) -> list[dict[str, Any]]:
        """The facts a supersede or merge of `proposal` can target (ReviewScreen's)."""

    @abstractmethod
    def show_proposal(self) -> None:
        """Show the proposal under the cursor and its candidates (ReviewScreen's)."""

    @abstractmethod
    def _summary(self) -> None:
        """Rewrite the line under the queue (ReviewScreen's)."""

    def action_next_target(self) -> None:
        self._move_target(1)

    def action_prev_target(self) -> None:
        self._move_target(-1)

    def _move_target(self, step: int) -> None:
        proposal = self.current()
        if proposal is not None and self.targets(proposal):
            self.chosen = (self.chosen + step) % len(self.targets(proposal))
            self.chosen_for = proposal["id"]
            self.show_proposal()

    def decide_one(self, proposal: dict[str, Any], action: str, **details: Any) -> None:
        """This person's decision on `proposal` (`details`: the Decision's target, text, reason
        or confirm)."""
        self.decide([Decision(proposal["id"], action, self.actor, **details)])

    def action_add(self) -> None:
        if (proposal := self.current()) is not None:
            self.decide_one(proposal, "add")

    def action_add_confirmed(self) -> None:
        if (proposal := self.current()) is not None:
            self.decide_one(proposal, "add", confirm=True)

    def chosen_target(self, proposal: dict[str, Any], verb: str) -> dict[str, Any] | None:
        """The candidate `J`/`K` chose, for `verb`; None, having said so, when there is none."""
        targets = self.targets(proposal)
        if not targets:
            self.notify(f"This proposal has no candidate to {verb}.", severity="warning")
            return None
        return targets[min(self.chosen, len(targets) - 1)]

    def action_supersede(self) -> None:
        proposal = self.current()
        if proposal is None or (target := self.chosen_target(proposal, "supersede")) is None:
            return
        self.decide_one(proposal, "supersede", target=target["uri"])

    def action_reject(self) -> None:
        if (proposal := self.current()) is not None:
            ask(
                self,
                ReasonPrompt(
                    f"Why reject proposal #{proposal['id']}?", context=quoted(proposal["text"])
                ),
                lambda reason: self.decide_one(proposal, "reject", reason=reason),
            )

    def action_edit(self) -> None:
        if (proposal := self.current()) is not None:
            ask(
                self,
                EditPrompt(f"Edit proposal #{proposal['id']}, then add it", proposal["text"]),
                lambda text: self.decide_one(proposal, "edit", text=text),
            )

    def action_merge(self) -> None:
        proposal = self.current()
        if proposal is None or (target := self.chosen_target(proposal, "merge with")) is None:
            return
        ask(
            self,
            MergePrompt(
                f"Merge proposal #{proposal['id']} into {target.get('docid') or target['uri']}: "
                "one text for both, superseding the candidate",
                merged_text(target["text"], proposal["text"]),
            ),
            lambda text: self.decide_one(proposal, "merge", target=target["uri"], text=text),
        )

    def action_batch(self) -> None:
        def apply(chosen: list[tuple[int, BatchChoice]]) -> None:
            self.decide([Decision(pid, choice.action, self.actor, reason=choice.reason,
                                  text=choice.text) for pid, choice in chosen])  # fmt: skip

        marked = [p for p in self.proposals if p["id"] in self.marked]
        items = [BatchItem(p["id"], f"#{p['id']}", p["text"]) for p in marked]
        ProposalBatchPrompt.ask(self, items, apply)

    @work(thread=True, exclusive=False, exit_on_error=False, group="review-decide")
    def decide(self, decisions: list[Decision]) -> None:
        done: dict[object, int] = {}  # outcome (a remember result) or state (a rejection)
        try:
            # A batch (y over marked proposals) is one step: one `z` takes all of it back.
            with self.service.curation.batch() if len(decisions) > 1 else nullcontext():
                for decision in decisions:
                    result = self.service.curation.decide(decision)
                    what = result.get("outcome") or result.get("state") or decision.action
                    done[what] = done.get(what, 0) + 1
        finally:
            if done:
                summary = " · ".join(f"{count} {what}" for what, count in done.items())
                self.app.call_from_thread(self.notify, summary, title="Decided")
            self.app.call_from_thread(self.refresh_from_store)
