"""A collection's root is checked by the engine before the collection is recorded
(MemoryEngine.add_collection): an unusable root is MEMORY_COLLECTION_INVALID on every surface,
with no row, no entry in collections.yaml and no folder left behind."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from engine.contract.errors import MemoryFailure
from engine.facade.service import MemoryService


def _listed(memory: MemoryService) -> tuple[list[str], list[str]]:
    """The collections the index holds and the ones collections.yaml lists."""
    in_file = yaml.safe_load(memory.engine.collections_file.read_text(encoding="utf-8"))
    return (
        [row.name for row in memory.collections()],
        [entry["name"] for entry in in_file["collections"]],
    )


def _assert_refused(memory: MemoryService, name: str, path: Path) -> str:
    before = _listed(memory)
    generation = memory.generation()
    with pytest.raises(MemoryFailure) as refused:
        memory.add_collection(name, path=path)
    failure = refused.value
    assert failure.code == "MEMORY_COLLECTION_INVALID"
    message = str(failure)
    assert str(path) in message, message
    assert "--path DIR" in message and "no collection was added" in message
    assert _listed(memory) == before == (["memory"], ["memory"])
    assert memory.generation() == generation
    with pytest.raises(MemoryFailure) as unknown:
        memory.collection(name)
    assert unknown.value.code == "MEMORY_COLLECTION_NOT_FOUND"
    return message


@pytest.fixture
def read_only_parent(tmp_path: Path) -> Iterator[Path]:
    parent = tmp_path / "locked"
    parent.mkdir()
    parent.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.access(parent, os.W_OK):  # root: permission bits do not stop it
            pytest.skip("running as root: chmod does not make a folder unwritable")
        yield parent
    finally:
        parent.chmod(stat.S_IRWXU)


def test_a_root_in_a_read_only_folder_adds_no_collection(
    memory: MemoryService, read_only_parent: Path
) -> None:
    root = read_only_parent / "team"
    _assert_refused(memory, "team", root)
    assert not root.exists()


@pytest.mark.embedded_mode
def test_a_root_under_a_regular_file_adds_no_collection(
    memory: MemoryService, tmp_path: Path
) -> None:
    """A path under a regular file can never be a folder, whoever runs the test (root too)."""
    regular = tmp_path / "notes.txt"
    regular.write_text("not a folder", encoding="utf-8")
    root = regular / "team"
    message = _assert_refused(memory, "team", root)
    assert "Not a directory" in message, message
    assert regular.read_text(encoding="utf-8") == "not a folder"


@pytest.mark.embedded_mode
def test_a_refused_root_leaves_no_folder_it_made(memory: MemoryService, tmp_path: Path) -> None:
    """Folders made while checking a root are removed again when a later step fails: here
    the last folder's name is longer than any file system takes, after two were made."""
    root = tmp_path / "new" / "deeper" / ("x" * 300)
    _assert_refused(memory, "team", root)
    assert not (tmp_path / "new").exists()
    assert sorted(tmp_path.iterdir()) == [memory.home]


@pytest.mark.embedded_mode
def test_facts_in_the_way_as_a_file_adds_no_collection(
    memory: MemoryService, tmp_path: Path
) -> None:
    root = tmp_path / "team"
    root.mkdir()
    (root / "facts").write_text("in the way", encoding="utf-8")
    _assert_refused(memory, "team", root)
    assert (root / "facts").read_text(encoding="utf-8") == "in the way"


@pytest.mark.embedded_mode
def test_a_usable_root_is_made_probed_and_recorded(memory: MemoryService, tmp_path: Path) -> None:
    root = tmp_path / "somewhere" / "team"
    row = memory.add_collection("team", path=root, policy="lan")
    assert (row.name, row.root, row.policy) == ("team", str(root.resolve()), "lan")
    assert (root / "facts").is_dir()
    assert list((root / "facts").iterdir()) == []  # the probe file is gone
    assert _listed(memory) == (["memory", "team"], ["memory", "team"])
    with pytest.raises(MemoryFailure) as again:
        memory.add_collection("team", path=tmp_path / "elsewhere")
    assert again.value.code == "MEMORY_COLLECTION_INVALID"
    assert "already exists" in str(again.value)
    assert not (tmp_path / "elsewhere").exists()  # the name is refused before any folder


@pytest.mark.embedded_mode
def test_a_root_where_no_file_can_be_written_adds_no_collection(
    memory: MemoryService, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The probe file is what finds a folder that can be made but not written in (a read-only
    mount, a full disk, permissions that root would ignore): refused, folders taken back."""
    real_open = os.open

    def refusing_probes(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        if Path(path).name.startswith(".probe-"):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_probes)
    root = tmp_path / "mounted" / "team"
    message = _assert_refused(memory, "team", root)
    assert os.strerror(errno.EROFS) in message, message
    assert not (tmp_path / "mounted").exists()
