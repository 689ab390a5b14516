"""A live refresh never moves what a person is choosing: with a dropdown open, another
process writes, and the highlight stays on the option the person moved to, so enter picks it;
the options the write brought are there once the dropdown closes, and a dropdown opens on its
current value. Another process is a second engine on the same home (see test_live_identity)."""

from __future__ import annotations

from typing import Any

from pilot_helpers import keys, pending_proposal, settle, shown, store_change_shown, workbench
from textual.widgets import Select, TabbedContent, TextArea
from textual.widgets._select import SelectOverlay

from engine.facade.service import MemoryService
from engine.memory.remember import RememberRequest
from gno_tui.widgets.duplicates_pane import ALL_SCOPES, DuplicatesPane
from screens.remember import RememberScreen
from screens.review import ReviewScreen


def write(service: MemoryService, text: str, scope: str) -> None:
    request = RememberRequest(text=text, scopes=[scope], caller="cli", session="s2", decision="add")
    service.remember(request)


def highlighted(select: Select[Any]) -> str | None:
    """The text of the option under the open dropdown's highlight."""
    overlay = select.query_one(SelectOverlay)
    if overlay.highlighted is None:
        return None
    return str(overlay.get_option_at_index(overlay.highlighted).prompt)


def offered(select: Select[Any]) -> list[str]:
    overlay = select.query_one(SelectOverlay)
    return [str(overlay.get_option_at_index(i).prompt) for i in range(overlay.option_count)]


async def test_duplicates_scope_highlight_stays_through_a_write(
    engine: Any, client: Any, other: MemoryService
) -> None:
    client.add("The workbench is built on Textual", "project:gno-tui")
    client.add("Alice prefers green tea in the morning", "user:alice")
    async with workbench(engine, "review", watch_store=True) as (app, pilot):
        shown(app, ReviewScreen)
        await pilot.press("right_square_bracket")
        await settle(pilot)
        assert app.screen.query_one(TabbedContent).active == "duplicates"
        pane = app.screen.query_one(DuplicatesPane)
        assert pane.scope == ALL_SCOPES  # every scope, by default
        select = pane.query_one("#dup-scope", Select)
        await pilot.press("shift+tab")  # from the pairs to the scope dropdown
        assert select.has_focus
        await pilot.press("enter")
        assert select.expanded and highlighted(select) == "all scopes"
        await pilot.press("down", "down")
        assert highlighted(select) == "user:alice"
        # A new scope that sorts between the two: the options change under the highlight.
        write(other, "Backups run nightly", "team:infra")
        await store_change_shown(pilot)
        assert select.expanded and highlighted(select) == "user:alice"
        await pilot.press("enter")
        await settle(pilot)
        assert pane.scope == "user:alice" and select.value == "user:alice"
        # Closed: the write's scope is offered now, and the dropdown opens on its value.
        await pilot.press("enter")
        assert "team:infra" in offered(select)
        assert highlighted(select) == "user:alice"
        await pilot.press("escape")
        assert not select.expanded and pane.scope == "user:alice"


async def test_remember_collection_highlight_stays_through_a_write(
    engine: Any, other: MemoryService
) -> None:
    MemoryService(engine).add_collection("team")
    async with workbench(engine, "remember", watch_store=True, debounce=pending_proposal) as (
        app,
        pilot,
    ):
        screen = shown(app, RememberScreen)
        screen.query_one("#remember-text", TextArea).focus()
        await pilot.press(*keys("Carol moved to Berlin"), "tab", *keys("user:carol"))
        await pilot.press("tab", "tab")  # past the source, to the collection
        select = screen.query_one("#remember-collection", Select)
        assert select.has_focus and select.value == "memory"
        await pilot.press("enter")
        assert highlighted(select) == "memory"
        await pilot.press("down")
        assert highlighted(select) == "team"
        MemoryService(other.engine).add_collection("archive")  # a collection sorting first
        write(other, "Backups run nightly", "team:infra")
        await store_change_shown(pilot)
        assert select.expanded and highlighted(select) == "team"
        await pilot.press("enter")
        await settle(pilot, pending_proposal)
        assert select.value == "team"
        assert screen.draft().collection == "team"
        await pilot.press("enter")  # reopened: the new collection, on the chosen value
        assert offered(select) == ["archive", "memory", "team"]
        assert highlighted(select) == "team"
