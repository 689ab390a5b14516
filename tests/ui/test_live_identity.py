"""A live refresh keeps every list's cursor on the same item (by identity, not row number),
the Library filter's `!` negates any term wherever it stands, and the detail header agrees
with the row. Another process is a second engine on the same home: its writes reach the
workbench through the store's change feed, which the app's store watcher waits on."""

from __future__ import annotations

from typing import Any

from pilot_helpers import keys, settle, shown, store_change_shown, workbench
from textual.widgets import Static

from engine.curation import review
from engine.facade.service import MemoryService
from engine.memory import browse
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest
from engine.storage import proposals
from gno_tui.widgets.fact_table import FactTable
from gno_tui.widgets.fitted_table import FittedTable
from screens.library import LibraryScreen
from screens.recall import RecallScreen
from screens.receipts import ReceiptsScreen
from screens.review import ReviewScreen
from screens.supersession import SupersessionScreen


def write(service: MemoryService, text: str, scope: str = "team:infra", **fields: Any) -> Any:
    request = RememberRequest(
        text=text, scopes=[scope], caller="cli", session="s2", decision="add", **fields
    )
    return service.remember(request)


async def refreshed(app: Any, pilot: Any) -> None:
    """The app's store watcher saw the other process's write, and the screen reloaded."""
    await store_change_shown(pilot)


def cursor_key(app: Any, selector: str) -> str | None:
    """The key (identity) of the row under the table's cursor."""
    table = app.screen.query_one(selector, FactTable)
    value = table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value
    return value if isinstance(value, str) else None


async def test_library_refresh_keeps_the_cursor_and_the_next_key_on_the_same_fact(
    engine: Any, client: Any, other: MemoryService
) -> None:
    for text in ("Backups run nightly", "The VPN needs MFA", "Deploys run on Fridays"):
        client.add(text, "team:infra")
    async with workbench(engine, watch_store=True) as (app, pilot):
        screen = shown(app, LibraryScreen)
        await pilot.press("j")  # the second row: "The VPN needs MFA"
        await settle(pilot)
        chosen = screen.rows[1]
        assert chosen.text == "The VPN needs MFA"
        write(other, "The wiki moved to Confluence")  # newest: the first row now
        await refreshed(app, pilot)
        assert screen.rows[0].text == "The wiki moved to Confluence"
        assert cursor_key(app, "#library-table") == chosen.record_id
        detail = str(screen.query_one("#library-detail-body", Static).render())
        assert chosen.docid in detail and "The VPN needs MFA" in detail
        await pilot.press("c")  # the next key acts on the fact the person chose
        await settle(pilot)
        confirmed = browse.fact_row(engine, chosen.record_id)
        assert confirmed.workbench["provenance"]["status"] == "user_confirmed"
        others = [r for r in browse.list_facts(engine).rows if r.record_id != chosen.record_id]
        assert all(r.workbench["provenance"]["status"] != "user_confirmed" for r in others)


async def test_review_refresh_keeps_the_cursor_on_the_same_proposal(
    engine: Any, client: Any, other: MemoryService
) -> None:
    for text in ("Carol moved to Berlin", "Bob lives in Lyon", "The deadline is Friday"):
        client.remember(text, ["user:alice"], hold_writes=True, origin="mcp")
    first, second, _ = (p["id"] for p in proposals.list_proposals(engine))
    async with workbench(engine, "review", watch_store=True) as (app, pilot):
        screen = shown(app, ReviewScreen)
        await pilot.press("j")
        await settle(pilot)
        # Another person decides the first proposal: it leaves the queue, the rows move up.
        other.curation.decide(review.Decision(first, "reject", "tui:bob", reason="wrong"))
        await refreshed(app, pilot)
        assert (current := screen.current()) is not None and current["id"] == second
        await pilot.press("a")
        await settle(pilot)
        states = {p["id"]: p["state"] for p in proposals.list_proposals(engine, state=None)}
        assert states[second] == "added" and list(states.values()).count("pending") == 1


