"""What keeps the keys 1-6 quick (issue 16), as a person sees it: screens built before their
key, shown again as they were unless the store changed, and nothing hidden by the footer.
The times themselves are measured in benchmarks/workbench_latency.py, never here."""

from __future__ import annotations

import gc
from typing import Any

from pilot_helpers import SIZE, settle, shown, store_change_shown, workbench
from textual.widgets import DataTable, Static, TabbedContent

from engine.facade.service import MemoryService
from engine.storage import proposals
from gno_tui.app import create_app
from gno_tui.widgets.footer import WorkbenchFooter
from screens import SCREENS_BY_MODE
from screens.library import LibraryScreen
from screens.review import ReviewScreen


def propose(client: Any, text: str) -> None:
    """An agent's held write: a proposal in the review queue."""
    before = len(proposals.list_proposals(client.engine))
    client.remember(text, ["user:alice"], hold_writes=True, origin="mcp")
    assert len(proposals.list_proposals(client.engine)) == before + 1


def proposal_rows(screen: ReviewScreen) -> int:
    return screen.query_one("#review-proposals", DataTable).row_count


async def test_the_cli_builds_every_screen_before_its_key(engine: Any, client: Any) -> None:
    propose(client, "Alice drinks green tea")
    app = create_app(service=MemoryService(engine), watch_store=False, prebuild_screens=True)
    try:
        async with app.run_test(size=SIZE) as pilot:
            # Built one at a time while no worker loads; each step is asked for here instead
            # of waiting for the app's own retry timer (wall time).
            for _ in range(len(SCREENS_BY_MODE)):
                await settle(pilot)
                app.prebuild_next_screen()
            await settle(pilot)
            assert set(app.mode_screens) == set(SCREENS_BY_MODE)
            review = app.mode_screens["review"]
            assert isinstance(review, ReviewScreen) and proposal_rows(review) == 1
            assert isinstance(app.screen, LibraryScreen)  # built in the background, not shown
            await pilot.press("3")
            # The screen the key shows is the one built before it, its proposal already listed.
            assert shown(app, ReviewScreen) is review and proposal_rows(review) == 1
    finally:
        gc.unfreeze()  # the app froze the heap once all was built (a process of its own would)


async def test_a_key_the_moment_the_workbench_starts(engine: Any, client: Any) -> None:
    propose(client, "Alice drinks green tea")
    app = create_app(service=MemoryService(engine), watch_store=False, prebuild_screens=True)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await pilot.press("3")  # while the other screens are still being built
            await settle(pilot)
            assert proposal_rows(shown(app, ReviewScreen)) == 1
    finally:
        gc.unfreeze()


async def test_a_screen_shown_again_reloads_only_if_the_store_changed(
    engine: Any, client: Any
) -> None:
    propose(client, "Alice drinks green tea")
    async with workbench(engine, "review", watch_store=True) as (app, pilot):
        review = shown(app, ReviewScreen)
        assert proposal_rows(review) == 1
        await pilot.press("1")
        await settle(pilot)
        await pilot.press("3")
        await settle(pilot)
        assert shown(app, ReviewScreen) is review and proposal_rows(review) == 1
        await pilot.press("1")
        await settle(pilot)
        # Another process queues a proposal while the Library is in front: the watcher's read
        # tells the Library; Review, in the background, hears nothing until it is shown again.
        propose(client, "Alice moved to Lyon")
        await store_change_shown(pilot)
        assert proposal_rows(review) == 1
        await pilot.press("3")
        await settle(pilot)
        assert proposal_rows(shown(app, ReviewScreen)) == 2


async def test_the_library_summary_is_above_the_footer(engine: Any, client: Any) -> None:
    for number in range(60):  # more rows than the table has lines
        client.add(f"Fact number {number} about the deploy", "project:x")
    async with workbench(engine) as (app, pilot):
        library = shown(app, LibraryScreen)
        summary = library.query_one("#library-summary", Static)
        footer = library.query_one(WorkbenchFooter)
        assert str(summary.content).startswith("60 of 60 shown")
        assert summary.region.height == 1 and summary.region.bottom <= footer.region.y
        await pilot.press("slash", *"deploy")  # the filter box takes rows, not the summary
        await settle(pilot)
        assert "filter: deploy" in str(summary.content)
        assert summary.region.height == 1 and summary.region.bottom <= footer.region.y


async def test_review_built_ahead_finds_its_duplicate_pairs_only_once_shown(
    engine: Any, client: Any
) -> None:
    # Two near-duplicates: the Duplicates tab counts one pair once it has worked them out, a
    # pass over every fact of the scope that a quit would have to wait for (seconds at 100k).
    client.remember("Alice drinks green tea every morning", ["user:alice"])
    client.remember("Alice drinks green tea every morning.", ["user:alice"])
    app = create_app(service=MemoryService(engine), watch_store=False, prebuild_screens=True)
    try:
        async with app.run_test(size=SIZE) as pilot:
            for _ in range(len(SCREENS_BY_MODE)):
                await settle(pilot)
                app.prebuild_next_screen()
            await settle(pilot)
            review = app.mode_screens["review"]
            assert isinstance(review, ReviewScreen)
            tabs = review.query_one("#review-tabs", TabbedContent)
            assert str(tabs.get_tab("duplicates").label) == "Duplicates"  # not worked out
            await pilot.press("3")
            await settle(pilot)
            assert shown(app, ReviewScreen) is review
            assert str(tabs.get_tab("duplicates").label) == "Duplicates 1"
    finally:
        gc.unfreeze()


async def test_a_screen_first_shown_is_styled_by_the_stylesheet_parsed_at_the_start(
    engine: Any, client: Any
) -> None:
    # A screen that brought its own CSS made Textual parse the whole stylesheet again from
    # scratch and restyle every screen built so far, on the key that first showed it (0.2-0.3
    # s). Every screen's rules are in the app's sheet from the start: the sheet's own sources
    # (not the widgets' defaults) stay as they were, and the screens still get their rules.
    propose(client, "Alice drinks green tea")

    def own_sources(app: Any) -> set[Any]:
        return {where for where, source in app.stylesheet.source.items() if not source.is_defaults}

    async with workbench(engine) as (app, pilot):
        at_start = own_sources(app)
        for key in "23456":
            await pilot.press("escape", key)
            await settle(pilot)
        await pilot.press("escape", "3")
        await settle(pilot)
        assert own_sources(app) == at_start
        review = shown(app, ReviewScreen)
        assert str(review.query_one("#review-summary", Static).content).startswith("1 pending")
        # The Review's own rules (screens/review.py STYLES) apply: its summary is two lines.
        assert review.query_one("#review-summary").region.height == 2
