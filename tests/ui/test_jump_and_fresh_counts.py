"""A failed `:` jump is said once and leaves the screen as it was; a screen shown after a
switch never paints counts older than the store (issue 36, items 3 and 9).

Another process is a second engine on the same home (`other`): its writes reach the workbench
through the store, as an agent's over MCP do. A load held at a gate (`held`) shows what the
screen paints before its reload is in; the test opens the gate, never waits for a time."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pilot_helpers import CHANGE_WAIT_SECONDS, keys, settle, shown, store_change_shown, workbench
from textual.widgets import DataTable, Input, Label, Static, Tab, TabbedContent

from engine.facade.factory import open_engine
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.store import MemoryEngine
from gno_tui.widgets.header import WorkbenchHeader
from screens.library import LibraryScreen
from screens.receipts import ReceiptsScreen
from screens.review import ReviewScreen
from screens.supersession import SupersessionScreen


@pytest.fixture
def other(engine: MemoryEngine, client_over: Callable[[MemoryEngine], Any]) -> Iterator[Any]:
    """Another process on the same home: its own engine, database connection and lock."""
    second = open_engine(home=engine.home, embedder_status=EmbedderStatus(None, "no model"))
    yield client_over(second)
    second.db.dispose()


def propose(client: Any, text: str) -> None:
    """An agent's add on a propose-only surface: held for a person in Review."""
    client.remember(text, ["user:alice"], hold_writes=True, origin="mcp")


def toasts(app: Any, word: str) -> list[str]:
    """The notifications shown that mention `word` (title or text)."""
    return [
        f"{note.title}: {note.message}"
        for note in app._notifications
        if word in note.message or word in (note.title or "")
    ]


def held(monkeypatch: pytest.MonkeyPatch, api: Any, name: str) -> threading.Event:
    """`api.name` waits, in its worker, until the returned gate is opened."""
    gate = threading.Event()
    real = getattr(api, name)

    def waiting(*args: Any, **kwargs: Any) -> Any:
        assert gate.wait(CHANGE_WAIT_SECONDS), "the test never opened the gate"
        return real(*args, **kwargs)

    monkeypatch.setattr(api, name, waiting)
    return gate


