"""The engine never imports the UI: proved in a fresh interpreter (docs/contract.md section 2)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pg_homes

UI_ROOTS = ("textual", "rich", "screens", "gno_tui")

PROBE = """
import json, sys
ui = {roots!r}
def loaded():
    return sorted(m for m in sys.modules if m.split(".")[0] in ui)
import engine
after_import = loaded()
from engine.retrieval.embeddings import EmbedderStatus
from engine.facade.service import open_service
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest
store = open_service(home=sys.argv[1], embedder_status=EmbedderStatus(None, "no model"))
added = store.remember(RememberRequest(text="Alice drinks green tea", scopes=["user:alice"],
                                       caller="c", session="s", decision="add"))
recalled = store.recall(RecallRequest(query="tea", scopes=["user:alice"], caller="c",
                                      session="s"))
store.reindex()
print(json.dumps({{"after_import": after_import, "after_use": loaded(),
                   "remember": added, "recall": recalled,
                   "engine_modules": sorted(m for m in sys.modules if m.startswith("engine"))}}))
"""


def test_engine_loads_no_ui_module(tmp_path, valid):
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(roots=UI_ROOTS), str(tmp_path / "home")],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={**os.environ, **pg_homes.database_env(tmp_path / "home")},
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["after_import"] == []
    assert report["after_use"] == []
    # The probe really exercised the engine.
    assert valid("remember", report["remember"])["outcome"] == "added"
    assert len(valid("recall", report["recall"])["facts"]) == 1
    assert {
        "engine.facade.service",
        "engine.storage.store",
        "engine.memory.remember",
        "engine.memory.recall",
    } <= set(report["engine_modules"])
