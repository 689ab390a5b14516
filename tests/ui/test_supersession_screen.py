"""The Supersession screen: the chain, its diffs, as-of, and superseding the head."""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pilot_helpers import keys, settle, shown, workbench
from rich.console import Console
from rich.table import Table
from rich.text import Text
from textual.widgets import DataTable, Input, Static

from engine.facade.factory import open_engine
from engine.memory import browse
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.store import MemoryEngine
from screens.library import LibraryScreen
from screens.reason_prompt import ReasonPrompt
from screens.supersession import SupersessionScreen

if TYPE_CHECKING:
    from conftest import Client

START = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def rendered(app: Any, selector: str) -> str:
    """What a widget shows, as plain text (its content may be any rich renderable)."""
    console = Console(width=138, file=io.StringIO(), record=True)
    console.print(app.screen.query_one(selector, Static).content)
    return console.export_text()


def text_of(app: Any, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).content)


class Clock:
    """A clock the test moves by hand."""

    def __init__(self) -> None:
        self.at = START

    def __call__(self) -> datetime:
        return self.at


@pytest.fixture
def clocked(tmp_path: Path) -> Iterator[tuple[MemoryEngine, Clock]]:
    clock = Clock()
    store = open_engine(
        home=tmp_path / "clocked",
        clock=clock,
        embedder_status=EmbedderStatus(None, "tests: lexical"),
    )
    yield store, clock
    store.db.dispose()


async def test_supersede_the_head_grows_the_chain(engine: Any, client: Any) -> None:
    first = client.add("The deploy runs on Fridays at noon", "project:x")
    async with workbench(engine, "supersession", chain=first["record"]["recordId"]) as (app, pilot):
        screen = shown(app, SupersessionScreen)
        assert len(screen.versions) == 1
        await pilot.press("s")
        await pilot.pause()
        assert isinstance(app.screen, ReasonPrompt)
        prompt = app.screen.query_one("#reason-input", Input)
        assert prompt.value == "The deploy runs on Fridays at noon"  # the head's text
        await pilot.press("ctrl+u", *keys("The deploy runs on Mondays at noon"))
        assert prompt.value == "The deploy runs on Mondays at noon"
        await pilot.press("enter")
        await settle(pilot)
        assert [v.text for v in screen.versions] == [
            "The deploy runs on Fridays at noon",
            "The deploy runs on Mondays at noon",
        ]
        head = screen.versions[-1]
        assert head.caller == app.actor and head.supersedes == [first["record"]["uri"]]
        assert head.workbench["provenance"]["createdBy"] == "user"
        assert screen.query_one("#chain-table", DataTable).row_count == 2
        assert "supersedes " + screen.versions[0].docid in str(
            screen.query_one("#chain-table", DataTable).get_row_at(1)[4]
        )
        body = rendered(app, "#chain-diff-body")
        assert "Fridays" in body and "Mondays" in body and "1 word(s) changed from v1" in body
        diff = screen.query_one("#chain-diff-body", Static).content
        texts = [part for part in diff.renderables if isinstance(part, Text)]  # type: ignore[union-attr]
        assert any("strike" in str(span.style) for text in texts for span in text.spans)
        # i shows the diff side by side: the old version beside the new one.
        await pilot.press("i")
        diff = screen.query_one("#chain-diff-body", Static).content
        assert any(isinstance(part, Table) for part in diff.renderables)  # type: ignore[union-attr]
        assert "v1" in rendered(app, "#chain-diff-body")
        await pilot.press("i")
        # Again, from the new head: three versions.
        await pilot.press("s")
        await pilot.pause()
        app.screen.query_one("#reason-input", Input).value = "The deploy runs on Tuesdays"
        await pilot.press("enter")
        await settle(pilot)
        assert len(screen.versions) == 3
        assert len(browse.chain(engine, first["record"]["uri"])) == 3
        # h / l move between versions; the cursor starts on the head.
        table = screen.query_one("#chain-table", DataTable)
        assert table.cursor_row == 2
        await pilot.press("h", "h")
        assert table.cursor_row == 0
        await pilot.press("l")
        assert table.cursor_row == 1
        assert "▶ v2" in rendered(app, "#chain-diff-body")
        # u on v1 reverts: a fourth version with v1's text, the history kept.
        await pilot.press("h", "u")
        await pilot.pause()
        assert app.screen.query_one("#reason-input", Input).value == screen.versions[0].text
        await pilot.press("enter")
        await settle(pilot)
        assert [v.text for v in screen.versions][-1] == "The deploy runs on Fridays at noon"
        assert len(screen.versions) == 4


