"""The Receipts & collections screen: verify, fence preview, policies and effective lineage."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from pilot_helpers import keys, settle, shown, workbench
from textual.widgets import DataTable, Input, Static

from engine.contract.normalize import iso_utc
from engine.curation.review import decision_log
from engine.memory.receipts import recent_receipts
from gno_tui.widgets.fitted_table import FittedTable
from screens.policy_picker import PolicyPicker
from screens.recall import RecallScreen
from screens.receipts import ReceiptsScreen
from screens.yes_no import YesNoPrompt


def text_of(screen: Any, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


async def test_receipts_newest_first_verify_and_drift(engine: Any, client: Any) -> None:
    tea = client.add("Alice prefers green tea", "user:alice")
    client.add("Bob lives in Lyon", "user:bob")
    first = client.recall("alice tea", ["user:alice"], caller="mcp:claude-code")
    second = client.recall("bob lyon", ["user:bob"], caller="cli:bob")
    client.supersede(tea, "Alice prefers jasmine tea")
    async with workbench(engine, "receipts") as (app, pilot):
        screen = shown(app, ReceiptsScreen)
        digests = [r["digest"] for r in screen.receipts]
        assert set(digests) == {first["receipt"]["digest"], second["receipt"]["digest"]}
        issued = [r["issuedAt"] for r in screen.receipts]
        assert issued == sorted(issued, reverse=True)
        table = screen.query_one("#receipts-table", FittedTable)
        states = {r["digest"]: str(table.full_row(r["digest"])[5]) for r in screen.receipts}
        assert states[first["receipt"]["digest"]] == "drift 1"
        assert states[second["receipt"]["digest"]] == "current"
        # Select the first receipt (the older one, at the bottom) and verify it.
        await pilot.press("G", "V")
        await settle(pilot)
        detail = text_of(screen, "#receipts-detail-body")
        assert "✓ matches" in detail and "✓ issued here" in detail
        assert f"{tea['record']['recordId']}: superseded by" in detail
        assert "1 of 1 id(s) changed since issue" in detail


async def test_fence_preview_yes_and_no(engine: Any, client: Any) -> None:
    client.add("Alice prefers green tea", "user:alice")
    client.recall("alice tea", ["user:alice"])
    async with workbench(engine, "receipts") as (app, pilot):
        screen = shown(app, ReceiptsScreen)
        await pilot.press("f")
        assert screen.query_one("#fence-text", Input).has_focus
        # Whitespace differences do not matter: the contentHash is over normalised text.
        await pilot.press(*keys("Alice  prefers green tea"))
        await settle(pilot)
        assert "would be fenced" in text_of(screen, "#fence-verdict")
        await pilot.press("ctrl+u", *keys("Alice prefers black tea"))
        await settle(pilot)
        assert "not fenced by this receipt" in text_of(screen, "#fence-verdict")
        # Letters typed in the box never trigger the screen's keys (p, V, P...).
        assert [c.policy for c in screen.collections] == ["local_only"]
        await pilot.press("escape")
        assert screen.query_one("#receipts-table").has_focus


async def test_fence_preview_judges_as_the_fence_does(engine: Any, client: Any) -> None:
    """Another case and a trailing period change the contentHash, not the fence form: the
    engine refuses such a replay, so the preview must say fenced too."""
    client.add("Alice prefers green tea", "user:alice")
    client.recall("alice tea", ["user:alice"])
    async with workbench(engine, "receipts") as (app, pilot):
        screen = shown(app, ReceiptsScreen)
        await pilot.press("f", *keys("alice prefers GREEN tea."))
        await settle(pilot)
        assert "would be fenced" in text_of(screen, "#fence-verdict")
        # Quotes around it do not make it new either; another word does.
        await pilot.press("ctrl+u", *keys('"Alice prefers green tea"'))
        await settle(pilot)
        assert "would be fenced" in text_of(screen, "#fence-verdict")
        await pilot.press("ctrl+u", *keys("alice prefers green teas."))
        await settle(pilot)
        assert "not fenced by this receipt" in text_of(screen, "#fence-verdict")
        # Emptying the box clears the verdict.
        await pilot.press("ctrl+u")
        await settle(pilot)
        assert text_of(screen, "#fence-verdict") == ""


async def choose_policy(pilot: Any, *moves: str) -> None:
    """`p`, then the picker's moves from the current policy (down: looser), then enter."""
    await pilot.press("p")
    await pilot.pause()
    assert isinstance(pilot.app.screen, PolicyPicker)
    await pilot.press(*moves, "enter")
    await pilot.pause()


