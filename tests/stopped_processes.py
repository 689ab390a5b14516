"""Waiting for a child process to stop itself at a test hook (engine/storage/crash_hook.py
`stop_here`): waitpid with WUNTRACED in a thread, so a run whose child never stops fails after
a guard instead of hanging. It waits on the process, never on a time."""

from __future__ import annotations

import os
import subprocess
import threading
from collections.abc import Callable
from typing import Any


def wait_until_stopped(
    process: subprocess.Popen[Any], guard_s: float, what: str, log: Callable[[], str]
) -> None:
    """Until `process` has stopped (SIGSTOP); else kill it and fail, showing `log()`."""
    seen: list[int] = []
    waiter = threading.Thread(
        target=lambda: seen.append(os.waitpid(process.pid, os.WUNTRACED)[1]), daemon=True
    )
    waiter.start()
    waiter.join(guard_s)
    if not seen or not os.WIFSTOPPED(seen[0]):
        process.kill()
        raise AssertionError(f"{what} did not stop at its hook:\n{log()}")
