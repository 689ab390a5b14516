"""The embedded store's write lock across processes: flock(2) on `.write.lock` beside the
SQLite index (`<home>/.write.lock` for the home's own index.sqlite). A writer that finds it
taken waits in the kernel, not by polling: the lock passes to a waiter the moment its holder
lets go, and a waiting process spends no CPU. (Polling every 2 ms left the home idle for a
millisecond on average at each hand-off between processes, and each failed poll cost a
waiter ~50 us of CPU.)"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path
from typing import Any

from engine.storage.embedded.home import read_only_refusal

try:
    import fcntl
except ImportError:  # Windows: filelock's polled lock instead
    fcntl = None  # type: ignore[assignment]


class HomeLock:
    """An exclusive lock on a file across processes. Each hold has a descriptor of its own
    (closing it releases the lock, so a killed holder releases it too); threads of one
    process must take turns before they ask (MemoryEngine's thread lock)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._held: int | None = None
        self._fallback: Any = None
        if fcntl is None:
            from filelock import FileLock

            self._fallback = FileLock(str(path))

    def acquire(self, timeout: float) -> bool:
        """Take the lock, waiting at most `timeout` s; False if it stayed taken."""
        if self._fallback is not None:
            from filelock import Timeout

            try:
                self._fallback.acquire(timeout=timeout, poll_interval=0.002)
            except Timeout:
                return False
            return True
        try:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            if exc.errno not in (errno.EACCES, errno.EPERM, errno.EROFS):
                raise
            # Made writable, or read-only, after the store opened (the open checks first).
            why = f"its write lock {self.path.name} cannot be opened: {exc.strerror}"
            raise read_only_refusal(self.path.parent, why) from None
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if timeout <= 0:  # only if free now: no thread left waiting for it
                os.close(descriptor)
                return False
            if not _wait_for_flock(descriptor, timeout):
                return False  # the descriptor is the waiting thread's to close
        except BaseException:
            os.close(descriptor)
            raise
        self._held = descriptor
        return True

    def release(self) -> None:
        if self._fallback is not None:
            self._fallback.release()
            return
        descriptor, self._held = self._held, None
        if descriptor is not None:
            os.close(descriptor)  # releases the flock


def _wait_for_flock(descriptor: int, timeout: float) -> bool:
    """Block on the lock in a helper thread (a blocking flock cannot time out), for at most
    `timeout` s. Given up, the helper closes the descriptor once it has the lock, which hands
    it straight on; an error of the wait itself is raised here."""
    taken = threading.Event()
    guard = threading.Lock()
    outcome: dict[str, Any] = {"abandoned": False, "error": None}

    def block() -> None:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        except OSError as exc:
            outcome["error"] = exc
        with guard:
            if outcome["abandoned"]:
                os.close(descriptor)
                return
            taken.set()

    threading.Thread(target=block, name="gno-write-lock-wait", daemon=True).start()
    taken.wait(timeout)
    with guard:
        if not taken.is_set():
            outcome["abandoned"] = True
            return False
    if outcome["error"] is not None:
        os.close(descriptor)
        raise outcome["error"]
    return True
