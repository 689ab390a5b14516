"""engine.facade loads its names on first use (PEP 562 `__getattr__`), so that a cold CLI call
imports only its verb's path. Three lists must agree: `__all__`, the names bound at import
or listed in `_LAZY`, and the TYPE_CHECKING imports type checkers read."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import engine.facade as facade

SOURCE = Path(facade.__file__)


def _type_checking_imports() -> dict[str, tuple[str, str]]:
    tree = ast.parse(SOURCE.read_text(encoding="utf-8"))
    found: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            for item in node.body:
                assert isinstance(item, ast.ImportFrom) and item.module
                for alias in item.names:
                    found[alias.asname or alias.name] = (item.module, alias.name)
    return found


def test_every_public_name_resolves_to_where_it_is_declared() -> None:
    lazy = facade._LAZY
    assert _type_checking_imports() == lazy
    eager = set(facade.__all__) - set(lazy)
    assert set(lazy) <= set(facade.__all__)
    for name in facade.__all__:
        value = getattr(facade, name)
        if name in lazy:
            module, attribute = lazy[name]
            assert value is getattr(sys.modules[module], attribute)
    # The rest is bound when the module loads, and comes from the contract only (standard
    # library beneath it).
    tree = ast.parse(SOURCE.read_text(encoding="utf-8"))
    bound = {
        alias.asname or alias.name: node.module
        for node in tree.body
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("engine.")
        for alias in node.names
    }
    assert set(bound) == eager
    assert set(bound.values()) <= {"engine.contract.errors", "engine.contract.normalize"}


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        facade.NoSuchName  # noqa: B018
    except AttributeError as exc:
        assert "NoSuchName" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_importing_the_facade_loads_no_database_or_model_code() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import json, sys, engine.facade; print(json.dumps(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=SOURCE.parents[2],
    )
    loaded = json.loads(done.stdout)
    heavy = ("sqlalchemy", "sqlmodel", "numpy", "engine.storage", "engine.memory")
    assert [m for m in loaded if m.split(".")[0] in heavy or m.startswith(heavy)] == []
