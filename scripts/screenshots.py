"""Screenshots of every workbench screen, from a seeded demo store.

    python scripts/screenshots.py [OUT_DIR]

Builds the demo store as `gno-tui --demo` does (the bundled model loaded, so recall and the
candidates rank hybrid at the threshold a user gets; no network; a fixed clock so the pictures
repeat), opens each screen of SCREENS_BY_MODE at 140x40 with Textual's Pilot, presses the keys
that bring it to a populated state, saves OUT_DIR/<mode>.svg (default screenshots/) and
converts it to PNG with rsvg-convert when that is installed. It refuses to shoot in lexical
fallback: a picture must show what a user sees."""

from __future__ import annotations

import asyncio
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from engine.facade.service import open_service
from gno_tui.app import GnoApp, create_app
from gno_tui.demo import demo_clock, seed_demo
from screens import SCREENS_BY_MODE

SIZE = (140, 40)
ROOT = Path(__file__).resolve().parent.parent


async def settle(pilot: Any) -> None:
    for _ in range(3):
        await pilot.pause()
        await pilot.app.workers.wait_for_complete()
    await pilot.pause()


async def type_text(pilot: Any, text: str) -> None:
    await pilot.press(*["space" if c == " " else c for c in text])


async def recall_steps(pilot: Any) -> None:
    await type_text(pilot, "production database backups staging")
    await pilot.press("tab", "tab", "tab", "ctrl+u")
    await type_text(pilot, "40")
    await pilot.press("enter")
    await settle(pilot)
    await pilot.press("V", "w")


async def receipts_steps(pilot: Any) -> None:
    await pilot.press("G", "V")
    await settle(pilot)
    await pilot.press("space", "space", "P", "f")
    await type_text(pilot, "The staging database is Postgres 16 on db-staging-2.")
    await pilot.press("escape")


async def remember_steps(pilot: Any) -> None:
    # A version of the staging-database fact that a receipt returned before it was
    # superseded: the fence preview names that receipt, the diff shows the current head.
    await type_text(pilot, "The staging database is Postgres 16 on db-staging-2.")
    await pilot.press("tab")
    await type_text(pilot, "team:infra")
    await pilot.press("tab", "tab", "enter", "down", "enter")  # collection: team
    await pilot.pause(0.6)  # the candidates are debounced
    await settle(pilot)


async def chain_steps(pilot: Any) -> None:
    await pilot.press("T", "ctrl+u")
    await type_text(pilot, "2026-11-22T08:00Z")
    await pilot.press("enter")


# Keys that bring a screen to a populated state; screens not named here are shown as opened.
STEPS: dict[str, Callable[[Any], Awaitable[None]]] = {
    "remember": remember_steps,
    "recall": recall_steps,
    "receipts": receipts_steps,
    "supersession": chain_steps,
}


async def shoot(app: GnoApp, mode: str, out: Path) -> Path:
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot)
        if mode in STEPS:
            await STEPS[mode](pilot)
            await settle(pilot)
        # Toasts come and go with time, a cursor blinks: a screenshot shows the screen only.
        app.clear_notifications()
        for widget in app.screen.query("Input, TextArea"):
            widget.cursor_blink = False  # type: ignore[attr-defined]
        await pilot.pause()
        svg = out / f"{mode}.svg"
        app.save_screenshot(filename=svg.name, path=str(out))
    return svg


# Textual's SVG export draws each run of text at its cell (x) stretched to its cells
# (textLength); a cell is 0.61 of its 20px font. rsvg-convert lays out a run's leading and
# trailing no-break spaces as nothing, which glued "^p" to "palette" and shifted words in the
# PNGs; for the PNG only, those spaces become an offset instead (the SVG is left as it is).
CELL = 12.2
_RUN = re.compile(
    r'(<text [^>]*?x=")([\d.]+)("[^>]*?textLength=")([\d.]+)("[^>]*>)([^<]*)(</text>)'
)
_NBSP = "&#160;"


def _without_edge_spaces(match: re.Match[str]) -> str:
    start, x, middle, length, rest, content, end = match.groups()
    body, lead = content, 0
    while body.startswith(_NBSP):
        body, lead = body[len(_NBSP) :], lead + 1
    trail = 0
    while body.endswith(_NBSP):
        body, trail = body[: -len(_NBSP)], trail + 1
    if not body:
        return ""
    x_new, length_new = float(x) + lead * CELL, float(length) - (lead + trail) * CELL
    return f"{start}{x_new:g}{middle}{length_new:g}{rest}{body}{end}"


def to_png(svg: Path) -> Path | None:
    converter = shutil.which("rsvg-convert")
    if converter is None:
        return None
    png = svg.with_suffix(".png")
    laid_out = _RUN.sub(_without_edge_spaces, svg.read_text(encoding="utf-8"))
    subprocess.run([converter, "-o", str(png)], input=laid_out.encode(), check=True)
    return png


async def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="gno-tui-shots-") as home:
        service = open_service(
            home=home, db_url=f"sqlite:///{home}/index.sqlite", clock=demo_clock()
        )
        status = service.embedder_status
        if status.embedder is None:
            reason = status.unavailable_reason
            raise SystemExit(f"the bundled model did not load ({reason}): no screenshots")
        made = seed_demo(service)
        try:
            for mode in SCREENS_BY_MODE:
                app = create_app(
                    service=service,
                    screen=mode,
                    watch_store=False,
                    chain=made["chains"][2],
                    actor="tui:alice",
                    session="demo",
                )
                svg = await shoot(app, mode, out)
                png = to_png(svg)
                print(
                    f"{mode}: {svg.relative_to(out.parent) if out.is_relative_to(ROOT) else svg}"
                    + (f", {png.name}" if png else "")
                )
        finally:
            service.close()


if __name__ == "__main__":
    asyncio.run(main(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "screenshots"))
