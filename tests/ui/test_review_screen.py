"""The Review screen driven by real keystrokes over a real SQLite store: every decision on a
proposal, auto-advance, batch decisions behind a summary, near-duplicate pairs, and the
decision log."""

from __future__ import annotations

import sys
from typing import Any

from pilot_helpers import keys, settle, shown, workbench
from textual.widgets import DataTable, Static, TabbedContent, TextArea

from engine.curation import review
from engine.curation.calibration import judged_pairs
from engine.memory import browse
from engine.storage import proposals
from gno_tui.widgets.duplicates_pane import ALL_SCOPES, DuplicatesPane
from screens.batch_prompt import BatchPrompt
from screens.decision_log import DecisionLogScreen
from screens.edit_prompt import EditPrompt, MergePrompt
from screens.reason_prompt import ReasonPrompt
from screens.review import ReviewScreen


def propose(client: Any, text: str, *scopes: str, **fields: Any) -> int:
    """An agent's add on a propose-only surface: held as a pending proposal."""
    client.remember(
        text,
        scopes or ("user:alice",),
        decision=fields.pop("decision", "add"),
        hold_writes=True,
        origin="mcp",
        **fields,
    )
    return int(proposals.list_proposals(client.engine)[-1]["id"])


def states(engine: Any) -> dict[int, str]:
    return {p["id"]: p["state"] for p in proposals.list_proposals(engine, state=None)}


async def test_add_then_auto_advance_then_reject_with_a_reason(engine: Any, client: Any) -> None:
    first = propose(client, "Carol moved to Berlin")
    second = propose(client, "Bob lives in Lyon")
    third = propose(client, "The project deadline is on Friday")
    async with workbench(engine, "review") as (app, pilot):
        screen = shown(app, ReviewScreen)
        assert [p["id"] for p in screen.proposals] == [first, second, third]
        detail = str(screen.query_one("#review-detail-body", Static).render())
        assert "Carol moved to Berlin" in detail and "threshold 0.82" in detail
        # The row names the proposal by its text; the detail pane says who proposed it.
        assert "Carol moved to Berlin" in str(
            screen.query_one("#review-proposals", DataTable).get_row_at(0)
        )
        assert "agent via mcp" in detail
        await pilot.press("a")
        await settle(pilot)
        assert states(engine)[first] == "added"
        assert browse.list_facts(engine, text="Carol").total == 1
        # Auto-advance: the decided proposal left the queue, the cursor is on the next one.
        current = screen.current()
        assert current is not None and current["id"] == second

        await pilot.press("x")
        await pilot.pause()
        assert isinstance(app.screen, ReasonPrompt)
        await pilot.press(*keys("not about alice, says x"), "enter")  # letters do not act
        await settle(pilot)
        proposal = proposals.list_proposals(engine, state=None)[1]
        assert proposal["state"] == "rejected"
        assert proposal["resolution"] == "not about alice, says x"
        assert proposal["decidedBy"] == app.actor
        assert browse.list_facts(engine, text="Lyon").total == 0
        current = screen.current()
        assert current is not None and current["id"] == third
        assert states(engine)[third] == "pending"
        log = review.decision_log(engine)
        assert [entry["action"] for entry in log] == ["review:reject", "review:add"]
        assert {entry["actor"] for entry in log} == {app.actor}


async def test_supersede_the_candidate_chosen_with_j(engine: Any, client: Any) -> None:
    green = client.add("Alice prefers green tea in the morning", "user:alice")["record"]
    greens = client.add("Alice prefers green tea in the mornings", "user:alice")["record"]
    pid = propose(client, "Alice prefers black tea in the morning")
    candidates = proposals.list_proposals(engine)[0]["candidates"]
    assert [c["uri"] for c in candidates] == [green["uri"], greens["uri"]]
    async with workbench(engine, "review") as (app, pilot):
        screen = shown(app, ReviewScreen)
        detail = str(screen.query_one("#review-detail-body", Static).render())
        assert f"▶ {green['docid']}" in detail and "likely" in detail
        await pilot.press("J")  # choose the second candidate
        detail = str(screen.query_one("#review-detail-body", Static).render())
        assert f"▶ {greens['docid']}" in detail
        await pilot.press("s")
        await settle(pilot)
        assert states(engine)[pid] == "superseded"
        old = browse.fact_row(engine, greens["uri"])
        assert old.superseded_by is not None
        assert browse.fact_row(engine, old.superseded_by).text.endswith("black tea in the morning")
        assert browse.fact_row(engine, green["uri"]).superseded_by is None
        assert screen.proposals == []
        assert "No proposal waits" in str(screen.query_one("#review-detail-body").render())


