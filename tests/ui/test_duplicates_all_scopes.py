"""Review's Duplicates tab lists near-duplicates across every scope unless a scope is picked:
the same fact stored under user:alice and project:x is a pair with no scope picked, the row
shows each side's scopes, the detail says which scope retiring either side leaves without the
fact, picking a scope with the keyboard narrows the list, and `r` still retires one side. A cap
on what was compared or listed is said under the list."""

from __future__ import annotations

from typing import Any

import pytest
from pilot_helpers import settle, shown, workbench
from textual.widgets import DataTable, Select, Static, TabbedContent
from textual.widgets._select import SelectOverlay

from engine.curation import duplicates
from engine.memory import browse
from engine.retrieval.seam import LEXICAL, SEMANTIC
from gno_tui.widgets.duplicates_pane import DuplicatesPane
from screens.review import ReviewScreen

TEA = "Alice prefers green tea in the morning"


def rows(pane: DuplicatesPane) -> list[dict[str, str]]:
    """Each row's cells by column title (the columns shown depend on the width)."""
    table = pane.query_one("#dup-table", DataTable)
    titles = [str(column.label) for column in table.ordered_columns]
    return [
        dict(zip(titles, map(str, table.get_row_at(i)), strict=True))
        for i in range(table.row_count)
    ]


def text_of(pane: DuplicatesPane, selector: str) -> str:
    return str(pane.query_one(selector, Static).render())


def highlighted(select: Select[Any]) -> str:
    overlay = select.query_one(SelectOverlay)
    assert overlay.highlighted is not None
    return str(overlay.get_option_at_index(overlay.highlighted).prompt)


async def open_duplicates(pilot: Any) -> DuplicatesPane:
    shown(pilot.app, ReviewScreen)
    await pilot.press("right_square_bracket")
    await settle(pilot)
    assert pilot.app.screen.query_one(TabbedContent).active == "duplicates"
    return pilot.app.screen.query_one("#dup-pane", DuplicatesPane)


async def test_a_fact_in_two_scopes_is_a_pair_with_no_scope_picked(
    engine: Any, client: Any
) -> None:
    alice = client.add(TEA, "user:alice")["record"]
    project = client.add(TEA, "project:x")["record"]
    client.add("Backups run nightly", "team:infra")
    async with workbench(engine, "review") as (_app, pilot):
        pane = await open_duplicates(pilot)
        select = pane.query_one("#dup-scope", Select)
        assert select.value == "*"  # all scopes, with none picked
        [row] = rows(pane)
        assert row["scopes"] == "user:alice ↔ project:x"  # older's scopes ↔ newer's
        assert row["older"].startswith(alice["docid"])
        assert row["newer"].startswith(project["docid"])
        summary = text_of(pane, "#dup-summary")
        assert "1 near-duplicate pair(s) across all scopes · 1 cross-scope" in summary
        detail = text_of(pane, "#dup-diff")
        assert f"{alice['docid']} (older, in user:alice)" in detail
        assert f"{project['docid']} (newer, in project:x)" in detail
        assert "r (retire the older) leaves user:alice without it" in detail
        assert "R (retire the newer) leaves project:x without it" in detail

        # Narrow to one scope with the keys: neither scope holds both facts.
        await pilot.press("shift+tab", "enter")
        assert select.expanded and highlighted(select) == "all scopes"
        await pilot.press("down")
        assert highlighted(select) == "project:x"
        await pilot.press("enter")
        await settle(pilot)
        assert pane.scope == "project:x" and rows(pane) == []
        assert "0 near-duplicate pair(s) in scope project:x" in text_of(pane, "#dup-summary")
        assert "No near-duplicate pair in this scope." in text_of(pane, "#dup-diff")
        # And back to every scope.
        await pilot.press("enter", "up", "enter")
        await settle(pilot)
        assert [row["scopes"] for row in rows(pane)] == ["user:alice ↔ project:x"]

        # `r` retires the older side, as for any pair: the fact stays in project:x.
        await pilot.press("tab")
        assert pane.query_one("#dup-table", DataTable).has_focus
        await pilot.press("r")
        await settle(pilot)
        assert rows(pane) == []
    gone = browse.fact_row(engine, alice["uri"])
    assert gone.retired_at is not None and gone.retired_reason == f"duplicate of {project['uri']}"
    assert browse.fact_row(engine, project["uri"]).retired_at is None


async def test_the_pane_says_what_a_cap_left_out(
    engine: Any, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(duplicates, "FACTS_COMPARED", {LEXICAL: 3, SEMANTIC: 3})
    monkeypatch.setattr(duplicates, "PAIRS_LISTED", 1)
    for scope in ("user:alice", "user:bob", "project:x", "team:infra"):
        client.add(TEA, scope)
    async with workbench(engine, "review") as (_app, pilot):
        pane = await open_duplicates(pilot)
        assert len(rows(pane)) == 1
        assert text_of(pane, "#dup-summary") == (
            "best 1 of 3 near-duplicate pairs across all scopes · 1 cross-scope · among the "
            "newest 3 of 4 facts: pick a scope to narrow"
        )


async def test_pairs_are_worked_out_again_only_while_the_tab_is_open(
    engine: Any, client: Any, other: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The pass over every current fact (0.5 s at 10k) is not repeated for each write an
    agent makes while the person reviews proposals: behind the Proposals tab the count reads
    "…", and opening the Duplicates tab works the pairs out with the write in them."""
    from pilot_helpers import store_change_shown

    from engine.memory.remember import RememberRequest

    def add(text: str, scope: str) -> None:
        other.remember(RememberRequest(text=text, scopes=[scope], caller="cli", session="s2",
                                       decision="add"))  # fmt: skip

    client.add(TEA, "user:alice")
    client.add(TEA, "project:x")
    async with workbench(engine, "review", watch_store=True) as (app, pilot):
        review = shown(app, ReviewScreen)
        await settle(pilot)
        tabs = review.query_one(TabbedContent)
        assert tabs.get_tab("duplicates").label.plain == "Duplicates 1"
        passes: list[object] = []
        real = app.service.curation.duplicates

        def counted(**kwargs: Any) -> Any:
            passes.append(kwargs)
            return real(**kwargs)

        monkeypatch.setattr(app.service.curation, "duplicates", counted)
        for n in range(3):
            add("Bob drinks black coffee every day", f"user:bob{n}")
            await store_change_shown(pilot)
            await settle(pilot)
        assert passes == []
        assert tabs.get_tab("duplicates").label.plain == "Duplicates …"

        pane = await open_duplicates(pilot)
        assert len(passes) == 1
        assert tabs.get_tab("duplicates").label.plain == "Duplicates 4"
        assert len(rows(pane)) == 4
        # While the tab is open, a write is in the list at once.
        add(TEA, "team:all")
        await store_change_shown(pilot)
        await settle(pilot)
        assert len(passes) == 2 and tabs.get_tab("duplicates").label.plain == "Duplicates 6"
