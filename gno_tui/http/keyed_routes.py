"""The keyed API's routes (filled in by the keyed route module's author)."""

from __future__ import annotations

from gno_tui.http.routes import HttpRoute

ROUTES: tuple[HttpRoute, ...] = ()
