"""Issue 36, "The text a person needs, at every size": driven by real keys at 180x50, 120x40 and
100x30, reading what the terminal shows. Text columns take the room left (and follow a
resize), rows that start alike show where they differ, a cut says so (…), and `W` shows the
highlighted row whole, on Review, its batch dialog, Chain and Receipts."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pilot_helpers import keys, settle, shown
from textual.command import CommandPalette
from textual.screen import ModalScreen
from textual.widget import Widget
from textual.widgets import OptionList

from engine.facade.service import MemoryService
from gno_tui.app import create_app
from screens.help_screen import HelpScreen

SIZES = [(180, 50), (120, 40), (100, 30)]
# Texts alike for their first hundred characters: only the end tells them apart.
BACKUP = (
    "The nightly backup of the production database on the primary cluster is written "
    "to the bucket backups-eu-west-{}"
)
HOST = "The staging server for the billing service runs in the Paris region on host deploy-0{}"


def propose(client: Any, text: str) -> None:
    """An agent's add on a propose-only surface: held for a person in Review."""
    client.remember(text, ("user:alice",), hold_writes=True, origin="mcp")


def screen_lines(app: Any) -> list[str]:
    """The terminal's lines as the screen in front draws them."""
    strips = app.screen._compositor.render_strips()
    return ["".join(segment.text for segment in strip) for strip in strips]


def shown_in(app: Any, widget: Widget) -> list[str]:
    """The lines `widget` takes on the terminal, as a person reads them there."""
    region = widget.region
    return [line[region.x : region.right] for line in screen_lines(app)[region.y : region.bottom]]


def row_with(lines: list[str], name: str) -> str:
    """The one line that names `name` (a row's id or time) as a whole word."""
    found = [line for line in lines if re.search(rf"(^|\s){re.escape(name)}(\s|$)", line)]
    assert len(found) == 1, (name, lines)
    return found[0]


def modal_words(app: Any) -> str:
    """What the box of the modal in front says, its wrapped lines joined."""
    assert isinstance(app.screen, ModalScreen), type(app.screen).__name__
    box = app.screen.query_one(".modal-box")
    return re.sub(r"[\s│╭╮╰╯─▁▔▎▊█▌]+", " ", " ".join(shown_in(app, box)))


def run(engine: Any, screen: str, size: tuple[int, int], **options: Any) -> tuple[Any, Any]:
    app = create_app(service=MemoryService(engine), screen=screen, watch_store=False, **options)
    return app, app.run_test(size=size)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
async def test_review_rows_show_where_they_differ_and_w_shows_the_whole(
    engine: Any, client: Any, size: tuple[int, int]
) -> None:
    for number in range(1, 13):
        propose(client, BACKUP.format(number))
    app, running = run(engine, "review", size)
    async with running as pilot:
        await settle(pilot)
        table = app.screen.query_one("#review-proposals")
        lines = shown_in(app, table)
        for number, proposal in enumerate(app.screen.proposals, start=1):
            row = row_with(lines, f"#{proposal['id']}")
            # Twelve rows alike for a hundred characters: each shows the end that differs.
            assert re.search(rf"backups-eu-west-{number}\b", row), row
        await pilot.press("j", "W")
        await settle(pilot)
        assert BACKUP.format(2) in modal_words(app)
        await pilot.press("W")
        await settle(pilot)
        assert not isinstance(app.screen, ModalScreen)
        assert table.has_focus


async def test_the_text_column_follows_a_resize(engine: Any, client: Any) -> None:
    for number in range(1, 4):
        propose(client, BACKUP.format(number))
    app, running = run(engine, "review", (100, 30))
    async with running as pilot:
        await settle(pilot)
        table = app.screen.query_one("#review-proposals")
        words = set(BACKUP.split())

        def text_words() -> int:
            row = row_with(shown_in(app, table), f"#{app.screen.proposals[0]['id']}")
            return len(words & set(row.split()))

        narrow = text_words()
        await pilot.resize_terminal(180, 50)
        await settle(pilot)
        wide = text_words()
        assert wide >= narrow + 3, (narrow, wide)  # more of the text, read as words
        first = f"#{app.screen.proposals[0]['id']}"
        assert re.search(r"backups-eu-west-1\b", row_with(shown_in(app, table), first))


