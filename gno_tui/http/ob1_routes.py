"""OB1's agent-memory routes (filled in by the OB1 route module's author)."""

from __future__ import annotations

from gno_tui.http.routes import HttpRoute

ROUTES: tuple[HttpRoute, ...] = ()
