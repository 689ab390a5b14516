"""The Recall screen driven by real keystrokes over a real SQLite store."""

from __future__ import annotations

from typing import Any

import pytest
from pilot_helpers import keys, settle, shown, workbench
from textual.widgets import DataTable, Input, Label, Static

from engine.curation.labels import labels_of
from engine.memory import browse
from engine.memory.receipts import recent_receipts
from screens.json_modal import JsonModal
from screens.recall import RecallScreen


def text_of(app: Any, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).content)


def notes(app: Any) -> list[str]:
    return [note.message for note in app._notifications]


async def run_query(
    pilot: Any, query: str, *, scopes: str | None = None, max_tokens: str | None = None
) -> RecallScreen:
    screen = shown(pilot.app, RecallScreen)
    if scopes is not None:
        screen.query_one("#recall-scopes", Input).value = scopes
    if max_tokens is not None:
        screen.query_one("#recall-max-tokens", Input).value = max_tokens
    screen.query_one("#recall-query", Input).focus()
    await pilot.press(*keys(query), "enter")
    await settle(pilot)
    return screen


def row_cells(table: Any, key: str) -> dict[str, str]:
    """The row's cells by column title."""
    titles = [column.title for column in table.spec]  # shown or left out for the width
    return dict(zip(titles, (str(cell) for cell in table.full_row(key)), strict=True))


async def test_recall_shows_facts_budget_lineage_and_verifies_receipt(
    engine: Any, client: Any
) -> None:
    tea = client.add("Alice prefers green tea in the morning", "user:alice")
    client.add("Alice drinks coffee after lunch", "user:alice")
    client.add("Bob lives in Lyon", "user:bob")
    async with workbench(engine, "recall") as (app, pilot):
        # The scopes box is prefilled with the store's scopes.
        assert app.screen.query_one("#recall-scopes", Input).value == "user:alice, user:bob"
        screen = await run_query(pilot, "alice tea")
        assert screen.result is not None
        facts = screen.result["facts"]
        assert facts and facts[0]["recordId"] == tea["record"]["recordId"]
        table = screen.query_one("#recall-table", DataTable)
        assert table.row_count == len(facts)
        label = str(screen.query_one("#recall-budget-label", Label).content)
        assert f"/512 tokens · {len(facts)}/8 facts" in label
        status = text_of(app, "#recall-status")
        assert "retrieval: lexical" in status and "semanticUnavailable" in status
        # Lexical mode: the score is BM25 alone; the semantic parts are shown as absent.
        cells = row_cells(table, tea["record"]["recordId"])
        assert (cells["cos"], cells["align"]) == ("—", "—")
        assert cells["lex"] == f"{facts[0]['score']:.2f}"
        assert "strictest lineage: " in status and "local_only" in status
        receipt = screen.result["receipt"]
        assert receipt["digest"] in text_of(app, "#recall-receipt")
        assert receipt["digest"] in [r["digest"] for r in recent_receipts(engine)]
        # The focus is on the results: V verifies the receipt.
        await pilot.press("V")
        await settle(pilot)
        assert screen.check is not None and screen.check.digest_ok and screen.check.stored
        assert "no drift" in text_of(app, "#recall-receipt")
        # The recalled fact is superseded behind the screen's back: V reports the drift.
        newer = client.supersede(tea, "Alice prefers jasmine tea in the morning")
        await pilot.press("V")
        await settle(pilot)
        assert screen.check.drifted == {
            tea["record"]["recordId"]: f"superseded by {newer['record']['recordId']}"
        }
        assert "id(s) changed since issue" in text_of(app, "#recall-receipt")


