"""docs/architecture.md and the README say where things are: every module, test file and
package they name must exist, so a newcomer who follows them never lands on a file that moved.

A name may be written whole (`engine/storage/store.py`), from its package (`storage/store.py`
in the engine's section) or bare (`bulk_recovery.py`): it holds when some tracked file's path
ends with it. A dotted name (`engine.storage`, `engine.storage.store`) must be a package or
module, or a name in one (`screens.SCREENS`)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ("docs/architecture.md", "README.md")
_FILE = re.compile(r"(?<![\w./-])((?:[\w-]+/)*[\w-]+\.py)\b")
_PACKAGE = re.compile(r"`((?:engine|gno_tui|screens|benchmarks)(?:\.\w+)+)`")


def tracked_files() -> list[str]:
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if listed.returncode != 0:  # not a git checkout (an sdist): the files on disk
        return [str(path.relative_to(ROOT)) for path in ROOT.rglob("*.py")]
    return listed.stdout.splitlines()


def named_files(text: str) -> set[str]:
    return {match.group(1) for match in _FILE.finditer(text)}


def missing_files(named: set[str], files: list[str]) -> list[str]:
    return sorted(name for name in named if not any(_ends_with(path, name) for path in files))


def _ends_with(path: str, name: str) -> bool:
    return path == name or path.endswith("/" + name)


@pytest.mark.parametrize("doc", DOCS)
def test_every_file_the_doc_names_exists(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    named = named_files(text)
    assert len(named) > (20 if doc.startswith("docs/") else 0), "the pattern finds no names"
    assert missing_files(named, tracked_files()) == [], f"{doc} names files that do not exist"


@pytest.mark.parametrize("doc", DOCS)
def test_every_package_the_doc_names_exists(doc: str) -> None:
    text = (ROOT / doc).read_text(encoding="utf-8")
    absent = [m.group(1) for m in _PACKAGE.finditer(text) if not _importable(m.group(1))]
    assert absent == [], f"{doc} names packages or modules that do not exist"


def _importable(dotted: str) -> bool:
    """A package or module, or a name in one (`screens.SCREENS`: one part past the module)."""
    parts = dotted.split(".")
    for end in (len(parts), len(parts) - 1):
        folder = ROOT.joinpath(*parts[:end])
        if (folder / "__init__.py").is_file() or folder.with_suffix(".py").is_file():
            return True
    return False


def test_the_check_sees_a_moved_module() -> None:
    files = ["engine/storage/store.py", "engine/curation/review.py"]
    named = named_files("`storage/store.py`, `curation/proposals.py` and `review.py`")
    assert missing_files(named, files) == ["curation/proposals.py"]
