"""Issue 36, a curator's keyboard tool: the palette finds every screen's commands from any
screen (running one switches there first), export asks where and says the path it wrote, and
toasts are never drawn over the help or the decision log."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pilot_helpers import SIZE, keys, settle, shown, workbench
from textual.command import CommandPalette
from textual.widgets import Input, OptionList, Static
from textual.widgets._toast import Toast, ToastRack

from engine.facade import CurationAction
from engine.facade.service import MemoryService
from engine.storage import proposals
from gno_tui.app import create_app
from screens.decision_log import DecisionLogScreen
from screens.help_screen import HelpScreen
from screens.library import LibraryScreen
from screens.reason_prompt import ReasonPrompt
from screens.receipts import ReceiptsScreen
from screens.review import ReviewScreen


def propose(client: Any, text: str) -> int:
    """An agent's add on a propose-only surface: held as a pending proposal."""
    client.remember(text, ("user:alice",), decision="add", hold_writes=True, origin="mcp")
    return int(proposals.list_proposals(client.engine)[-1]["id"])


def states(engine: Any) -> dict[int, str]:
    return {p["id"]: p["state"] for p in proposals.list_proposals(engine, state=None)}


def palette_prompts(app: Any) -> list[str]:
    options = shown(app, CommandPalette).query_one(OptionList)
    return [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]


def toasts(screen: Any) -> list[str]:
    return [str(toast._notification.message) for toast in screen.query(Toast)]


async def test_the_palette_on_the_library_rejects_on_review(engine: Any, client: Any) -> None:
    first = propose(client, "Carol moved to Berlin")
    second = propose(client, "Bob lives in Lyon")
    async with workbench(engine, "library") as (app, pilot):
        await pilot.press("ctrl+p", *keys("reject"))
        await settle(pilot)  # the palette searches its commands in a worker
        assert palette_prompts(app)[0].startswith("Review: Reject (x)"), palette_prompts(app)
        await pilot.press("enter")
        await settle(pilot)
        # Switched to Review (built just now), and asked why of its highlighted proposal.
        assert app.current_mode == "review"
        prompt = shown(app, ReasonPrompt)
        assert prompt.question == f"Why reject proposal #{first}?"
        await pilot.press(*keys("moved back"), "enter")
        await settle(pilot)
        assert states(engine) == {first: "rejected", second: "pending"}
        current = shown(app, ReviewScreen).current()
        assert current is not None and current["id"] == second


async def test_the_screen_in_front_keeps_its_own_names(engine: Any, client: Any) -> None:
    """Its own commands unlabelled, first; another screen's named with that screen."""
    client.add("Alice prefers green tea", "user:alice")
    async with workbench(engine, "library") as (app, pilot):
        await pilot.press("ctrl+p", *keys("whole text"))
        await settle(pilot)
        prompts = palette_prompts(app)
        assert prompts[0].startswith("Whole text (W)"), prompts
        assert any(p.startswith("Receipts: Whole text (W)") for p in prompts), prompts


async def test_a_palette_command_that_cannot_run_there_says_why(engine: Any, client: Any) -> None:
    first = propose(client, "Carol moved to Berlin")
    async with workbench(engine, "library", read_only=True) as (app, pilot):
        await pilot.press("ctrl+p", *keys("reject"), "enter")
        await settle(pilot)
        assert app.current_mode == "review"
        shown(app, ReviewScreen)  # no prompt: nothing can be decided here
        assert states(engine) == {first: "pending"}
        said = [n.message for n in app._notifications]
        assert "Reject cannot run: the workbench is read-only." in said, said


async def test_export_asks_where_refuses_a_bad_path_and_says_where_it_wrote(
    engine: Any, client: Any, tmp_path: Path
) -> None:
    client.add("Alice prefers green tea", "user:alice")
    digest = client.recall("alice tea", ["user:alice"])["receipt"]["digest"]
    async with workbench(engine, "receipts") as (app, pilot):
        shown(app, ReceiptsScreen)
        await pilot.press("x")
        await settle(pilot)
        shown(app, ReasonPrompt)  # asked first: nothing written yet
        box = app.screen.query_one("#reason-input", Input)
        assert box.value.startswith(str(engine.home / "exports" / "receipts-")), box.value
        assert not (engine.home / "exports").exists()
        # A folder that does not exist: refused in the prompt, which keeps what was typed.
        missing = tmp_path / "nowhere" / "r.jsonl"
        box.value = str(missing)
        await pilot.press("enter")
        await settle(pilot)
        prompt = shown(app, ReasonPrompt)
        problem = str(prompt.query_one(".modal-problem", Static).content)
        assert "does not exist" in problem and box.value == str(missing)
        # A new file in a folder that exists: written, and the notification says its full path.
        target = tmp_path / "out.jsonl"
        box.value = str(target)
        await pilot.press("enter")
        await settle(pilot)
        shown(app, ReceiptsScreen)
        assert digest in target.read_text()
        said = [n.message for n in app._notifications]
        assert f"1 receipt(s) exported to {target}" in said, said
        # A file that exists is never overwritten: x again, same path, refused in place.
        await pilot.press("x")
        await settle(pilot)
        app.screen.query_one("#reason-input", Input).value = str(target)
        await pilot.press("enter")
        await settle(pilot)
        assert "exists already" in str(app.screen.query_one(".modal-problem", Static).content)


@pytest.mark.parametrize(
    ("key", "kind"),
    [("question_mark", HelpScreen), ("at", DecisionLogScreen)],
    ids=["help", "decision-log"],
)
async def test_no_toast_is_drawn_over_the_help_or_the_log(
    engine: Any, client: Any, key: str, kind: type
) -> None:
    client.add("Alice prefers green tea", "user:alice")
    app = create_app(service=MemoryService(engine), screen="library", watch_store=False)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await settle(pilot)
        library = shown(app, LibraryScreen)
        await pilot.press(key)
        await settle(pilot)
        front: Any = shown(app, kind)
        # A store write finishes while it is read: its notification waits.
        library.curate_in_hand(CurationAction.CONFIRM)
        await settle(pilot)
        assert app.screen is front
        assert toasts(front) == [] and list(front.query(ToastRack).results(ToastRack))
        assert not any("confirm" in n.message for n in app._notifications)
        # Closed: the screen below shows it.
        await pilot.press("escape")
        await settle(pilot)
        assert shown(app, LibraryScreen) is library
        assert any("confirm: done" in message for message in toasts(library)), toasts(library)
