"""Bad input is refused where it was typed: the prompt stays open with the text as typed and
says in its box what it takes (`T`'s time, `%`'s confidence), nothing is applied until the
answer is right; Recall's max tokens refuses "abc" in the field and no recall runs."""

from __future__ import annotations

from typing import Any

from pilot_helpers import keys, settle, shown, workbench
from textual.widgets import Input, Static

from engine.memory import browse
from engine.memory.receipts import recent_receipts
from screens.reason_prompt import ReasonPrompt
from screens.recall import RecallScreen
from screens.supersession import SupersessionScreen


def problem_of(prompt: ReasonPrompt) -> str:
    line = prompt.query_one(".modal-problem", Static)
    return "" if line.has_class("-empty") else str(line.render())


async def test_as_of_keeps_the_prompt_and_the_text_on_a_time_it_cannot_read(
    engine: Any, client: Any
) -> None:
    first = client.add("Alice lives in Paris", "user:alice")
    client.supersede(first, "Alice lives in Lyon")
    chain = first["record"]["recordId"]
    async with workbench(engine, "supersession", chain=chain) as (app, pilot):
        screen = shown(app, SupersessionScreen)
        await pilot.press("T", "ctrl+u", *keys("last tuesday"), "enter")
        await settle(pilot)
        prompt = shown(app, ReasonPrompt)  # still open
        box = prompt.query_one("#reason-input", Input)
        assert box.value == "last tuesday" and box.has_class("-invalid")
        problem = problem_of(prompt)
        assert "'last tuesday' is not an ISO 8601 time" in problem and "2026-11-20" in problem
        assert screen.as_of is None
        assert not app._notifications  # said in the box, not in a toast
        # Corrected in place, it is taken.
        await pilot.press("ctrl+u", *keys("2030-01-01"), "enter")
        await settle(pilot)
        assert app.screen is screen and screen.as_of is not None
        assert screen.as_of.year == 2030


async def test_confidence_keeps_the_prompt_and_the_text_on_a_number_out_of_range(
    engine: Any, client: Any
) -> None:
    fact = client.add("Fay prefers short meetings", "user:fay")["record"]
    async with workbench(engine) as (app, pilot):
        before = browse.fact_row(engine, fact["recordId"]).workbench["provenance"]
        await pilot.press("percent_sign", *["backspace"] * 5, *keys("1.5"), "enter")
        await settle(pilot)
        prompt = shown(app, ReasonPrompt)
        assert prompt.query_one("#reason-input", Input).value == "1.5"
        assert "'1.5' is not a confidence: a number from 0 to 1" in problem_of(prompt)
        row = browse.fact_row(engine, fact["recordId"])
        assert row.workbench["provenance"] == before  # nothing applied
        # Not a number either: refused the same way, the text kept.
        await pilot.press("ctrl+u", *keys("high"), "enter")
        await settle(pilot)
        assert shown(app, ReasonPrompt).query_one("#reason-input", Input).value == "high"
        assert "'high' is not a confidence" in problem_of(prompt)
        await pilot.press("ctrl+u", *keys("0.6"), "enter")
        await settle(pilot)
        assert not isinstance(app.screen, ReasonPrompt)
        row = browse.fact_row(engine, fact["recordId"])
        assert row.workbench["provenance"]["confidence"] == 0.6


async def test_recall_max_tokens_refuses_what_is_not_a_budget(engine: Any, client: Any) -> None:
    client.add("Alice prefers green tea in the morning", "user:alice")
    async with workbench(engine, "recall") as (app, pilot):
        screen = shown(app, RecallScreen)
        await pilot.press(*keys("alice tea"), "escape", "b")  # b: the budget field
        field = screen.query_one("#recall-max-tokens", Input)
        assert field.has_focus
        await pilot.press("end", *["backspace"] * 3, *keys("abc"), "enter")
        await settle(pilot)
        assert field.value == "abc"  # kept as typed, not replaced by 512
        assert field.has_class("-invalid") and field.border_subtitle == "1 to 65536"
        assert field.has_focus
        assert screen.result is None and recent_receipts(engine) == []  # no recall ran
        await pilot.press("ctrl+u", "enter")  # empty is no budget either
        await settle(pilot)
        assert screen.result is None and field.has_class("-invalid")
        await pilot.press(*keys("300"), "enter")
        await settle(pilot)
        assert not field.has_class("-invalid") and not field.border_subtitle
        assert screen.result is not None and screen.result["budget"]["maxTokens"] == 300


async def test_recall_max_facts_refuses_what_is_not_a_budget(engine: Any, client: Any) -> None:
    client.add("Alice prefers green tea in the morning", "user:alice")
    async with workbench(engine, "recall") as (app, pilot):
        screen = shown(app, RecallScreen)
        await pilot.press(*keys("alice tea"), "escape", "b", "shift+tab")
        field = screen.query_one("#recall-max-facts", Input)
        assert field.has_focus
        await pilot.press("end", "backspace", *keys("x9"), "enter")
        await settle(pilot)
        assert field.value == "x9"  # kept as typed, not replaced by 8
        assert field.has_class("-invalid") and field.border_subtitle == "1 to 256"
        assert screen.result is None and recent_receipts(engine) == []  # no recall ran
        await pilot.press("ctrl+u", *keys("300"), "enter")  # over the limit
        await settle(pilot)
        assert screen.result is None and field.has_class("-invalid")
        await pilot.press("ctrl+u", *keys("3"), "enter")
        await settle(pilot)
        assert not field.has_class("-invalid")
        assert screen.result is not None and screen.result["budget"]["maxFacts"] == 3