async def test_budget_cut_raw_json_and_ob1_format(engine: Any, client: Any) -> None:
    for n in range(4):
        client.add(f"Deploy note {n}: the deploy pipeline runs tests then ships", "project:x")
    async with workbench(engine, "recall") as (app, pilot):
        await pilot.press("escape", "b")  # b: the budget box
        assert app.screen.query_one("#recall-max-tokens", Input).has_focus
        await pilot.press("ctrl+u", "3", "0")
        screen = await run_query(pilot, "deploy pipeline")
        assert screen.result is not None
        budget = screen.result["budget"]
        assert budget["usedTokens"] <= 30 and budget["omitted"] >= 1
        table = screen.query_one("#recall-table", DataTable)
        assert table.row_count == len(screen.result["facts"]) + 1  # the cut line
        assert f"{budget['omitted']} omitted" in str(
            screen.query_one("#recall-budget-label", Label).content
        )
        await pilot.press("o")
        await pilot.pause()
        assert isinstance(app.screen, JsonModal)
        assert "valid against memory-recall@1.0" in str(
            app.screen.query_one("#json-verdict", Static).content
        )
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is screen
        # t cycles the format: the same recall as an OB1 response, valid against its schema.
        await pilot.press("t")
        await settle(pilot)
        assert screen.format == "ob1" and screen.schema == "ob1_recall"
        assert screen.document is not None and "memories" in screen.document
        assert screen.errors == []
        await pilot.press("o")
        await pilot.pause()
        assert "valid against openbrain.openclaw.recall_response.v1" in str(
            app.screen.query_one("#json-verdict", Static).content
        )


async def test_confirm_and_stale_act_on_the_highlighted_fact(engine: Any, client: Any) -> None:
    fact = client.add("The deploy runs on Fridays", "project:x")
    async with workbench(engine, "recall") as (_app, pilot):
        await run_query(pilot, "deploy fridays")
        await pilot.press("c")
        await settle(pilot)
        row = browse.fact_row(engine, fact["record"]["recordId"])
        assert row.workbench["provenance"]["status"] == "user_confirmed"
        await pilot.press("S")
        await settle(pilot)
        row = browse.fact_row(engine, fact["record"]["recordId"])
        assert row.workbench["freshness"]["staleAfter"]


async def test_empty_recall_says_why_nothing_came_back(engine: Any, client: Any) -> None:
    engine.add_collection("team", policy="lan")
    client.add("Bob lives in Lyon", "user:bob")
    client.add("The deploy runs on Fridays", "project:x")
    async with workbench(engine, "recall") as (app, pilot):
        # Facts in the scope, none close to the query.
        screen = await run_query(pilot, "zebra savanna", scopes="user:bob")
        assert screen.result is not None and screen.result["facts"] == []
        assert "gno-tui remember" in text_of(app, "#recall-receipt")
        assert any("1 fact is stored in scope user:bob" in n and "none is close enough" in n
                   for n in notes(app)), notes(app)  # fmt: skip
        # Nothing stored in the scope at all.
        await run_query(pilot, "lyon", scopes="user:carol")
        assert any("Nothing is stored in scope user:carol" in n for n in notes(app))
        # A match the egress ceiling withholds (memory is local_only; e: the ceiling is lan).
        await pilot.press("escape", "e")
        await settle(pilot)
        await run_query(pilot, "deploy", scopes="project:x")
        assert screen.egress == "lan" and screen.result["facts"] == []
        assert any("egress ceiling lan withheld it (1 withheld)" in n for n in notes(app))


async def test_why_not_explains_what_was_left_out(engine: Any, client: Any) -> None:
    engine.add_collection("team", policy="lan")
    old = client.add("The deploy runs on Thursdays", "project:x")
    client.supersede(old, "The deploy runs on Fridays")
    client.add("The deploy pipeline has three stages", "project:x", collection="team")
    client.add("The deploy dashboard is on grafana", "project:x", collection="team")
    client.add("The deploy freeze starts in December", "project:y")
    async with workbench(engine, "recall") as (app, pilot):
        app.screen.query_one("#recall-max-facts", Input).value = "1"
        screen = await run_query(pilot, "deploy", scopes="project:x")
        assert screen.result is not None and len(screen.result["facts"]) == 1
        await pilot.press("w")
        await settle(pilot)
        assert screen.why is not None
        assert screen.why.counts == {"budget": 2, "scope": 1, "status": 1}
        why = text_of(app, "#recall-why")
        assert "lexical fallback" in why and "cut by the budget" in why
        assert "December" in why and "Thursdays" in why and "(superseded)" in why
        # With the egress ceiling at lan, the local_only fact is withheld, and says so (e
        # sets the ceiling; the recall runs again on enter, issuing a new receipt).
        await pilot.press("e")
        await settle(pilot)
        assert screen.egress == "lan"
        await pilot.press("slash", "enter")
        await settle(pilot)
        assert screen.why.counts.get("egress") == 1
        assert "memory is local_only" in text_of(app, "#recall-why")
        await pilot.press("w")
        assert not screen.query_one("#recall-why").has_class("-visible")