def text_of(screen: Any, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


def header(screen: Any) -> str:
    return screen.query_one(WorkbenchHeader).format_title().plain


def proposals_tab(screen: Any) -> str:
    return screen.query_one(TabbedContent).get_tab("proposals").label.plain


# -- item 3: a failed `:` jump --------------------------------------------------------------


async def test_a_failed_jump_is_said_once_and_keeps_the_chain_shown(
    engine: Any, client: Any, other: Any
) -> None:
    fact = client.add("The deploy runs on Fridays at noon", "project:x")
    docid = fact["record"]["docid"]
    async with workbench(engine, "library", watch_store=True) as (app, pilot):
        await pilot.press("colon", *keys(docid), "enter")
        await settle(pilot)
        chain = shown(app, SupersessionScreen)
        assert [v.text for v in chain.versions] == ["The deploy runs on Fridays at noon"]

        await pilot.press("colon", *keys("#zzzz"), "enter")
        await settle(pilot)
        # Said once, with what was not found and where to look; the chain stays as it was.
        assert app.screen is chain
        [note] = toasts(app, "#zzzz")
        assert "No fact #zzzz" in note and "Library" in note
        assert chain.query_one("#chain-ref", Input).value == docid
        assert [v.text for v in chain.versions] == ["The deploy runs on Fridays at noon"]
        assert "No fact chosen" not in text_of(chain, "#chain-status")

        # Writes by another process, on this screen and on others: never said again.
        other.add("The wiki moved to Confluence", "team:infra")
        await store_change_shown(pilot)
        await pilot.press("1")
        await settle(pilot)
        other.add("The VPN needs MFA", "team:infra")
        await store_change_shown(pilot)
        await pilot.press("5")
        await settle(pilot)
        assert app.screen is chain
        assert len(toasts(app, "#zzzz")) == 1
        assert toasts(app, "MEMORY_NOT_FOUND") == []
        assert chain.query_one("#chain-ref", Input).value == docid


async def test_a_failed_jump_from_the_library_stays_there_and_a_bad_box_is_emptied(
    engine: Any, client: Any, other: Any
) -> None:
    client.add("The deploy runs on Fridays at noon", "project:x")
    async with workbench(engine, "library", watch_store=True) as (app, pilot):
        library = shown(app, LibraryScreen)
        await pilot.press("colon", *keys("#zzzz"), "enter")
        await settle(pilot)
        assert app.screen is library  # nothing to show: the Library stays in front
        assert len(toasts(app, "#zzzz")) == 1

        # The Chain screen's own box, with no chain open yet: said once, the box emptied.
        await pilot.press("5")
        await settle(pilot)
        chain = shown(app, SupersessionScreen)
        box = chain.query_one("#chain-ref", Input)
        box.focus()
        await pilot.press(*keys("#yyyy"), "enter")
        await settle(pilot)
        assert len(toasts(app, "#yyyy")) == 1
        assert box.value == "" and chain.versions == []
        other.add("The wiki moved to Confluence", "team:infra")
        await store_change_shown(pilot)
        assert len(toasts(app, "#yyyy")) == 1 and toasts(app, "MEMORY_NOT_FOUND") == []


# -- item 9: the first paint after a switch ----------------------------------------------


async def test_review_after_a_switch_never_shows_the_old_pending_count(
    engine: Any, client: Any, other: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(4):
        propose(client, f"Alice prefers dark theme number {n}")
    async with workbench(engine, "review", watch_store=True) as (app, pilot):
        review = shown(app, ReviewScreen)
        assert text_of(review, "#review-summary").startswith("4 pending")
        await pilot.press("1")
        await settle(pilot)
        for n in range(4, 8):
            propose(other, f"Alice prefers dark theme number {n}")
        await store_change_shown(pilot)  # the Library in front heard of it
        gate = held(monkeypatch, app.service.curation, "queue")

        await pilot.press("3")
        await pilot.pause()
        # The queue is still loading: shown as loading, not as the 4 of before.
        assert app.screen is review
        summary, tab = text_of(review, "#review-summary"), proposals_tab(review)
        assert "4" not in summary and "4" not in tab
        assert "loading" in summary and "…" in tab
        assert "loading" in header(review)

        gate.set()
        await settle(pilot)
        assert text_of(review, "#review-summary").startswith("8 pending")
        assert proposals_tab(review) == "Proposals 8"
        assert "loading" not in header(review)


async def test_review_shown_before_the_watcher_heard_still_shows_the_new_count(
    engine: Any, client: Any, other: Any
) -> None:
    propose(client, "Alice prefers dark theme")
    # No watcher at all: the longest a watcher can take to hear of a write.
    async with workbench(engine, "review", watch_store=False) as (app, pilot):
        review = shown(app, ReviewScreen)
        await pilot.press("1")
        await settle(pilot)
        propose(other, "Alice prefers light theme")
        await pilot.press("3")
        await settle(pilot)
        assert text_of(review, "#review-summary").startswith("2 pending")
        assert proposals_tab(review) == "Proposals 2"


async def test_receipts_after_a_switch_show_the_receipts_just_issued(
    engine: Any, client: Any, other: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client.add("Alice drinks green tea", "user:alice")
    client.recall("green tea", ["user:alice"])
    async with workbench(engine, "receipts", watch_store=True) as (app, pilot):
        receipts = shown(app, ReceiptsScreen)
        assert len(receipts.receipts) == 1
        await pilot.press("1")
        await settle(pilot)
        for _ in range(3):  # a recall issues a receipt; the store's generation does not move
            other.recall("green tea", ["user:alice"])
        gate = held(monkeypatch, app.service.receipts, "verify")

        await pilot.press("6")
        await pilot.pause()
        assert app.screen is receipts
        assert "loading" in str(receipts.query_one("#receipts-title", Label).content)

        gate.set()
        await settle(pilot)
        assert len(receipts.receipts) == 4
        assert receipts.query_one("#receipts-table", DataTable).row_count == 4
        assert "loading" not in str(receipts.query_one("#receipts-title", Label).content)


async def test_review_built_ahead_then_shown_shows_the_queue_as_it_is_now(
    engine: Any, client: Any, other: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    propose(client, "Alice prefers dark theme")
    async with workbench(engine, "library", watch_store=True) as (app, pilot):
        # The CLI builds the screens ahead while the person is on the first one (one at a
        # time, in their pauses: here each when the test asks).
        monkeypatch.setattr(app, "prebuild_when_quiet", lambda: None)
        for _ in ("remember", "review"):
            app.prebuild_next_screen()
            await settle(pilot)
        propose(other, "Alice prefers light theme")
        await store_change_shown(pilot)  # heard by the Library, in front
        gate = held(monkeypatch, app.service.curation, "queue")

        await pilot.press("3")
        await pilot.pause()
        review = shown(app, ReviewScreen)
        assert "1 pending" not in text_of(review, "#review-summary")
        assert proposals_tab(review) != "Proposals 1"

        gate.set()
        await settle(pilot)
        assert text_of(review, "#review-summary").startswith("2 pending")
        assert proposals_tab(review) == "Proposals 2"


async def test_library_after_a_switch_never_shows_the_old_tab_counts(
    engine: Any, client: Any, other: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    client.add("Alice drinks green tea", "user:alice")
    async with workbench(engine, "library", watch_store=True) as (app, pilot):
        library = shown(app, LibraryScreen)
        current = library.query_one("#tab-current", Tab)
        assert current.label.plain == "Current 1"
        await pilot.press("3")
        await settle(pilot)
        other.add("Bob drinks black coffee", "user:bob")
        other.add("Carol drinks mint tea", "user:carol")
        await store_change_shown(pilot)
        gate = held(monkeypatch, app.service.facts, "library_page")

        await pilot.press("1")
        await pilot.pause()
        # The page is still loading: its counts read as loading, not as the 1 of before.
        assert app.screen is library
        assert current.label.plain == "Current …"
        assert "1" not in library.query_one("#tab-all", Tab).label.plain

        gate.set()
        await settle(pilot)
        assert current.label.plain == "Current 3"
