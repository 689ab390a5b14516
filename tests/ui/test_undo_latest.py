"""`z` takes back the latest decision or says plainly that it cannot, never an older one
instead (issue 36, item 1); a policy change is undone, and undoing a tightening asks before it
relaxes. An undone add leaves no retired fact behind, and on Review the cursor goes to the
proposal the undo put back (item 8). Driven by real keys."""

from __future__ import annotations

from typing import Any

from pilot_helpers import settle, shown, workbench
from textual.widgets import DataTable, Static, Tab

from engine.curation import review
from engine.memory import browse
from engine.memory.receipts import recent_receipts
from engine.storage import proposals
from screens.library import LibraryScreen
from screens.policy_picker import PolicyPicker
from screens.receipts import ReceiptsScreen
from screens.review import ReviewScreen
from screens.yes_no import YesNoPrompt

PERSON = "tui:alice"


def propose(client: Any, text: str) -> int:
    client.remember(text, ["user:alice"], hold_writes=True, origin="mcp")
    return int(proposals.list_proposals(client.engine)[-1]["id"])


def states(engine: Any, pids: list[int]) -> list[str]:
    found = {p["id"]: p["state"] for p in proposals.list_proposals(engine, state=None)}
    return [found[pid] for pid in pids]


def messages(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications]


def policy_cells(screen: ReceiptsScreen, name: str) -> list[str]:
    """The collection's policy, source and revision as its row shows them."""
    table = screen.query_one("#collections-table", DataTable)
    return [str(cell).strip() for cell in table.get_row(name)[2:5]]


async def choose_policy(pilot: Any, *moves: str) -> None:
    """`p` on Receipts, the picker's moves from the current policy (down: looser), enter."""
    await pilot.press("p")
    await pilot.pause()
    assert isinstance(pilot.app.screen, PolicyPicker)
    await pilot.press(*moves, "enter")
    await settle(pilot)


async def test_z_after_a_policy_change_undoes_it_not_an_older_review_batch(
    engine: Any, client: Any
) -> None:
    pids = [propose(client, text) for text in ("Bob lives in Lyon", "Dave likes maps")]
    async with workbench(engine, "review", actor=PERSON) as (app, pilot):
        await pilot.press("space", "space", "y")  # a batch of two adds, on Review
        await settle(pilot)
        await pilot.press("asterisk", "a")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert states(engine, pids) == ["added", "added"]
        await pilot.press("6")  # then a policy change on Receipts: memory relaxed to lan
        await settle(pilot)
        screen = shown(app, ReceiptsScreen)
        await choose_policy(pilot, "down")
        await pilot.press("y")
        await settle(pilot)
        assert policy_cells(screen, "memory") == ["lan", "explicit", "2"]

        await pilot.press("z")
        await settle(pilot)
        # The policy change is what is taken back (tightening: at once); the batch stays.
        assert not isinstance(app.screen, YesNoPrompt)
        assert policy_cells(screen, "memory") == ["local_only", "config_default", "3"]
        assert states(engine, pids) == ["added", "added"]
        assert "undone: set-policy on memory" in messages(app)
        assert not any("passed over" in m for m in messages(app))


async def test_undoing_a_tightening_asks_before_it_relaxes_the_policy_again(engine: Any) -> None:
    engine.add_collection("team", policy="lan")
    async with workbench(engine, "receipts", actor=PERSON) as (app, pilot):
        screen = shown(app, ReceiptsScreen)
        screen.query_one("#collections-table", DataTable).move_cursor(row=1)
        await choose_policy(pilot, "up")  # team: lan -> local_only, at once
        assert policy_cells(screen, "team") == ["local_only", "explicit", "2"]

        await pilot.press("z")
        await settle(pilot)
        assert isinstance(app.screen, YesNoPrompt)
        question = str(app.screen.query_one("#yes-no-question", Static).content)
        assert "relaxes team from local_only back to lan (revision 2)" in question
        await pilot.press("n")
        await settle(pilot)
        assert policy_cells(screen, "team") == ["local_only", "explicit", "2"]
        assert "Nothing undone: the policy stays." in messages(app)

        await pilot.press("z")
        await settle(pilot)
        await pilot.press("y")
        await settle(pilot)
        assert policy_cells(screen, "team") == ["lan", "explicit", "3"]
        assert "undone: set-policy on team" in messages(app)


async def test_z_says_deleted_receipts_cannot_be_undone_and_undoes_nothing_older(
    engine: Any, client: Any
) -> None:
    uri = client.add("Alice prefers green tea", "user:alice")["record"]["uri"]
    client.recall("alice tea", ["user:alice"])
    async with workbench(engine, actor=PERSON) as (app, pilot):
        await pilot.press("c")  # confirm the fact in the Library
        await settle(pilot)
        await pilot.press("6")
        await settle(pilot)
        await pilot.press("d", "y")  # delete the receipt
        await settle(pilot)
        assert recent_receipts(engine) == []

        await pilot.press("z")
        await settle(pilot)
        (refusal,) = [n for n in app._notifications if n.title == "MEMORY_UNDO_UNSUPPORTED"]
        assert "Cannot undo your latest decision, delete-receipts" in str(refusal.message)
        assert "deleted receipts are gone" in str(refusal.message)
        # The older confirm is not taken back instead.
        assert not any(m.startswith("undone") for m in messages(app))
        status = browse.fact_row(engine, uri).workbench["provenance"]["status"]
        assert status == "user_confirmed"


async def test_an_undone_add_leaves_no_retired_fact(engine: Any, client: Any) -> None:
    old = client.add("Dan plays chess", "user:alice")["record"]["uri"]
    review.retire(engine, ref=old, actor=PERSON, reason="he stopped")
    propose(client, "Carol moved to Berlin")
    async with workbench(engine, "review", actor=PERSON) as (app, pilot):
        await pilot.press("a")
        await settle(pilot)
        await pilot.press("z")
        await settle(pilot)
        await pilot.press("1")
        await settle(pilot)
        library = shown(app, LibraryScreen)
        labels = [str(tab.label.plain) for tab in library.query(Tab)]
        assert "Retired 1" in labels and "All 1" in labels  # as before the add
        assert [row.text for row in library.rows] == ["Dan plays chess"]


async def test_after_z_in_review_the_cursor_is_on_the_restored_proposal(
    engine: Any, client: Any
) -> None:
    texts = ("Bob lives in Lyon", "Carol moved to Berlin", "Dave likes maps")
    pids = [propose(client, text) for text in texts]
    async with workbench(engine, "review", actor=PERSON) as (app, pilot):
        screen = shown(app, ReviewScreen)
        await pilot.press("a")  # Bob's, added: the cursor moves on to Carol's
        await settle(pilot)
        await pilot.press("j")  # and on to Dave's
        current = screen.current()
        assert current is not None and current["id"] == pids[2]

        await pilot.press("z")
        await settle(pilot)
        current = screen.current()
        assert current is not None and current["id"] == pids[0]
        detail = str(screen.query_one("#review-detail-body", Static).render())
        assert "Bob lives in Lyon" in detail
