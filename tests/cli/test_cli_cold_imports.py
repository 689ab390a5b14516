"""A cold CLI call loads only what its command needs (issue 17, "A fast CLI"): checked by the
modules a fresh interpreter holds after the call, not by timing it (speed is measured in
benchmarks/cli_cold.py). Each import kept off the path is tenths of a second of every call an
agent makes."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pg_homes
import pytest

ROOT = Path(__file__).resolve().parents[2]
CONSOLE_SCRIPT = Path(sys.executable).with_name("gno-tui")

PROBE = """
import json, sys
from gno_tui.cli import main
code = main(sys.argv[1:])
print(json.dumps({"code": code, "modules": sorted(sys.modules)}), file=sys.stderr)
"""

# Never on a --json store command: the UI toolkits, the MCP SDK, the reference JSON Schema
# validator (results go through the compiled one), the workbench and the human renderer.
NEVER_FOR_JSON = ("textual", "rich", "mcp", "jsonschema", "screens", "gno_tui.cli_render")
# Engine parts a recall or remember never runs.
NOT_FOR_RECALL_OR_REMEMBER = (
    "engine.keyed",
    "engine.interop.transfer",
    "engine.curation.calibration",
    "engine.curation.review",
    "engine.facade.curation",
    "engine.facade.keyed",
    "engine.facade.interop",
)
# The graph library (and the download helpers it loads): a store below the graph's size
# (engine/retrieval/semantic_graph.py, GRAPH_MIN_FACTS) makes no graph, as this one-fact home.
NO_GRAPH_BELOW_ITS_SIZE = ("usearch", "tqdm")


def loaded_after(home: Path, *args: str) -> set[str]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **pg_homes.database_env(home)},
        check=False,
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] == 0, done.stdout + done.stderr
    return set(report["modules"])


def offending(modules: set[str], roots: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if any(m == r or m.startswith(r + ".") for r in roots))


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("cold") / "home"
    loaded_after(folder, "remember", "Alice prefers green tea", "--scope", "user:alice", "--add")
    return folder


@pytest.mark.parametrize(
    "command",
    [
        ["recall", "what does alice drink", "--scope", "user:alice", "--json"],
        ["recall", "tea", "--scope", "user:alice", "--format", "ob1", "--json"],
        ["remember", "Alice likes jasmine tea", "--scope", "user:alice", "--json"],
        ["remember", "Alice lives in Lyon", "--scope", "user:alice", "--add", "--json"],
    ],
    ids=["recall", "recall-ob1", "remember-propose", "remember-add"],
)
def test_a_json_call_loads_no_ui_mcp_or_other_verbs(home: Path, command: list[str]) -> None:
    modules = loaded_after(home, *command)
    assert offending(modules, NEVER_FOR_JSON) == []
    assert offending(modules, NOT_FOR_RECALL_OR_REMEMBER) == []
    assert offending(modules, NO_GRAPH_BELOW_ITS_SIZE) == []
    # The probe saw a real call: the engine's verb ran in this interpreter.
    verb = "engine.memory.recall" if command[0] == "recall" else "engine.memory.remember"
    assert verb in modules


# What a recall or a propose on a sound SQLite home never loads: the ORM and what it stands on
# (engine/storage/embedded/sqlite_reader.py reads the index with sqlite3), and any model hub client.
NEVER_ON_THE_READ_PATH = ("sqlalchemy", "sqlmodel", "pydantic", "pydantic_core", "huggingface_hub")


def imported_by_console_script(home: Path, *args: str) -> tuple[set[str], str]:
    """The modules a run of the installed `gno-tui` imports (as -X importtime lists them), and
    its stdout."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run(
        [str(CONSOLE_SCRIPT), "--home", str(home), *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=home.parent,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]
    found = re.findall(r"^import time:\s+\d+ \|\s+\d+ \| *(\S+)$", done.stderr, re.MULTILINE)
    assert found, "no import list: is PYTHONPROFILEIMPORTTIME honoured?"
    return set(found), done.stdout


@pytest.mark.parametrize(
    "command",
    [
        ["recall", "what does alice drink", "--scope", "user:alice", "--json"],
        ["remember", "Alice likes jasmine tea", "--scope", "user:alice", "--json"],
    ],
    ids=["recall", "remember-propose"],
)
@pytest.mark.sqlite_only  # the sqlite3 read path is the embedded SQLite index's
def test_a_cold_recall_or_propose_loads_no_orm(home: Path, command: list[str]) -> None:
    modules, stdout = imported_by_console_script(home, *command)
    assert offending(modules, NEVER_ON_THE_READ_PATH) == []
    assert "engine.storage.embedded.sqlite_reader" in modules  # the read path answered ...
    result = json.loads(stdout)
    if command[0] == "recall":  # ... and answered in full
        assert "Alice prefers green tea" in [fact["text"] for fact in result["facts"]]
    else:
        assert result["outcome"] == "candidates"
        assert "Alice prefers green tea" in [c["text"] for c in result["candidates"]]


@pytest.mark.sqlite_only  # the probe of the test above
def test_the_console_script_probe_sees_the_orm_where_it_loads(home: Path) -> None:
    """An add goes through the full engine: the same probe sees SQLAlchemy there."""
    modules, _ = imported_by_console_script(
        home, "remember", "Bob lives in Paris", "--scope", "user:bob", "--add", "--json"
    )
    assert "sqlalchemy" in modules and "engine.storage.store" in modules


def test_the_probe_sees_lazy_imports(home: Path) -> None:
    """Without --json the same recall prints a table with rich: the check above would see it."""
    modules = loaded_after(home, "recall", "tea", "--scope", "user:alice")
    assert "rich" in modules and "gno_tui.cli_render" in modules
    assert offending(modules, ("textual", "mcp", "screens")) == []


def test_version_and_help_load_no_engine(tmp_path: Path) -> None:
    probe = PROBE.replace(
        "code = main(sys.argv[1:])",
        "try:\n    code = main(sys.argv[1:])\nexcept SystemExit as exit:\n    code = exit.code",
    )
    for args in (["--version"], ["recall", "--help"]):
        done = subprocess.run(
            [sys.executable, "-c", probe, *args],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=ROOT,
            check=False,
        )
        report = json.loads(done.stderr.strip().splitlines()[-1])
        assert report["code"] == 0
        assert offending(set(report["modules"]), ("engine.facade", "sqlalchemy", "numpy")) == []