async def test_a_weak_pair_is_shown_apart_not_as_a_word_diff(engine: Any, client: Any) -> None:
    old = client.add("Bob lives in Paris", "user:bob")["record"]
    propose(
        client,
        "Bob moved to Lyon",
        decision="supersede",
        predecessor=old["uri"],
        predecessor_hash=old["contentHash"],
    )
    client.add("Alice prefers green tea in the morning", "user:alice")
    propose(client, "Alice prefers black tea in the morning")
    async with workbench(engine, "review") as (app, pilot):
        screen = shown(app, ReviewScreen)
        detail = str(screen.query_one("#review-detail-body", Static).render())
        # One word in four in common: both texts whole, each named, instead of the diff
        # "Bob lives in Paris moved to Lyon" that interleaved them.
        assert "candidate Bob lives in Paris" in detail
        assert "proposal  Bob moved to Lyon" in detail
        assert "little in common: shown apart" in detail
        await pilot.press("down")  # a close pair keeps its word diff
        detail = str(screen.query_one("#review-detail-body", Static).render())
        assert "little in common" not in detail
        assert "Alice prefers green black tea in the morning" in detail


async def test_an_agents_supersede_offers_its_predecessor(engine: Any, client: Any) -> None:
    old = client.add("Bob lives in Paris", "user:bob")["record"]
    pid = propose(
        client,
        "Bob moved to Lyon",
        decision="supersede",
        predecessor=old["uri"],
        predecessor_hash=old["contentHash"],
    )
    async with workbench(engine, "review") as (app, pilot):
        screen = shown(app, ReviewScreen)
        assert "intended" in str(screen.query_one("#review-detail-body", Static).render())
        await pilot.press("s")
        await settle(pilot)
        assert states(engine)[pid] == "superseded"
        assert browse.fact_row(engine, old["uri"]).superseded_by is not None


async def test_edit_then_add(engine: Any, client: Any) -> None:
    pid = propose(client, "Alice drinks tea")
    async with workbench(engine, "review") as (app, pilot):
        shown(app, ReviewScreen)
        await pilot.press("e")
        await pilot.pause()
        assert isinstance(app.screen, EditPrompt)
        assert app.screen.query_one(TextArea).text == "Alice drinks tea"
        await pilot.press("end", *keys(" at seven"), "ctrl+s")
        await settle(pilot)
        assert states(engine)[pid] == "added"
        facts = browse.list_facts(engine, text="Alice").rows
        assert [row.text for row in facts] == ["Alice drinks tea at seven"]
        entry = review.decision_log(engine)[0]
        assert entry["action"] == "review:edit"
        assert entry["detail"]["before"]["text"] == "Alice drinks tea"
        assert entry["detail"]["after"]["text"] == "Alice drinks tea at seven"


async def test_merge_with_the_chosen_candidate_supersedes_it_with_the_edited_text(
    engine: Any, client: Any
) -> None:
    old = client.add("Alice drinks green tea", "user:alice")["record"]
    pid = propose(client, "Alice drinks green tea without sugar", "user:alice")
    lone = propose(client, "The project deadline is on Friday", "user:alice")
    async with workbench(engine, "review") as (app, pilot):
        shown(app, ReviewScreen)
        # escape in the prompt decides nothing.
        await pilot.press("m")
        await pilot.pause()
        assert isinstance(app.screen, MergePrompt)
        await pilot.press("escape")
        await settle(pilot)
        assert states(engine)[pid] == "pending"

        await pilot.press("m")
        await pilot.pause()
        # The proposal already says all the candidate says: the suggestion is its text.
        assert app.screen.query_one(TextArea).text == "Alice drinks green tea without sugar"
        await pilot.press("end", *keys(", at seven"), "ctrl+s")
        await settle(pilot)
        assert states(engine)[pid] == "merged"
        successor = browse.fact_row(engine, old["uri"]).superseded_by
        assert successor is not None
        assert browse.fact_row(engine, successor).text == (
            "Alice drinks green tea without sugar, at seven"
        )
        assert review.decision_log(engine)[0]["action"] == "review:merge"

        # The cursor moved on to a proposal with no candidate: nothing to merge with.
        await pilot.press("m")
        await settle(pilot)
        assert not isinstance(app.screen, MergePrompt)
        assert any("no candidate to merge with" in n.message for n in app._notifications)
        assert states(engine)[lone] == "pending"


