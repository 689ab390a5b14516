"""The one thread of a process that writes index copies to disk.

A thread of its own per save left memory behind: glibc gives a new thread a malloc arena of
its own unless one whose thread has ended is free, and a save thread still ending when the
next one started made that one take another arena. Each kept the save's temporaries (16-18
MiB at 15k facts) under the trim threshold engine/retrieval/heap.py sets for recalls, so a
reader that followed other processes' writes ended with ten arenas. One long-lived thread
allocates from one arena, reused by every save, and gives its free pages back after each
(heap.give_back_free_heap).

The thread is a daemon, so an idle one never holds a process open; a save still queued or
running when the interpreter exits is finished first (atexit), as a non-daemon thread would
be: the next process then maps the copy instead of building it."""

from __future__ import annotations

import atexit
import logging
import queue
import threading
from collections.abc import Callable

from engine.retrieval.heap import give_back_free_heap

log = logging.getLogger(__name__)


class SaveJob:
    """One queued save; `join` waits for it (as a thread's join would)."""

    def __init__(self, write: Callable[[], None]) -> None:
        self._write = write
        self._done = threading.Event()

    def is_alive(self) -> bool:
        return not self._done.is_set()

    def join(self, timeout: float | None = None) -> None:
        self._done.wait(timeout)

    def run(self) -> None:
        try:
            self._write()
        finally:
            self._done.set()


class IndexSaver:
    """A queue of saves and the thread that runs them, started on the first save."""

    def __init__(self) -> None:
        self._jobs: queue.Queue[SaveJob] = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._pending: list[SaveJob] = []

    def submit(self, write: Callable[[], None]) -> SaveJob:
        job = SaveJob(write)
        with self._lock:
            self._pending = [other for other in self._pending if other.is_alive()]
            self._pending.append(job)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name="gno-tui index save", daemon=True
                )
                self._thread.start()
                atexit.register(self.finish)
        self._jobs.put(job)
        return job

    def finish(self) -> None:
        """Wait for every save submitted so far (at exit: the copy is not left unwritten)."""
        with self._lock:
            pending = list(self._pending)
        for job in pending:
            job.join()

    def _serve(self) -> None:
        while True:
            job = self._jobs.get()
            try:
                job.run()
            except Exception:  # a failed save costs the next process a rebuild, not this thread
                log.exception("gno-tui: the index copy could not be saved")
            give_back_free_heap()  # the save's temporaries are free by now


SAVER = IndexSaver()
