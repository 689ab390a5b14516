"""Undo (`z`) takes back every decision a person makes in the workbench, driven by real keys:
review decisions, a batch as one step, chain edits (now in the `@` log); a stale candidate
is offered as its current head; the Library filter survives a restart; `--demo --home` seeds
that home or refuses a non-empty one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pilot_helpers import keys, settle, shown, workbench
from textual.widgets import Input, Static

from engine.contract.errors import MemoryFailure
from engine.curation import review
from engine.memory import browse
from engine.storage import proposals
from gno_tui.app import create_app
from gno_tui.launch import seed_demo_home
from screens.library import LibraryScreen
from screens.review import ReviewScreen
from screens.supersession import SupersessionScreen


def propose(client: Any, text: str) -> int:
    client.remember(text, ["user:alice"], hold_writes=True, origin="mcp")
    return int(proposals.list_proposals(client.engine)[-1]["id"])


def state(engine: Any, pid: int) -> str:
    return {p["id"]: p["state"] for p in proposals.list_proposals(engine, state=None)}[pid]


async def test_z_undoes_review_decisions_back_past_a_reject(engine: Any, client: Any) -> None:
    added = propose(client, "Carol moved to Berlin")
    rejected = propose(client, "The moon is made of cheese")
    async with workbench(engine, "review") as (app, pilot):
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("x", *keys("not true"), "enter")
        await settle(pilot)
        assert (state(engine, added), state(engine, rejected)) == ("added", "rejected")
        await pilot.press("z")  # the reject
        await settle(pilot)
        assert state(engine, rejected) == "pending"
        await pilot.press("z")  # the add: its fact is retired, the proposal waits again
        await settle(pilot)
        assert state(engine, added) == "pending"
        assert browse.list_facts(engine, text="Berlin", status="current").total == 0
        assert not [n for n in app._notifications if n.severity == "error"]
        screen = shown(app, ReviewScreen)
        assert sorted(p["id"] for p in screen.proposals) == [added, rejected]


async def test_a_review_batch_is_one_undo_step(engine: Any, client: Any) -> None:
    pids = [propose(client, text) for text in ("Bob lives in Lyon", "Dave likes maps")]
    async with workbench(engine, "review") as (_app, pilot):
        await pilot.press("space", "space", "y")
        await settle(pilot)
        await pilot.press("asterisk", "a")  # the batch prompt: add them all
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert [state(engine, pid) for pid in pids] == ["added", "added"]
        await pilot.press("z")
        await settle(pilot)
        assert [state(engine, pid) for pid in pids] == ["pending", "pending"]


async def test_chain_edits_are_logged_and_undone(engine: Any, client: Any) -> None:
    first = client.add("The API runs on port 8080", "project:x")["record"]
    async with workbench(engine, "supersession") as (app, pilot):
        screen = shown(app, SupersessionScreen)
        screen.open(first["uri"])
        await settle(pilot)
        await pilot.press("s", "ctrl+u", *keys("The API runs on port 9090"), "enter")
        await settle(pilot)
        assert screen.versions[-1].text == "The API runs on port 9090"
        assert review.decision_log(engine)[0]["action"] == "chain:supersede"
        await pilot.press("z")
        await settle(pilot)
        assert [v.text for v in screen.versions][-1] == "The API runs on port 8080"
        assert review.decision_log(engine)[0]["action"] == "undo:chain:supersede"


async def test_a_superseded_candidate_is_offered_as_its_current_head(
    engine: Any, client: Any
) -> None:
    old = client.add("Alice prefers green tea in the morning", "user:alice")
    pid = propose(client, "Alice prefers black tea in the morning")
    assert proposals.list_proposals(engine)[0]["candidates"][0]["uri"] == old["record"]["uri"]
    head = client.supersede(old, "Alice prefers green tea in the mornings")["record"]
    async with workbench(engine, "review") as (app, pilot):
        screen = shown(app, ReviewScreen)
        detail = str(screen.query_one("#review-detail-body", Static).render())
        assert f"▶ {head['docid']}" in detail
        assert f"current head of {old['record']['docid']} (superseded)" in detail
        await pilot.press("s")
        await settle(pilot)
        assert not [n for n in app._notifications if n.severity == "error"]
        assert state(engine, pid) == "superseded"
        assert browse.fact_row(engine, head["uri"]).superseded_by is not None


async def test_the_library_filter_survives_a_restart(engine: Any, client: Any) -> None:
    client.add("Backups run nightly", "team:infra")
    client.add("The VPN needs MFA", "team:infra")
    async with workbench(engine) as (app, pilot):
        await pilot.press("slash", *keys("!backups"))
        await settle(pilot)
        assert [r.text for r in shown(app, LibraryScreen).rows] == ["The VPN needs MFA"]
    async with workbench(engine) as (app, pilot):
        screen = shown(app, LibraryScreen)
        assert screen.query_one("#library-filter", Input).value == "!backups"
        assert [r.text for r in screen.rows] == ["The VPN needs MFA"]


async def test_demo_seeds_the_home_it_is_given_and_refuses_a_full_one(tmp_path: Path) -> None:
    full = tmp_path / "full"
    full.mkdir()
    (full / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(MemoryFailure) as caught:
        seed_demo_home(full)
    assert caught.value.code == "MEMORY_USAGE_INVALID" and "not an empty folder" in str(
        caught.value.message
    )
    assert [p.name for p in full.iterdir()] == ["notes.txt"]
    service = seed_demo_home(tmp_path / "new")
    try:
        app = create_app(service=service, watch_store=False)
        async with app.run_test() as pilot:
            await settle(pilot)
            assert len(shown(app, LibraryScreen).rows) > 20
    finally:
        service.close()
    assert (tmp_path / "new" / "index.sqlite").exists()  # it stays