async def test_the_threshold_is_checked_against_the_persons_verdicts(
    engine: Any, client: Any
) -> None:
    old = client.add("Alice prefers green tea in the morning", "user:alice")["record"]
    propose(client, "Alice prefers black tea in the morning", "user:alice")
    propose(client, "Alice prefers black coffee in the morning", "user:alice")
    async with workbench(engine, "review") as (app, pilot):
        screen = shown(app, ReviewScreen)
        summary = str(screen.query_one("#review-summary", Static).render())
        assert "threshold 0.82 · no verdicts yet" in summary
        first = screen.current()
        assert first is not None and first["candidates"][0]["uri"] == old["uri"]
        assert first["candidates"][0]["similarity"] >= 0.82
        await pilot.press("s")  # the same fact: a pair at or above the threshold
        await settle(pilot)
        summary = str(screen.query_one("#review-summary", Static).render())
        assert "threshold 0.82 vs your 1 verdict: precision 1.00 · recall 1.00" in summary
        second = screen.current()
        assert second is not None and second["candidates"]
        await pilot.press("a")  # not the same as any of its candidates
        await settle(pilot)
        judged = 1 + len(second["candidates"])
        flagged_wrongly = sum(c["similarity"] >= 0.82 for c in second["candidates"])
        summary = str(screen.query_one("#review-summary", Static).render())
        assert f"vs your {judged} verdicts" in summary
        assert f"precision {1 / (1 + flagged_wrongly):.2f} · recall 1.00" in summary


async def test_edit_in_the_persons_own_editor_then_add(
    engine: Any, client: Any, tmp_path: Any, monkeypatch: Any
) -> None:
    pid = propose(client, "Alice drinks tea")
    # A stand-in for vim: a real program that rewrites the file it is given, as an editor would.
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import sys, pathlib\n"
        "path = pathlib.Path(sys.argv[-1])\n"
        "path.write_text(path.read_text().replace('tea', 'green tea') + '\\n')\n"
    )
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.setenv("EDITOR", f"{sys.executable} {editor}")
    async with workbench(engine, "review") as (app, pilot):
        shown(app, ReviewScreen)
        await pilot.press("e", "ctrl+o")
        await pilot.pause()
        assert app.screen.query_one(TextArea).text == "Alice drinks green tea"
        # An editor that fails leaves the text as it was.
        monkeypatch.setenv("EDITOR", f"{sys.executable} -c 'raise SystemExit(3)'")
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert app.screen.query_one(TextArea).text == "Alice drinks green tea"
        assert any("exited with status 3" in note.message for note in app._notifications)
        await pilot.press("ctrl+s")
        await settle(pilot)
    assert states(engine)[pid] == "added"
    assert [row.text for row in browse.list_facts(engine, text="Alice").rows] == [
        "Alice drinks green tea"
    ]


async def test_without_an_editor_set_ctrl_e_says_how(
    engine: Any, client: Any, monkeypatch: Any
) -> None:
    propose(client, "Alice drinks tea")
    monkeypatch.delenv("VISUAL", raising=False)
    monkeypatch.delenv("EDITOR", raising=False)
    async with workbench(engine, "review") as (app, pilot):
        shown(app, ReviewScreen)
        await pilot.press("e", "ctrl+o")
        await pilot.pause()
        assert any("Set $VISUAL or $EDITOR" in note.message for note in app._notifications)
        assert app.screen.query_one(TextArea).text == "Alice drinks tea"


