"""Who writes a bulk write's staged fact files: this process, or a child process.

Why a child: while the files are staged, the rows are inserted on a thread of their own
(engine/storage/bulk/rows.py), and the two fought over the GIL. Each file is three system
calls, and after each one the staging loop waited for the rows thread to give the GIL back:
a file took 26 us to create alone and 550-790 us beside a thread of SQLite inserts (measured
here, 2 cores). A child process has no GIL to wait for: the parent only copies each file into
a pipe, and the child creates the files meanwhile, on the other core. The parent hands the
pipe 64 KiB at a time and the pipe holds a MiB: with one flush per MiB into a 64 KiB pipe,
the child idled while the parent filled its buffer and the parent then waited while the
child emptied it, so the two took turns (78k files: 3.1 s of waiting, 0.6 s of work).
Small writes stay in this process: starting the child costs more than it saves.

Either way the files land in the staging folder only, so a crash at any moment leaves nothing
visible: a file the child wrote for a parent that died has no row, and recovery deletes it
(engine/storage/bulk/__init__.py)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import IO, Protocol

try:
    import fcntl
except ImportError:  # Windows: no pipe sizes to set
    fcntl = None  # type: ignore[assignment]

from engine.storage.bulk.rows import FactFolders
from engine.storage.bulk.stager_child import END, FILE, FOLDER, HEADER

CHILD_SCRIPT = Path(__file__).with_name("stager_child.py")
# Below this many files the child is not started (it costs ~20 ms; 2,000 files cost a few
# hundred ms of waits when staged here).
CHILD_MIN_FILES = 2_000
WRITE_CHUNK = 1 << 16
PIPE_CAPACITY = 1 << 20  # Linux's default ceiling for an unprivileged process


class Stager(Protocol):
    def create(self, folder: Path, name: str, content: bytes) -> None: ...

    def finish(self) -> None:
        """Every file created, or the first failure raised as the OSError it was."""

    def folders(self) -> set[Path]: ...

    def close(self) -> None: ...


class HereStager:
    """The files created by this process, one after the other."""

    def __init__(self) -> None:
        self._folders = FactFolders()

    def create(self, folder: Path, name: str, content: bytes) -> None:
        self._folders.create(folder, name, content)

    def finish(self) -> None:
        return None

    def folders(self) -> set[Path]:
        return self._folders.folders()

    def close(self) -> None:
        self._folders.close()


class ChildStager:
    """The files created by a child process (engine/storage/bulk/stager_child.py)."""

    def __init__(self) -> None:
        self._child = subprocess.Popen(
            [sys.executable, "-I", "-S", str(CHILD_SCRIPT)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            bufsize=WRITE_CHUNK,
        )
        assert self._child.stdin is not None and self._child.stdout is not None
        _widen_pipe(self._child.stdin.fileno())
        self._pipe: IO[bytes] = self._child.stdin
        self._answers: IO[bytes] = self._child.stdout
        self._numbers: dict[Path, int] = {}

    def create(self, folder: Path, name: str, content: bytes) -> None:
        number = self._numbers.get(folder)
        if number is None:
            number = self._numbers[folder] = len(self._numbers)
            self._send(FOLDER, number, os.fsencode(folder), b"")
        self._send(FILE, number, os.fsencode(name), content)

    def _send(self, kind: int, number: int, name: bytes, content: bytes) -> None:
        try:
            header = HEADER.pack(kind, number, len(name), len(content))
            self._pipe.write(b"".join((header, name, content)))
        except BrokenPipeError:  # the child stopped at a failure: raise what it said
            self._raise_answer()

    def finish(self) -> None:
        self._send(END, 0, b"", b"")
        with contextlib.suppress(BrokenPipeError):
            self._pipe.close()
        self._raise_answer()

    def _raise_answer(self) -> None:
        line = self._answers.readline()
        self._child.wait()
        try:
            answer = json.loads(line) if line else {}
        except ValueError:
            answer = {}
        if "ok" in answer:
            return
        if "errno" in answer:
            raise OSError(answer["errno"], answer["strerror"], answer["filename"])
        raise OSError(f"the fact file writer stopped (exit status {self._child.returncode})")

    def folders(self) -> set[Path]:
        return set(self._numbers)

    def close(self) -> None:
        if self._child.poll() is None:
            self._child.kill()  # only when the write failed: nothing it writes is kept
            self._child.wait()
        for stream in (self._pipe, self._answers):
            with contextlib.suppress(OSError):
                stream.close()


def _widen_pipe(handle: int) -> None:
    """The pipe grown to PIPE_CAPACITY where the system allows it (Linux); as it is elsewhere,
    where the child only keeps up less smoothly."""
    if fcntl is not None and hasattr(fcntl, "F_SETPIPE_SZ"):
        with contextlib.suppress(OSError):
            fcntl.fcntl(handle, fcntl.F_SETPIPE_SZ, PIPE_CAPACITY)


def stager_for(files: int) -> Stager:
    """A child for a large write, where one can be started; this process otherwise."""
    if files >= CHILD_MIN_FILES:
        # Without an interpreter to run (a frozen build) the files are staged here, only slower.
        with contextlib.suppress(OSError):
            return ChildStager()
    return HereStager()