async def test_a_conflicting_head_says_refresh_and_keeps_the_edited_text(
    engine: Any, client: Any
) -> None:
    first = client.add("Carol drinks coffee", "user:carol")
    async with workbench(engine, "supersession", chain=first["record"]["uri"]) as (app, pilot):
        screen = shown(app, SupersessionScreen)
        assert len(screen.versions) == 1
        await pilot.press("s")
        await pilot.pause()
        box = app.screen.query_one("#reason-input", Input)
        box.value = ""
        await pilot.press(*keys("Carol drinks tea"))
        client.supersede(first, "Carol drinks water")  # another writer, while the person types
        await pilot.press("enter")
        await settle(pilot)
        messages = [note.message for note in app._notifications]
        assert any("head changed, refresh" in m for m in messages)
        assert [v.text for v in screen.versions] == ["Carol drinks coffee", "Carol drinks water"]
        assert "Carol drinks tea" not in [r.text for r in browse.list_facts(engine).rows]
        # The typed text is not lost: it is offered again, over the new head.
        prompt = shown(app, ReasonPrompt)
        assert prompt.query_one("#reason-input", Input).value == "Carol drinks tea"
        assert "Carol drinks water" in str(prompt.query_one(".modal-context").render())
        await pilot.press("enter")
        await settle(pilot)
        assert [v.text for v in screen.versions] == [
            "Carol drinks coffee",
            "Carol drinks water",
            "Carol drinks tea",
        ]


async def test_as_of_highlights_the_version_current_then(
    clocked: tuple[MemoryEngine, Clock], client_over: Callable[[MemoryEngine], Client]
) -> None:
    store, clock = clocked
    client = client_over(store)
    first = client.add("Alice lives in Paris", "user:alice")
    clock.at = START + timedelta(days=10)
    second = client.supersede(first, "Alice lives in Lyon")
    clock.at = START + timedelta(days=20)
    client.supersede(second, "Alice lives in Berlin")
    clock.at = START + timedelta(days=30)
    async with workbench(store, "supersession", chain=second["record"]["recordId"]) as (app, pilot):
        screen = shown(app, SupersessionScreen)
        assert [v.text for v in screen.versions] == [
            "Alice lives in Paris",
            "Alice lives in Lyon",
            "Alice lives in Berlin",
        ]
        await pilot.press("T")
        await pilot.pause()
        assert isinstance(app.screen, ReasonPrompt)
        await pilot.press("ctrl+u", *"2026-11-15T00:00Z")
        await pilot.press("enter")
        await pilot.pause()
        assert screen.as_of_id == second["record"]["recordId"]
        assert screen.query_one("#chain-table", DataTable).cursor_row == 1
        status = text_of(app, "#chain-status")
        assert "as of 2026-11-15T00:00:00.000Z" in status and "v2" in status
        assert "◆ as of" in rendered(app, "#chain-diff-body")
        # Before the first version, nothing was current.
        await pilot.press("T", "ctrl+u", *"2026-10-01")
        await pilot.press("enter")
        await pilot.pause()
        assert screen.as_of_id is None
        assert "no version of this fact was current then" in text_of(app, "#chain-status")
        # A time that is not ISO 8601 is refused with a message, in the prompt, which stays.
        await pilot.press("T", "ctrl+u", *"last", "space", *"week", "enter")
        await pilot.pause()
        prompt = shown(app, ReasonPrompt)
        assert "not an ISO 8601 time" in str(prompt.query_one(".modal-problem", Static).render())


async def test_the_library_and_recall_open_the_chain(engine: Any, client: Any) -> None:
    first = client.add("Dave likes maps", "user:dave")
    client.supersede(first, "Dave likes old maps")
    client.add("Erin likes trains", "user:erin")
    async with workbench(engine, "library") as (app, pilot):
        library = app.screen
        assert isinstance(library, LibraryScreen)
        library.action_open_chain()  # the Library's "open chain" command (on the top row)
        await settle(pilot)
        screen = shown(app, SupersessionScreen)
        assert len(screen.versions) in (1, 2)
        # From Recall, enter on a fact opens its chain in the same (resumed) screen.
        await pilot.press("4")
        await settle(pilot)
        app.screen.query_one("#recall-query", Input).focus()
        await pilot.press(*"maps", "enter")
        await settle(pilot)
        await pilot.press("enter")
        await settle(pilot)
        assert app.screen is screen and isinstance(screen, SupersessionScreen)
        assert [v.text for v in screen.versions] == ["Dave likes maps", "Dave likes old maps"]
        # Typing another reference in the box opens that chain.
        erin = browse.list_facts(engine, text="Erin").rows[0]
        await pilot.press("slash", "ctrl+u", *erin.docid, "enter")
        await settle(pilot)
        assert [v.text for v in screen.versions] == ["Erin likes trains"]