@pytest.mark.parametrize("size", [(120, 40), (100, 30)], ids=["120x40", "100x30"])
async def test_the_precision_line_keeps_its_numbers(
    engine: Any, client: Any, size: tuple[int, int]
) -> None:
    client.add("Alice prefers green tea in the morning", "user:alice")
    propose(client, "Alice prefers black tea in the morning")
    app, running = run(engine, "review", size)
    async with running as pilot:
        await settle(pilot)
        await pilot.press("s")  # a verdict: the proposal and its candidate are the same fact
        await settle(pilot)
        summary = " ".join(shown_in(app, app.screen.query_one("#review-summary")))
        said = re.sub(r"\s+", " ", summary)
        assert "precision 1.00" in said and "recall 1.00" in said, said


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
async def test_the_batch_dialog_shows_each_decision_and_what_tells_items_apart(
    engine: Any, client: Any, size: tuple[int, int]
) -> None:
    for number in range(1, 5):
        propose(client, BACKUP.format(number))
    app, running = run(engine, "review", size)
    async with running as pilot:
        await settle(pilot)
        await pilot.press("space", "space", "space", "space", "y")
        await settle(pilot)
        await pilot.press("x")
        await settle(pilot)
        await pilot.press(*keys("same bucket twice"), "enter")
        await settle(pilot)
        lines = shown_in(app, app.screen.query_one("#batch-items"))
        ids = [proposal["id"] for proposal in app.screen_stack[-2].proposals]
        first = row_with(lines, f"#{ids[0]}")
        assert "reject (same bucket twice)" in first, first
        for number, pid in enumerate(ids, start=1):
            assert re.search(rf"backups-eu-west-{number}\b", row_with(lines, f"#{pid}"))
        await pilot.press("k", "W")  # back on the first item: its whole text and decision
        await settle(pilot)
        said = modal_words(app)
        assert BACKUP.format(1) in said and "reject (same bucket twice)" in said
        await pilot.press("escape")
        await settle(pilot)
        assert app.screen.query_one("#batch-items").has_focus  # still in the dialog


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
async def test_chain_versions_read_apart_and_w_shows_one_whole(
    engine: Any, client: Any, size: tuple[int, int]
) -> None:
    first = client.add(HOST.format(1), "user:alice")
    second = client.supersede(first, HOST.format(2), ["user:alice"])
    client.supersede(second, HOST.format(3), ["user:alice"])
    app, running = run(engine, "supersession", size, chain=first["record"]["uri"])
    async with running as pilot:
        await settle(pilot)
        lines = shown_in(app, app.screen.query_one("#chain-table"))
        for number in (1, 2, 3):
            row = row_with(lines, str(number))  # the version number
            assert f"deploy-0{number}" in row, row
        await pilot.press("h", "W")  # v2, whole
        await settle(pilot)
        assert HOST.format(2) in modal_words(app)


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
async def test_receipts_show_who_asked_and_w_shows_it_whole(
    engine: Any, client: Any, size: tuple[int, int]
) -> None:
    client.add("Alice prefers green tea", "user:alice")
    session = "claude-code-7f3a-morning"
    receipt = client.recall("alice tea", ["user:alice"], caller="cli:alice", session=session)
    app, running = run(engine, "receipts", size)
    async with running as pilot:
        await settle(pilot)
        header, row = shown_in(app, app.screen.query_one("#receipts-table"))[:2]
        assert "caller" in header and "session" in header, header
        assert "cli:alice" in row, row
        # The session whole, or its start with … where the room ends: never cut silently.
        assert session in row or re.search(r"\sclaude-[\w-]*…", row), row
        await pilot.press("W")
        await settle(pilot)
        said = modal_words(app)
        assert session in said and receipt["receipt"]["digest"] in said


@pytest.mark.parametrize(
    ("mode", "size"),
    [("review", (180, 50)), ("supersession", (120, 40)), ("receipts", (100, 30))],
    ids=["review-180x50", "chain-120x40", "receipts-100x30"],
)
async def test_whole_text_is_in_the_help_and_the_palette(
    engine: Any, client: Any, mode: str, size: tuple[int, int]
) -> None:
    fact = client.add(HOST.format(1), "user:alice")
    propose(client, BACKUP.format(1))
    client.recall("staging server", ["user:alice"], caller="cli:alice", session="shell-2211")
    app, running = run(engine, mode, size, chain=fact["record"]["uri"])
    async with running as pilot:
        await settle(pilot)
        await pilot.press("f1")
        await settle(pilot)
        help_screen = shown(app, HelpScreen)
        assert "`W`" in help_screen.help_text
        assert any(c.key == "W" and c.title == "Whole text" for c in help_screen.commands)
        await pilot.press("escape", "ctrl+p", *keys("whole text"))
        await settle(pilot)
        options = shown(app, CommandPalette).query_one(OptionList)
        assert str(options.get_option_at_index(0).prompt).startswith("Whole text (W)")
        await pilot.press("enter")  # runs it, as the key does
        await settle(pilot)
        said = modal_words(app)
        whole = {
            "review": BACKUP.format(1),
            "supersession": HOST.format(1),
            "receipts": "shell-2211",
        }
        assert whole[mode] in said, said


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
async def test_library_summaries_take_the_room_and_w_shows_one_whole(
    engine: Any, client: Any, size: tuple[int, int]
) -> None:
    for number in range(1, 4):
        client.add(HOST.format(number), "user:alice")
    app, running = run(engine, "library", size)
    async with running as pilot:
        await settle(pilot)
        table = app.screen.query_one("#library-table")
        lines = shown_in(app, table)
        for number in range(1, 4):
            # Three facts alike for 80 characters: each row shows the host that differs.
            assert sum(f"deploy-0{number}" in line for line in lines) == 1, lines
        if size[0] == 180:
            await pilot.press("backslash")  # the detail pane hidden: the summary takes its room
            await settle(pilot)
            assert any(HOST.format(1)[:80] in line for line in shown_in(app, table))
        await pilot.press("W")
        await settle(pilot)
        said = modal_words(app)
        assert any(HOST.format(n) in said for n in range(1, 4)) and "user:alice" in said


@pytest.mark.parametrize("size", SIZES, ids=lambda size: f"{size[0]}x{size[1]}")
async def test_recall_keeps_the_label_column_and_w_shows_a_fact_whole(
    engine: Any, client: Any, size: tuple[int, int]
) -> None:
    for number in range(1, 4):
        client.add(HOST.format(number), "user:alice")
    app, running = run(engine, "recall", size)
    async with running as pilot:
        await settle(pilot)
        await pilot.press(*keys("staging billing host"), "tab", *keys("user:alice"), "enter")
        await settle(pilot)
        table = app.screen.query_one("#recall-table")
        header = shown_in(app, table)[0]
        assert "label" in header, header
        await pilot.press("escape", "W")
        await settle(pilot)
        assert any(HOST.format(n) in modal_words(app) for n in range(1, 4))