async def test_policy_choice_changes_effective_lineage_and_recall(engine: Any, client: Any) -> None:
    engine.add_collection("team", policy="lan")
    client.add("The staging database is Postgres 16", "team:infra", collection="team")
    client.add("The staging cluster runs in Paris", "team:infra")
    async with workbench(engine, "receipts") as (app, pilot):
        screen = shown(app, ReceiptsScreen)
        assert [(c.name, c.policy) for c in screen.collections] == [
            ("memory", "local_only"),
            ("team", "lan"),
        ]
        # Mark both collections (space marks in the focused list): the effective policy is
        # the strictest, local_only.
        screen.query_one("#collections-table").focus()
        await pilot.press("space", "space", "P")
        await settle(pilot)
        assert screen.marked == {"memory", "team"}
        assert screen.effective is not None
        assert screen.effective["effectivePolicy"] == "local_only"
        assert "memory: local_only (config_default)" in text_of(screen, "#effective-body")
        # Relaxing memory (local_only -> lan) asks first; n leaves it.
        screen.query_one("#collections-table", DataTable).move_cursor(row=0)
        await choose_policy(pilot, "down")
        assert isinstance(app.screen, YesNoPrompt)
        assert "revision 1" in str(app.screen.query_one("#yes-no-question", Static).content)
        await pilot.press("n")
        await settle(pilot)
        assert engine.collections_by_name()["memory"].policy == "local_only"
        # y applies it, and the effective policy of the marked set follows.
        await choose_policy(pilot, "down")
        await pilot.press("y")
        await settle(pilot)
        memory = engine.collections_by_name()["memory"]
        assert (memory.policy, memory.policy_source, memory.policy_revision) == (
            "lan",
            "explicit",
            2,
        )
        assert screen.effective["effectivePolicy"] == "lan"
        assert "memory: lan (explicit)" in text_of(screen, "#effective-body")
        table = screen.query_one("#collections-table", DataTable)
        assert [str(cell) for cell in table.get_row("memory")[2:5]] == [" lan ", "explicit", "2"]
        # A recall now carries the lan lineage.
        await pilot.press("4")
        await settle(pilot)
        recall = app.screen
        assert isinstance(recall, RecallScreen)
        recall.query_one("#recall-query", Input).focus()
        await pilot.press(*keys("staging"), "enter")
        await settle(pilot)
        assert recall.result is not None
        assert recall.result["egressLineage"]["effectivePolicy"] == "lan"
        # Back: lan -> remote asks again; remote -> local_only tightens at once.
        await pilot.press("6")
        await settle(pilot)
        screen.query_one("#collections-table", DataTable).move_cursor(row=0)
        await choose_policy(pilot, "down")
        await pilot.press("y")
        await settle(pilot)
        assert engine.collections_by_name()["memory"].policy == "remote"
        await choose_policy(pilot, "up", "up")
        await settle(pilot)
        assert not isinstance(app.screen, YesNoPrompt)
        assert engine.collections_by_name()["memory"].policy == "local_only"
        assert engine.collections_by_name()["memory"].policy_revision == 4
        await pilot.press("4")
        await settle(pilot)
        recall.query_one("#recall-query", Input).focus()
        await pilot.press("enter")
        await settle(pilot)
        assert recall.result["egressLineage"]["effectivePolicy"] == "local_only"


async def test_tightening_is_chosen_directly_with_no_relaxation_first(engine: Any) -> None:
    """lan -> local_only is one choice, applied at once: no cycle through remote, no y."""
    engine.set_policy("memory", "lan", actor="someone-else")
    async with workbench(engine, "receipts") as (app, pilot):
        await choose_policy(pilot, "up")
        assert not isinstance(app.screen, YesNoPrompt | PolicyPicker)
        await settle(pilot)
        memory = engine.collections_by_name()["memory"]
        assert (memory.policy, memory.policy_revision) == ("local_only", 3)
        log = [entry["detail"]["after"]["policy"] for entry in decision_log(engine)]
        assert log == ["local_only", "lan"]  # never remote on the way


async def test_relaxing_is_bound_to_the_revision_shown(engine: Any) -> None:
    async with workbench(engine, "receipts") as (app, pilot):
        await choose_policy(pilot, "down", "down")
        assert isinstance(app.screen, YesNoPrompt)
        engine.set_policy("memory", "remote", actor="someone-else")  # meanwhile
        await pilot.press("y")
        await settle(pilot)
        assert engine.collections_by_name()["memory"].policy == "remote"
        assert any("changed meanwhile" in n.message for n in app._notifications)


async def test_export_delete_and_purge_receipts_each_ask_first(engine: Any, client: Any) -> None:
    client.add("Alice prefers green tea", "user:alice")
    start = engine.now()
    issued = []
    for hours in (0, 1, 2):
        engine._clock = lambda h=hours: start + timedelta(hours=h)
        issued.append(client.recall("alice tea", ["user:alice"])["receipt"]["digest"])
    async with workbench(engine, "receipts") as (app, pilot):
        screen = shown(app, ReceiptsScreen)
        # Newest first: mark the two newest, export them (enter takes the path offered).
        await pilot.press("space", "space", "x")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert screen.marked_receipts == set(issued[1:])
        (exported,) = sorted((engine.home / "exports").glob("receipts-*.jsonl"))
        lines = [json.loads(line) for line in exported.read_text().splitlines()]
        assert {line["digest"] for line in lines} == set(issued[1:])
        assert any("2 receipt(s) exported" in n.message for n in app._notifications)

        # Delete the marked ones: asked first; `n` keeps them.
        await pilot.press("d")
        await pilot.pause()
        assert isinstance(app.screen, YesNoPrompt)
        await pilot.press("n")
        await settle(pilot)
        assert len(recent_receipts(engine)) == 3
        await pilot.press("d", "y")
        await settle(pilot)
        assert [r["digest"] for r in recent_receipts(engine)] == [issued[0]]
        assert decision_log(engine)[0]["action"] == "delete-receipts"

        # Purge before a time: the count must be typed back.
        engine._clock = lambda: start + timedelta(days=60)
        await pilot.press("D")
        await pilot.pause()
        prompt = app.screen.query_one("#reason-input", Input)
        prompt.value = iso_utc(start + timedelta(minutes=30))
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press(*keys("purge 2"), "enter")  # the wrong count: nothing happens
        await settle(pilot)
        assert any("type 'purge 1' exactly" in n.message for n in app._notifications)
        assert len(recent_receipts(engine)) == 1
        await pilot.press("D")
        await pilot.pause()
        app.screen.query_one("#reason-input", Input).value = iso_utc(start + timedelta(minutes=30))
        await pilot.press("enter")
        await settle(pilot)
        await pilot.press(*keys("purge 1"), "enter")
        await settle(pilot)
        assert recent_receipts(engine) == []
        assert screen.receipts == []
        assert decision_log(engine)[0]["action"] == "purge-receipts"