async def test_a_keyed_chain_shows_key_revision_topic_tags_and_expiry(engine) -> None:
    from engine.keyed import service as keyed

    keyed.remember(
        engine,
        {
            "key": "bob/city",
            "memory": {"content": "Bob lives in Paris", "topic": "home", "tags": ["Move"]},
        },
    )
    head = keyed.remember(
        engine,
        {
            "key": "bob/city",
            "if_revision": 1,
            "ttl_seconds": 600,
            "memory": {"content": "Bob lives in Lyon", "topic": "home"},
        },
    )
    assert head["revision"] == 2
    async with workbench(engine, "supersession", chain=browse_head(engine)) as (app, _pilot):
        import io

        from rich.console import Console

        console = Console(width=200, record=True, file=io.StringIO())
        console.print(app.screen.query_one("#chain-diff-body").content)  # type: ignore[attr-defined]
        text = console.export_text()
        assert "key bob/city rev 1" in text and "key bob/city rev 2" in text
        assert "topic home" in text and "tags move" in text and "expires" in text


def browse_head(engine) -> str:
    from engine.memory import browse

    return browse.list_facts(engine, status="current").rows[0].record_id


async def test_colon_jumps_to_a_fact_by_docid_from_any_screen(engine: Any, client: Any) -> None:
    first = client.add("The deploy runs on Fridays at noon", "project:x")
    later = client.supersede(first, "The deploy runs on Mondays at noon")
    other = client.add("Bob lives in Lyon", "user:bob")
    async with workbench(engine, "library") as (app, pilot):
        await pilot.press("colon", *keys(first["record"]["docid"]), "enter")
        await settle(pilot)
        screen = shown(app, SupersessionScreen)
        assert [v.record_id for v in screen.versions] == [
            first["record"]["recordId"],
            later["record"]["recordId"],
        ]
        # Already on the chain screen: `:` opens another fact in place.
        await pilot.press("colon", *keys(other["record"]["uri"]), "enter")
        await settle(pilot)
        assert app.screen is screen and isinstance(screen, SupersessionScreen)
        assert [v.record_id for v in screen.versions] == [other["record"]["recordId"]]


async def test_braces_set_how_much_unchanged_text_the_diffs_keep(engine: Any, client: Any) -> None:
    first = client.add(
        "The deploy runs on Fridays at noon from the main branch after the tests pass",
        "project:x",
    )
    client.supersede(
        first, "The deploy runs on Mondays at noon from the main branch after the tests pass"
    )
    async with workbench(engine, "supersession", chain=first["record"]["uri"]) as (app, pilot):
        app.screen.query_one("#chain-table", DataTable).focus()
        assert "The deploy runs on Fridays Mondays at noon from the main branch" in rendered(
            app, "#chain-diff-body"
        )
        await pilot.press("left_curly_bracket", "left_curly_bracket")  # 3 words of context
        await settle(pilot)
        diff = rendered(app, "#chain-diff-body")
        assert "The deploy runs on Fridays Mondays at noon from …\n" in diff
        # The first version is shown whole: it has no diff.
        assert "on Fridays at noon from the main branch after the tests pass" in diff
        await pilot.press("left_curly_bracket", "left_curly_bracket", "left_curly_bracket")
        await settle(pilot)
        assert "… Fridays Mondays …" in rendered(app, "#chain-diff-body")
        assert any("0 unchanged word(s)" in n.message for n in app._notifications)
        await pilot.press(*["right_curly_bracket"] * 6)  # past the end: the whole text
        await settle(pilot)
        assert "The deploy runs on Fridays Mondays at noon from the main branch" in rendered(
            app, "#chain-diff-body"
        )
        assert any("the whole text" in n.message for n in app._notifications)