async def test_use_policy_and_confidence_from_recall(engine: Any, client: Any) -> None:
    from engine.memory import browse

    client.add("Erin's pager rotation starts Monday", "team:infra")
    async with workbench(engine, "recall") as (_app, pilot):
        await pilot.press(*"pager", "tab", *"team:infra", "enter")
        await settle(pilot)
        await pilot.press("escape", "E")
        await settle(pilot)
        await pilot.press("percent_sign", *["backspace"] * 5, *"0.9", "enter")
        await settle(pilot)
    row = browse.list_facts(engine).rows[0]
    assert row.workbench["usePolicy"]["canUseAsInstruction"] is True
    assert row.workbench["provenance"]["confidence"] == 0.9


async def test_hybrid_rows_show_what_each_score_is_made_of(
    semantic_engine: Any, semantic_client: Any
) -> None:
    tea = semantic_client.add("Alice drinks green tea", "user:alice")
    semantic_client.add("Bob lives in Lyon", "user:alice")
    async with workbench(semantic_engine, "recall") as (_app, pilot):
        screen = await run_query(pilot, "what does alice drink")
        assert screen.result is not None and screen.result["retrieval"] == {"mode": "hybrid"}
        cells = row_cells(screen.query_one("#recall-table", DataTable), tea["record"]["recordId"])
        lexical, cosine, aligned = (float(cells[name]) for name in ("lex", "cos", "align"))
        # "alice" is in both and "drink" meets "drinks" by its stem: every part contributes.
        assert lexical > 0 and cosine > 0 and aligned > 0
        assert float(cells["score"]) == pytest.approx(lexical + cosine + 0.5 * aligned, abs=0.02)


async def test_labels_on_results_and_a_missed_fact(engine: Any, client: Any) -> None:
    tea = client.add("Alice drinks green tea", "user:alice")["record"]
    coffee = client.add("Alice drinks coffee after lunch", "user:alice")["record"]
    quiet = client.add("Alice likes quiet mornings", "user:alice")["record"]
    async with workbench(engine, "recall") as (app, pilot):
        screen = await run_query(pilot, "drinks", scopes="user:alice")
        assert screen.result is not None
        digest = screen.result["receipt"]["digest"]
        first, second = (f["recordId"] for f in screen.result["facts"])
        assert {first, second} == {tea["recordId"], coffee["recordId"]}
        table = screen.query_one("#recall-table", DataTable)
        await pilot.press("plus")
        await settle(pilot)
        assert row_cells(table, first)["label"] == "✓ rel"
        await pilot.press("plus")  # again: the label is taken away
        await settle(pilot)
        assert row_cells(table, first)["label"] == ""
        await pilot.press("down", "minus")
        await settle(pilot)
        assert row_cells(table, second)["label"] == "✗ irr"
        await pilot.press("M")
        await pilot.pause()
        app.screen.query_one("#reason-input", Input).value = quiet["docid"]
        await pilot.press("enter")
        await settle(pilot)
        assert labels_of(engine, digest=digest, actor=app.actor) == {
            second: "irrelevant",
            quiet["recordId"]: "missing",
        }
        pane = text_of(app, "#recall-receipt")
        assert "0 relevant · 1 irrelevant · 1 missing" in pane
        assert f"missing: {quiet['recordId']}" in pane
        assert "your labels over 1 recall(s): precision 0.00, 1 missed" in pane
        # A returned fact cannot be "missing": the refusal says what to do instead.
        await pilot.press("M")
        await pilot.pause()
        app.screen.query_one("#reason-input", Input).value = tea["uri"]
        await pilot.press("enter")
        await settle(pilot)
        assert any("label it relevant or irrelevant" in note for note in notes(app))
