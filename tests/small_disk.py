"""A small disk for full-disk tests: a tmpfs mounted for one test (root only; a test that
cannot mount one skips, saying why) and filled up to a chosen free space."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

DISK_SIZE = "4m"  # room for a store, the filler, and what a test writes once the filler goes


def _mount_skip_reason(mount: Path) -> str | None:
    if os.name != "posix" or os.geteuid() != 0:
        return "mounting a small tmpfs needs root (the full-disk tests fill one up)"
    if shutil.which("mount") is None or shutil.which("umount") is None:
        return "no mount/umount command here"
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={DISK_SIZE}", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        return f"cannot mount a tmpfs here ({done.stderr.strip() or done.returncode})"
    return None


@contextmanager
def mounted_small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs mounted under `tmp_path`, unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    reason = _mount_skip_reason(mount)
    if reason is not None:
        pytest.skip(reason)
    try:
        yield mount
    finally:
        done = subprocess.run(["umount", str(mount)], capture_output=True, check=False)
        if done.returncode != 0:  # a process of the test still holds it: detach it now
            subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


def free_kib(folder: Path) -> int:
    stat = os.statvfs(folder)
    return stat.f_bavail * stat.f_frsize // 1024


def fill(disk: Path, leave_kib: int) -> Path:
    """A file taking all but `leave_kib` KiB of the disk's free space."""
    filler = disk / "filler"
    size = (free_kib(disk) - leave_kib) * 1024
    assert size > 0, f"the disk has only {free_kib(disk)} KiB free"
    with filler.open("wb") as out:
        out.write(b"\0" * size)
    assert abs(free_kib(disk) - leave_kib) <= 8, free_kib(disk)
    return filler