async def test_receipts_refresh_keeps_the_cursor_on_the_same_receipt(
    engine: Any, client: Any, other: MemoryService
) -> None:
    client.add("Alice drinks green tea", "user:alice")
    for _ in range(2):
        client.recall("green tea", ["user:alice"])
    async with workbench(engine, "receipts", watch_store=True) as (app, pilot):
        screen = shown(app, ReceiptsScreen)
        await pilot.press("j")
        await settle(pilot)
        chosen = screen.receipts[1]["digest"]
        other.recall(RecallRequest(query="tea", scopes=["user:alice"], caller="cli", session="x"))
        write(other, "Alice drinks oolong too", "user:alice")  # a recall alone is no change
        await refreshed(app, pilot)
        assert len(screen.receipts) == 3 and screen.receipts[2]["digest"] == chosen
        assert cursor_key(app, "#receipts-table") == chosen
        assert (receipt := screen.selected_receipt()) is not None
        assert receipt["digest"] == chosen


async def test_chain_refresh_keeps_the_cursor_on_the_same_version(
    engine: Any, client: Any, other: MemoryService
) -> None:
    first = client.add("The API runs on port 8080", "project:x")
    second = client.supersede(first, "The API runs on port 9090")
    async with workbench(engine, "supersession", watch_store=True) as (app, pilot):
        screen = shown(app, SupersessionScreen)
        screen.open(first["record"]["uri"])
        await settle(pilot)
        await pilot.press("h")  # the older version
        await settle(pilot)
        assert cursor_key(app, "#chain-table") == first["record"]["recordId"]
        head = second["record"]
        other.remember(
            RememberRequest(
                text="The API runs on port 7070",
                scopes=None,
                caller="cli",
                session="s2",
                decision="supersede",
                predecessor=head["uri"],
                predecessor_hash=head["contentHash"],
            )
        )
        await refreshed(app, pilot)
        assert len(screen.versions) == 3
        assert cursor_key(app, "#chain-table") == first["record"]["recordId"]


async def test_recall_run_again_keeps_the_cursor_on_the_same_fact(engine: Any, client: Any) -> None:
    for text in ("Alice drinks green tea", "Alice drinks black tea", "Alice likes tea at 5"):
        client.add(text, "user:alice")
    async with workbench(engine, "recall") as (app, pilot):
        screen = shown(app, RecallScreen)
        await pilot.press(*keys("tea"), "enter")
        await settle(pilot)
        await pilot.press("j")
        chosen = cursor_key(app, "#recall-table")
        assert screen.result is not None
        assert chosen is not None and chosen != screen.result["facts"][0]["recordId"]
        await pilot.press("t")  # the format changes: the recall runs again
        await settle(pilot)
        assert cursor_key(app, "#recall-table") == chosen


# -- the filter's `!` --------------------------------------------------------------------


def listed(screen: LibraryScreen) -> set[str]:
    return {row.text for row in screen.rows}


async def test_negation_applies_to_any_term_wherever_it_stands(engine: Any, client: Any) -> None:
    memory = MemoryService(engine)
    memory.add_collection("team", policy="lan")
    client.add("Backups run nightly", "team:infra", collection="team")
    client.add("The VPN needs MFA", "team:infra", collection="team")
    client.add("Backups of the laptop run weekly", "user:alice")
    async with workbench(engine) as (app, pilot):
        screen = shown(app, LibraryScreen)
        await pilot.press("slash", *keys("c:team !backups"))
        await settle(pilot)
        assert listed(screen) == {"The VPN needs MFA"}
        await pilot.press("ctrl+u", *keys("backups !c:team"))
        await settle(pilot)
        assert listed(screen) == {"Backups of the laptop run weekly"}
        await pilot.press("ctrl+u", *keys("run !s:team:infra"))
        await settle(pilot)
        assert listed(screen) == {"Backups of the laptop run weekly"}
        await pilot.press("ctrl+u", *keys("!weekly !mfa"))
        await settle(pilot)
        assert listed(screen) == {"Backups run nightly"}


# -- the detail header -------------------------------------------------------------------


async def test_the_detail_header_says_what_the_row_says(engine: Any, client: Any) -> None:
    uri = client.add("The staging box is rebuilt on Mondays", "team:infra")["record"]["uri"]
    review.mark_stale(engine, ref=uri, actor="tui:alice")
    async with workbench(engine) as (app, pilot):
        screen = shown(app, LibraryScreen)
        await pilot.press("j", "k")  # highlight it (the detail loads on a highlight)
        await settle(pilot)
        row = screen.query_one(FittedTable).full_row_at(0)  # every cell, shown or not
        assert str(row[3]) == "stale"
        header = str(screen.query_one("#library-detail-body", Static).render()).splitlines()[0]
        assert header.endswith("stale"), header
