"""A bulk write's staged files come out the same whoever writes them (this process or the
child process a large write starts), and a failure in the child is raised here as the
OSError it was, naming the file (engine/storage/bulk/file_stager.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.storage.bulk.file_stager import (
    CHILD_MIN_FILES,
    ChildStager,
    HereStager,
    Stager,
    stager_for,
)


def stage(stager: Stager, root: Path) -> dict[str, bytes]:
    for day in ("2026-01-01", "2026-01-02"):
        for n in range(50):
            stager.create(root / day, f"mem-{n:016x}.md", f"fact {n} of {day}\n".encode() * n)
    stager.finish()
    return {
        path.relative_to(root).as_posix(): path.read_bytes() for path in sorted(root.rglob("*.md"))
    }


def test_the_child_writes_what_this_process_would(tmp_path):
    child, here = ChildStager(), HereStager()
    try:
        by_child = stage(child, tmp_path / "child")
        by_here = stage(here, tmp_path / "here")
    finally:
        child.close()
        here.close()
    assert len(by_child) == 100
    assert by_child == by_here
    assert child.folders() == {tmp_path / "child" / day for day in ("2026-01-01", "2026-01-02")}


def test_a_name_that_exists_is_refused_and_named(tmp_path):
    folder = tmp_path / "facts"
    folder.mkdir()
    (folder / "mem-0000000000000002.md").write_text("already here")
    stager = ChildStager()
    try:
        with pytest.raises(FileExistsError) as raised:
            for n in range(5):
                stager.create(folder, f"mem-{n:016x}.md", b"new")
            stager.finish()
    finally:
        stager.close()
    assert raised.value.filename == str(folder / "mem-0000000000000002.md")
    assert (folder / "mem-0000000000000002.md").read_text() == "already here"
    # It stopped at the failure: nothing after it was written.
    assert sorted(p.name for p in folder.iterdir()) == [
        "mem-0000000000000000.md",
        "mem-0000000000000001.md",
        "mem-0000000000000002.md",
    ]


def test_only_a_large_write_starts_a_child():
    small, large = stager_for(CHILD_MIN_FILES - 1), stager_for(CHILD_MIN_FILES)
    try:
        assert isinstance(small, HereStager)
        assert isinstance(large, ChildStager)
    finally:
        small.close()
        large.close()