async def test_marks_then_batch_summary_cancel_then_apply(engine: Any, client: Any) -> None:
    ids = [
        propose(client, text)
        for text in ("Carol moved to Berlin", "Bob lives in Lyon", "The deadline is on Monday")
    ]
    async with workbench(engine, "review") as (app, pilot):
        screen = shown(app, ReviewScreen)
        await pilot.press("space", "down", "space")  # marks #1 and #3
        assert screen.marked == {ids[0], ids[2]}
        assert "2 marked" in str(screen.query_one("#review-summary", Static).render())
        # Reject all, with one reason ... then cancelled: nothing changes.
        await pilot.press("y")
        await pilot.pause()
        assert isinstance(app.screen, BatchPrompt)
        await pilot.press("asterisk", "x")  # `*`: one decision (and one reason) for all
        await pilot.pause()
        await pilot.press(*keys("stale"), "enter")
        await pilot.pause()
        assert "2 reject" in str(app.screen.query_one("#batch-summary").render())
        await pilot.press("n")
        await settle(pilot)
        assert set(states(engine).values()) == {"pending"}
        # Add all: the summary, then y applies.
        await pilot.press("y")
        await pilot.pause()
        await pilot.press("asterisk", "a")
        await pilot.pause()
        assert "2 add" in str(app.screen.query_one("#batch-summary").render())
        await pilot.press("y")
        await settle(pilot)
        assert states(engine) == {ids[0]: "added", ids[1]: "pending", ids[2]: "added"}
        assert [p["id"] for p in screen.proposals] == [ids[1]]
        assert screen.marked == set()
        assert browse.status_counts(engine)["current"] == 2


async def test_the_batch_lists_the_marked_proposals_and_takes_mixed_decisions(
    engine: Any, client: Any
) -> None:
    ids = [
        propose(client, text)
        for text in ("Carol moved to Berlin", "Bob lives in Lyon", "The deadline is on Monday")
    ]
    async with workbench(engine, "review") as (app, pilot):
        screen = shown(app, ReviewScreen)
        await pilot.press("space", "space", "space", "y")
        await pilot.pause()
        prompt = shown(app, BatchPrompt)
        # The marked proposals are listed, each with its text, none decided yet.
        table = prompt.query_one("#batch-items", DataTable)
        rows = [[str(cell) for cell in table.get_row_at(i)] for i in range(table.row_count)]
        assert [row[1] for row in rows] == [f"#{pid}" for pid in ids]
        assert "Bob lives in Lyon" in rows[1][2] and {row[0] for row in rows} == {"—"}
        # One of each: add the first, reject the second (its own reason), edit the third.
        await pilot.press("a", "x")
        await pilot.pause()
        await pilot.press(*keys("wrong person"), "enter")
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        edit = shown(app, EditPrompt)
        edit.query_one(TextArea).text = "The deadline is on Friday"
        await pilot.press("ctrl+s")
        await pilot.pause()
        summary = str(prompt.query_one("#batch-summary").render())
        assert "1 add · 1 reject · 1 edit+add" in summary
        await pilot.press("y")
        await settle(pilot)
        assert states(engine) == {ids[0]: "added", ids[1]: "rejected", ids[2]: "added"}
        texts = {r.text for r in browse.list_facts(engine).rows}
        assert texts == {"Carol moved to Berlin", "The deadline is on Friday"}
        assert screen.proposals == [] and screen.marked == set()


