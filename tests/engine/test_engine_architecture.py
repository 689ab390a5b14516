"""The engine's shape: its modules import one another without cycles, and none of them, imported
in a fresh interpreter, loads the UI (textual, rich, screens, gno_tui).

The import graph is read from the source with ast: top-level imports and imports inside
functions (a function-level import that closes a cycle is still a cycle, only a hidden one),
but not those under `if TYPE_CHECKING:`, which never run."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ENGINE_DIR = ROOT / "engine"
UI_ROOTS = ("textual", "rich", "screens", "gno_tui")


def engine_modules(*packages: str) -> dict[str, Path]:
    """Every module and package of engine/ (or of the given top-level packages), by name."""
    modules = {}
    folders = [ROOT / package for package in packages] or [ENGINE_DIR]
    for path in sorted(p for folder in folders for p in folder.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imported(module: str, is_package: bool, tree: ast.Module, known: set[str]) -> set[str]:
    """The engine modules that `module` imports when it runs (at import time or in a call)."""
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child.test):
                for branch in child.orelse:  # `else:` of TYPE_CHECKING does run
                    visit(branch)
                continue
            if isinstance(child, ast.Import):
                for alias in child.names:
                    # `import engine.a.b` runs engine.a.b (and binds only `engine`).
                    if alias.name in known:
                        found.add(alias.name)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    anchor = package.split(".")[: len(package.split(".")) - child.level + 1]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in child.names:
                    # `from engine.x import y`: the module engine.x.y if there is one, else a
                    # name defined in engine.x.
                    if f"{base}.{alias.name}" in known:
                        found.add(f"{base}.{alias.name}")
                    elif base in known:
                        found.add(base)
            visit(child)

    visit(tree)
    found.discard(module)
    return found


def import_graph(*packages: str) -> dict[str, set[str]]:
    modules = engine_modules(*packages)
    known = set(modules)
    return {
        name: _imported(name, path.name == "__init__.py", ast.parse(path.read_text()), known)
        for name, path in modules.items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, ..., a], or None (depth-first search, colouring nodes)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def walk(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (cycle := walk(target)) is not None:
                return cycle
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := walk(node)) is not None:
            return cycle
    return None


def test_the_graph_reader_sees_what_it_must() -> None:
    """A guard on the test itself: the reader follows function-level imports, skips
    TYPE_CHECKING ones, resolves `from package import module`, and the search finds cycles."""
    known = {"engine.a", "engine.b", "engine.c", "engine.pkg", "engine.pkg.mod"}
    source = (
        "from typing import TYPE_CHECKING\n"
        "from engine.pkg import mod\n"
        "from engine.pkg.mod import name\n"
        "if TYPE_CHECKING:\n"
        "    from engine.b import Thing\n"
        "def later():\n"
        "    from engine.c import helper\n"
        "    import engine.a\n"
    )
    assert _imported("engine.a", False, ast.parse(source), known) == {"engine.pkg.mod", "engine.c"}
    assert find_cycle({"x": {"y"}, "y": {"z"}, "z": {"x"}}) == ["x", "y", "z", "x"]
    assert find_cycle({"x": {"y"}, "y": set(), "z": {"x", "y"}}) is None
    graph = import_graph()
    assert "engine.keyed.service" in graph and "engine.storage.store" in graph
    assert "engine.storage.schema.tables" in graph["engine.storage.store"]


def test_engine_modules_import_one_another_without_cycles() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle among engine modules: " + " -> ".join(cycle or [])


def test_the_surfaces_and_the_engine_import_without_cycles() -> None:
    """The same over the whole program: the CLI, the MCP server, the workbench's screens and
    widgets, and the engine beneath them."""
    graph = import_graph("gno_tui", "screens", "engine")
    assert "gno_tui.commands" in graph and "screens.library" in graph
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


PROBE = """
import importlib, json, pkgutil, sys
import engine
names = sorted(m.name for m in pkgutil.walk_packages(engine.__path__, "engine."))
for name in names:
    importlib.import_module(name)
ui = {roots!r}
print(json.dumps({{
    "imported": names,
    "ui": sorted(m for m in sys.modules if m.split(".")[0] in ui),
}}))
"""


def test_no_engine_module_loads_the_ui() -> None:
    """Every module of the engine package, imported in one fresh interpreter, loads no module
    of textual, rich, screens or gno_tui (docs/contract.md section 2)."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(roots=UI_ROOTS)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["ui"] == []
    # The walk really covered the package: every module file of engine/ was imported.
    expected = {name for name in engine_modules() if name != "engine"}
    assert set(report["imported"]) == expected
