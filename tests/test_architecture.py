"""The layers as the code draws them: the surfaces (gno_tui/, screens/) reach the engine only
through engine.facade, and the engine never reaches up into a surface."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SURFACES = ("gno_tui", "screens")
UI_PACKAGES = ("gno_tui", "screens", "textual", "rich")


def imported_modules(path: Path) -> Iterator[tuple[int, str]]:
    """Every module a file imports, at the top or inside a function (TYPE_CHECKING included:
    a type is a dependency too)."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            yield node.lineno, node.module
            for alias in node.names:
                yield node.lineno, f"{node.module}.{alias.name}"


def python_files(*packages: str) -> list[Path]:
    files = [path for package in packages for path in sorted((ROOT / package).rglob("*.py"))]
    assert files, f"no Python files under {packages}"
    return files


def test_surfaces_import_only_the_facade_of_the_engine() -> None:
    offending = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in python_files(*SURFACES)
        for line, module in imported_modules(path)
        if module.split(".")[0] == "engine"
        and module != "engine"
        and not module.startswith("engine.facade")
    ]
    bare = [
        f"{path.relative_to(ROOT)}:{line} imports the engine package itself"
        for path in python_files(*SURFACES)
        for line, module in imported_modules(path)
        if module == "engine"
    ]
    assert not offending + bare, "\n".join(offending + bare)


def test_surfaces_use_only_the_facades_public_names() -> None:
    import engine.facade as facade

    public = set(facade.__all__)
    unknown = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in python_files(*SURFACES)
        for line, module in imported_modules(path)
        if module.startswith("engine.facade.")
        and module.removeprefix("engine.facade.") not in public
    ]
    assert not unknown, "\n".join(unknown)


def test_the_engine_never_imports_a_surface_or_the_ui_toolkit() -> None:
    offending = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in python_files("engine")
        for line, module in imported_modules(path)
        if module.split(".")[0] in UI_PACKAGES
    ]
    assert not offending, "\n".join(offending)


def test_the_scan_sees_imports_inside_functions(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f():\n    from engine.storage import tables\n", encoding="utf-8")
    assert (2, "engine.storage") in set(imported_modules(sample))


def module_graph(*packages: str) -> dict[str, set[str]]:
    """Module -> the modules of `packages` it imports, at any place (the top, inside a
    function, under TYPE_CHECKING), a package's __init__ named by its package."""
    modules: dict[str, Path] = {}
    for path in python_files(*packages):
        parts = path.relative_to(ROOT).with_suffix("").parts
        modules[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        for _, target in imported_modules(path):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            # A submodule importing its own package's __init__ is how Python imports it.
            if target and target != name and not name.startswith(target + "."):
                graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, edges = work[-1]
            step = next(edges, None)
            if step is not None:
                if step not in index:
                    index[step] = low[step] = len(index)
                    stack.append(step)
                    on_stack.add(step)
                    work.append((step, iter(sorted(graph[step]))))
                elif step in on_stack:
                    low[node] = min(low[node], index[step])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def test_no_module_imports_itself_round_a_cycle_even_for_types() -> None:
    found = cycles(module_graph("engine", "gno_tui", "screens"))
    assert not found, "import cycles (TYPE_CHECKING and in-function imports count):\n" + "\n".join(
        " -> ".join(component) for component in found
    )


def test_the_cycle_check_finds_a_type_only_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]


# The engine's packages in layers: each imports only packages of the layers below it, never one
# of its own layer or above. storage uses retrieval (it keeps the ranking index and a fact's
# vector); retrieval reads the store only through the ports it declares (retrieval/source.py,
# retrieval/entry.py), and the rule of a current fact is the contract's (contract/visibility.py).
ENGINE_LAYERS = (
    ("contract",),
    ("retrieval",),
    ("storage",),
    ("memory",),
    ("keyed",),
    ("access", "curation", "interop"),
    ("facade",),
)


def engine_package(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "engine" else None


def test_engine_packages_import_only_the_layers_below_them() -> None:
    layer_of = {package: level for level, layer in enumerate(ENGINE_LAYERS) for package in layer}
    packages = {path.parent.name for path in (ROOT / "engine").glob("*/__init__.py")}
    assert packages == set(layer_of), "every engine package has its layer"
    offending = [
        f"{path.relative_to(ROOT)}:{line} ({own}) imports {module}"
        for path in python_files("engine")
        if (own := engine_package(".".join(path.relative_to(ROOT).with_suffix("").parts)))
        in layer_of
        for line, module in imported_modules(path)
        if (other := engine_package(module)) in layer_of
        and other != own
        and layer_of[other] >= layer_of[own]
    ]
    assert not offending, "\n".join(offending)


DOMAIN_PACKAGES = ("memory", "curation", "keyed", "interop", "access", "facade")


def test_domain_packages_run_no_sql_of_their_own() -> None:
    """Their statements are query helpers in engine/storage/queries, given the session the
    engine opens: no SQLAlchemy or SQLModel import in a domain package, at any place."""
    offending = [
        f"{path.relative_to(ROOT)}:{line} imports {module}"
        for path in python_files(*(f"engine/{package}" for package in DOMAIN_PACKAGES))
        for line, module in imported_modules(path)
        if module.split(".")[0] in {"sqlalchemy", "sqlmodel"}
    ]
    assert not offending, "\n".join(offending)