async def test_duplicates_keep_both_then_retire(engine: Any, client: Any) -> None:
    older = client.add("Alice prefers green tea in the morning", "user:alice")["record"]
    newer = client.add("Alice prefers green tea in the mornings", "user:alice")["record"]
    lyon = client.add("Bob lives in Lyon", "user:alice")["record"]
    lyon2 = client.add("Bob lives in Lyon now", "user:alice")["record"]
    async with workbench(engine, "review") as (app, pilot):
        shown(app, ReviewScreen)
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert app.screen.query_one(TabbedContent).active == "duplicates"
        pane = app.screen.query_one("#dup-pane", DuplicatesPane)
        assert pane.scope == ALL_SCOPES  # every scope, by default
        assert len(pane.pairs) == 2
        first = pane.current_pair()
        assert first is not None
        diff = str(pane.query_one("#dup-diff", Static).render())
        assert "lexical" in diff and first.tier in diff
        kept = {first.left.uri, first.right.uri}
        await pilot.press("b")
        await settle(pilot)
        assert len(pane.pairs) == 1
        assert {frozenset(kept)} == browse.kept_pairs(engine)
        assert review.decision_log(engine)[0]["action"] == "keep-both"
        assert all(
            {p.left.uri, p.right.uri} != kept
            for p in browse.duplicate_pairs(engine, scope="user:alice")
        )
        remaining = pane.current_pair()
        assert remaining is not None
        older_uri = min((remaining.left, remaining.right), key=lambda f: f.created_at).uri
        newer_uri = ({remaining.left.uri, remaining.right.uri} - {older_uri}).pop()
        await pilot.press("r")  # retire the older of the pair
        await settle(pilot)
        retired = browse.fact_row(engine, older_uri)
        assert retired.retired_at is not None
        assert retired.retired_reason == f"duplicate of {newer_uri}"
        assert retired.retired_by == app.actor
        assert browse.fact_row(engine, newer_uri).retired_at is None
        assert pane.pairs == []
        assert {older["uri"], newer["uri"]} == kept or {lyon["uri"], lyon2["uri"]} == kept
        # Both verdicts, with the similarity they were shown with, count in the threshold check.
        assert [(p.similarity, p.same) for p in judged_pairs(engine)] == [
            (first.similarity, False),
            (remaining.similarity, True),
        ]
        # Proposal keys do nothing on this tab.
        await pilot.press("a", "x")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen)


async def test_decision_log_shows_who_what_and_before_after(engine: Any, client: Any) -> None:
    propose(client, "Carol moved to Berlin")
    async with workbench(engine, "review") as (app, pilot):
        shown(app, ReviewScreen)
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("at")
        await settle(pilot)
        assert isinstance(app.screen, DecisionLogScreen)
        table = app.screen.query_one("#log-table", DataTable)
        assert table.row_count == 1
        row = [str(cell) for cell in table.get_row_at(0)]
        assert row[1] == app.actor and row[2] == "review:add"
        assert "Carol moved to Berlin" in row[4] and "state=added" in row[5]
        assert "review:add by" in str(app.screen.query_one("#log-detail").render())
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, ReviewScreen)


async def test_read_only_review_decides_nothing(engine: Any, client: Any) -> None:
    pid = propose(client, "Carol moved to Berlin")
    async with workbench(engine, "review", read_only=True) as (app, pilot):
        shown(app, ReviewScreen)
        await pilot.press("a", "s", "e", "x")
        await settle(pilot)
        assert isinstance(app.screen, ReviewScreen)
        assert states(engine)[pid] == "pending"


async def test_add_and_confirm_vouches_for_the_fact(engine: Any, client: Any) -> None:
    held = propose(client, "Dana leads the infra team", "team:infra")
    async with workbench(engine, "review") as (app, pilot):
        shown(app, ReviewScreen)
        await pilot.press("C")
        await settle(pilot)
    assert states(engine)[held] == "added"
    row = browse.list_facts(engine, text="Dana").rows[0]
    assert row.caller == "test:agent"  # still the agent's fact
    assert row.workbench["provenance"]["status"] == "user_confirmed"
    assert row.workbench["usePolicy"]["requiresUserConfirmation"] is False
    assert [e["action"] for e in review.decision_log(engine)][:2] == ["review:add", "confirm"]


async def test_duplicates_newer_fact_use_policy_and_confidence(engine: Any, client: Any) -> None:
    client.add("Alice prefers green tea in the morning", "user:alice")
    newer = client.add("Alice prefers green tea in the mornings", "user:alice")["record"]
    async with workbench(engine, "review") as (app, pilot):
        shown(app, ReviewScreen)
        await pilot.press("E")  # on the Proposals tab: refused with a hint, nothing changes
        await settle(pilot)
        assert "canUseAsInstruction" not in str(review.decision_log(engine))
        await pilot.press("right_square_bracket")
        await settle(pilot)
        await pilot.press("E")
        await settle(pilot)
        await pilot.press("percent_sign", *["backspace"] * 5, *"0.4", "enter")
        await settle(pilot)
        await pilot.press("S")
        await settle(pilot)
    row = browse.fact_row(engine, newer["uri"])
    assert browse.is_stale(row, engine.now())
    assert row.workbench["usePolicy"]["canUseAsInstruction"] is True
    assert row.workbench["provenance"]["confidence"] == 0.4
