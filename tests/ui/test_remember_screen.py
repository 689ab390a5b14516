"""The Remember screen driven by real keystrokes over a real SQLite store: candidates appear
while typing, nothing is written until add or supersede is chosen, and the outcome is shown
as the engine returned it."""

from __future__ import annotations

from typing import Any

from pilot_helpers import keys, pending_proposal, shown, workbench
from pilot_helpers import settle as settle_workers
from textual.widgets import Input, Static, TextArea

from engine.memory import browse
from screens.edit_prompt import MergePrompt
from screens.remember import RememberScreen


async def settle(pilot: Any) -> None:
    """Run a pending proposal at once, then wait for the workers and the messages they post."""
    await settle_workers(pilot, debounce=pending_proposal)


def text_of(app: Any, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def notes(app: Any) -> list[tuple[str, str]]:
    return [(note.title, note.message) for note in app._notifications]


async def compose(pilot: Any, text: str, scopes: str) -> RememberScreen:
    screen = shown(pilot.app, RememberScreen)
    screen.query_one("#remember-text", TextArea).focus()
    await pilot.press(*keys(text), "tab", *keys(scopes))
    await settle(pilot)
    return screen


def successor_of(engine: Any, uri: str) -> Any:
    """The fact that superseded `uri` (which must have been superseded)."""
    row = browse.fact_row(engine, uri)
    assert row.superseded_by is not None
    return browse.fact_row(engine, row.superseded_by)


def current_count(engine: Any) -> int:
    return browse.status_counts(engine)["current"]


async def test_candidates_appear_and_supersede_replaces_the_old_fact(
    engine: Any, client: Any
) -> None:
    old = client.add("Alice prefers green tea in the morning", "user:alice")["record"]
    client.add("Bob lives in Lyon", "user:bob")
    async with workbench(engine, "remember", debounce=pending_proposal) as (app, pilot):
        screen = await compose(pilot, "Alice prefers black tea in the morning", "user:alice")
        assert [c["uri"] for c in screen.candidates] == [old["uri"]]
        matching = text_of(app, "#remember-matching")
        assert "1 candidate(s)" in matching
        assert "method lexical" in matching and "threshold 0.82" in matching
        assert screen.candidates[0]["match"] == "likely"
        # The word diff of the draft against the highlighted candidate.
        diff = screen.query_one("#remember-diff", Static).render()
        assert "green" in str(diff) and "black" in str(diff)
        # Nothing is written by looking.
        assert current_count(engine) == 2

        await pilot.press("ctrl+r")
        await settle(pilot)

        successor = successor_of(engine, old["uri"])
        assert successor.text == "Alice prefers black tea in the morning"
        assert successor.supersedes == [old["uri"]]
        assert successor.scopes == ["user:alice"]
        assert successor.caller == app.actor
        assert successor.session.startswith("tui:")
        assert successor.workbench["provenance"]["createdBy"] == "user"
        outcome = text_of(app, "#remember-outcome")
        assert "outcome: superseded" in outcome
        assert successor.uri in outcome and "sync: completed" in outcome
        # The draft is cleared after a write; the scopes stay for the next fact.
        assert screen.query_one("#remember-text", TextArea).text == ""
        assert screen.query_one("#remember-scopes", Input).value == "user:alice"
        assert current_count(engine) == 2


async def test_add_writes_a_new_fact_with_source_and_shows_the_outcome(
    engine: Any, client: Any
) -> None:
    client.add("Bob lives in Lyon", "user:bob")
    async with workbench(engine, "remember", debounce=pending_proposal) as (app, pilot):
        screen = await compose(pilot, "Carol moved to Berlin", "user:carol, team")
        assert screen.candidates == []
        assert "0 candidate(s)" in text_of(app, "#remember-matching")
        status = text_of(app, "#remember-status")
        assert "6 tokens" in status and "21 bytes" in status  # ceil(21 / 4)
        await pilot.press("tab", *keys("chat 2026-11-30"))
        await pilot.press("ctrl+s")
        await settle(pilot)
        rows = browse.list_facts(engine, text="Carol").rows
        assert len(rows) == 1
        assert rows[0].scopes == ["user:carol", "team"]
        assert rows[0].source == "chat 2026-11-30"
        assert rows[0].collection == "memory"
        outcome = text_of(app, "#remember-outcome")
        assert "outcome: added" in outcome and rows[0].uri in outcome
        assert "sync: completed" in outcome
        assert any(message.startswith("added:") for _, message in notes(app))


async def test_scope_completion_exact_duplicate_and_clear(engine: Any, client: Any) -> None:
    client.add("Alice prefers green tea in the morning", "user:alice")
    async with workbench(engine, "remember", debounce=pending_proposal) as (app, pilot):
        screen = shown(app, RememberScreen)
        screen.query_one("#remember-text", TextArea).focus()
        await pilot.press(*keys("Alice prefers green tea in the morning"), "tab", *keys("user:a"))
        await settle(pilot)  # the scope suggestion is a worker too
        await pilot.press("right")  # accept the completion from the known scopes
        assert screen.query_one("#remember-scopes", Input).value == "user:alice"
        await settle(pilot)
        assert "exact duplicate" in text_of(app, "#remember-matching")
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert "outcome: existing" in text_of(app, "#remember-outcome")
        assert "sync: nothing written" in text_of(app, "#remember-outcome")
        assert current_count(engine) == 1
        await pilot.press("ctrl+l")
        await settle(pilot)
        assert screen.query_one("#remember-text", TextArea).text == ""
        assert screen.candidates == []
        assert current_count(engine) == 1


async def test_errors_are_notified_with_their_code_and_write_nothing(engine: Any) -> None:
    async with workbench(engine, "remember", debounce=pending_proposal) as (app, pilot):
        screen = await compose(pilot, "A fact without a scope", "")
        # While typing, a missing scope is no error yet: the pane says what to do, in the
        # workbench's words (no code, no CLI flag), and nothing pops up.
        waiting = text_of(app, "#remember-matching")
        assert "Give the fact a scope" in waiting
        assert "MEMORY_SCOPES_REQUIRED" not in waiting and "--scope" not in waiting
        assert notes(app) == []
        await pilot.press("ctrl+s")
        await settle(pilot)
        assert any("Give the fact a scope first" in message for _, message in notes(app))
        assert screen.query_one("#remember-scopes", Input).has_focus
        await pilot.press("ctrl+r")  # no candidate to supersede
        await settle(pilot)
        assert any("No candidate" in message for _, message in notes(app))
        assert current_count(engine) == 0
        assert screen.query_one("#remember-outcome").has_class("-empty")


async def test_hidden_characters_are_flagged(engine: Any) -> None:
    async with workbench(engine, "remember", debounce=pending_proposal) as (app, pilot):
        screen = app.screen
        area = screen.query_one("#remember-text", TextArea)
        area.focus()
        await pilot.press(*keys("pay"))
        area.insert("\u200b\u202e")  # pasted text: a zero-width space and a bidi override
        await pilot.press(*keys(" Bob"))
        area.insert("\u00a0")
        await pilot.press(*keys("now"))
        await settle(pilot)
        warning = screen.query_one("#remember-warning", Static)
        assert not warning.has_class("-empty")
        shown = str(warning.render())
        assert "1 zero-width" in shown and "1 bidi control" in shown
        assert "1 non-breaking space" in shown and "U+200B" in shown
        area.clear()
        await pilot.press(*keys("clean"))
        await settle(pilot)
        assert warning.has_class("-empty")


async def test_read_only_workbench_refuses_writes(engine: Any, client: Any) -> None:
    client.add("Alice prefers green tea in the morning", "user:alice")
    async with workbench(engine, "remember", read_only=True, debounce=pending_proposal) as (
        _app,
        pilot,
    ):
        await compose(pilot, "Alice prefers black tea", "user:alice")
        await pilot.press("ctrl+s", "ctrl+r")
        await settle(pilot)
        assert current_count(engine) == 1


async def test_fence_preview_names_the_receipts_that_returned_the_text(
    engine: Any, client: Any
) -> None:
    fact = client.add("The staging database is Postgres 15", "team:infra")["record"]
    client.recall("staging database", ["team:infra"], caller="mcp:claude")
    async with workbench(engine, "remember", debounce=pending_proposal) as (app, pilot):
        await compose(pilot, "The staging database is Postgres 15", "team:infra")
        fence = text_of(app, "#remember-fence")
        assert "1 recall receipt(s) returned this exact text" in fence
        assert "mcp:claude" in fence and "MEMORY_FENCED_REPLAY" in fence
        assert fact["docid"] in text_of(app, "#remember-matching")  # and it is an exact duplicate
        # A text no receipt returned, nor anything close to it, has no fence line.
        await pilot.press("ctrl+l")
        await compose(pilot, "Bob rides his bike to the office", "team:infra")
        assert app.screen.query_one("#remember-fence").has_class("-empty")


async def test_fence_preview_lists_near_misses_of_receipted_spans(engine: Any, client: Any) -> None:
    fact = client.add("The staging database is Postgres 15", "team:infra")["record"]
    client.add("Bob rides his bike to the office", "user:bob")  # never recalled
    client.recall("staging database", ["team:infra"], caller="mcp:claude")
    async with workbench(engine, "remember", debounce=pending_proposal) as (app, pilot):
        # A close rewording of the recalled fact is not fenced, but it is shown.
        screen = await compose(pilot, "Our staging database is Postgres 15", "team:infra")
        box = screen.query_one("#remember-fence", Static)
        assert not box.has_class("-empty")
        fence = text_of(app, "#remember-fence")
        assert "1 near miss(es)" in fence and "probably a replay" in fence
        assert "returned this exact text" not in fence
        assert fact["docid"] in fence and "91.4%" in fence
        assert "“The staging database is Postgres 15”" in fence
        assert "(recalled 1×)" in fence
        # An unrelated text has none, and neither does a close rewording of a fact no
        # recall returned.
        await pilot.press("ctrl+l")
        await compose(pilot, "Carol keeps the release notes", "team:infra")
        assert box.has_class("-empty")
        await pilot.press("ctrl+l")
        await compose(pilot, "Bob rides his bike to the office!", "team:infra")
        assert box.has_class("-empty")
        # The exact text says fenced, not near miss.
        await pilot.press("ctrl+l")
        await compose(pilot, "the staging database is postgres 15.", "team:infra")
        fence = text_of(app, "#remember-fence")
        assert "returned this exact text" in fence and "near miss" not in fence


async def test_merge_writes_one_edited_text_that_supersedes_the_candidate(
    engine: Any, client: Any
) -> None:
    old = client.add("Alice prefers green tea in the morning", "user:alice")["record"]
    async with workbench(engine, "remember", debounce=pending_proposal) as (app, pilot):
        screen = await compose(pilot, "Alice takes her green tea without sugar", "user:alice")
        assert [c["uri"] for c in screen.candidates] == [old["uri"]]
        await pilot.press("ctrl+g")
        await pilot.pause()
        assert isinstance(app.screen, MergePrompt)
        area = app.screen.query_one(TextArea)
        # The suggestion keeps both: the candidate, then the draft.
        assert area.text == (
            "Alice prefers green tea in the morning. Alice takes her green tea without sugar"
        )
        assert current_count(engine) == 1  # nothing is written until the prompt is saved
        area.text = "Alice prefers green tea in the morning, without sugar"
        await pilot.press("ctrl+s")
        await settle(pilot)

        successor = successor_of(engine, old["uri"])
        assert successor.text == "Alice prefers green tea in the morning, without sugar"
        assert successor.scopes == ["user:alice"]
        assert "outcome: superseded" in text_of(app, "#remember-outcome")
        assert current_count(engine) == 1
