"""The home's write lock across processes (engine/storage/embedded/home_lock.py): a writer that
finds it taken waits in the kernel and goes on as soon as it is released, gives up with
MEMORY_WRITE_LEASE_BUSY after the engine's lock timeout without keeping the lock from anyone,
and a holder that dies releases it."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from engine.contract.errors import MemoryFailure
from engine.facade.factory import open_engine
from engine.retrieval.embeddings import EmbedderStatus
from engine.storage.embedded import home_lock
from engine.storage.embedded.home_lock import HomeLock
from engine.storage.store import MemoryEngine

if TYPE_CHECKING:
    from conftest import Client

# The embedded mode's own machinery (fact files staged in a group, the home's file lock);
# the server mode has neither: tests/pg/test_server_mode.py tests its advisory lock.
pytestmark = pytest.mark.embedded_mode


def _waiting_signal(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """Set when a writer starts waiting for the lock (instead of guessing when it has)."""
    waiting = threading.Event()
    real_wait = home_lock._wait_for_flock

    def wait(descriptor: int, timeout: float) -> bool:
        waiting.set()
        return real_wait(descriptor, timeout)

    monkeypatch.setattr(home_lock, "_wait_for_flock", wait)
    return waiting


def test_a_writer_waits_for_the_holder_and_goes_on_when_it_lets_go(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    waiting = _waiting_signal(monkeypatch)
    other = HomeLock(client.engine.home / ".write.lock")  # another process's hold
    assert other.acquire(5)
    outcome: dict[str, Any] = {}

    def write() -> None:
        outcome["result"] = client.add("Alice drinks green tea", "user:alice")

    writer = threading.Thread(target=write)
    writer.start()
    assert waiting.wait(30)
    assert "result" not in outcome  # it cannot have written while the lock was held
    other.release()
    writer.join(30)
    assert outcome["result"]["outcome"] == "added"


@pytest.fixture
def impatient(home: Path) -> Iterator[MemoryEngine]:
    store = open_engine(
        home=home, embedder_status=EmbedderStatus(None, "lexical"), lock_timeout=0.05
    )
    yield store
    store.db.dispose()


def test_a_writer_that_gives_up_keeps_the_lock_from_nobody(
    impatient: MemoryEngine,
    monkeypatch: pytest.MonkeyPatch,
    client_over: Callable[[MemoryEngine], Client],
) -> None:
    client = client_over(impatient)
    waiting = _waiting_signal(monkeypatch)
    other = HomeLock(impatient.home / ".write.lock")
    assert other.acquire(5)
    with pytest.raises(MemoryFailure) as busy:
        client.add("Bob drinks water", "user:bob")
    assert busy.value.code == "MEMORY_WRITE_LEASE_BUSY"
    assert waiting.is_set()
    other.release()
    # The abandoned wait takes the lock when it frees and hands it straight on.
    third = HomeLock(impatient.home / ".write.lock")
    assert third.acquire(30)
    third.release()
    for thread in threading.enumerate():
        if thread.name == "gno-write-lock-wait":
            thread.join(30)
            assert not thread.is_alive()
    assert client.add("Bob drinks water", "user:bob")["outcome"] == "added"


def test_a_holder_that_dies_releases_the_lock(client: Client) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pathlib import Path;"
            "from engine.storage.embedded.home_lock import HomeLock;"
            f"lock = HomeLock(Path({str(client.engine.home / '.write.lock')!r}));"
            "assert lock.acquire(5); print('held', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        holder.kill()
        holder.wait(30)
        assert client.add("Carol likes the savanna", "user:carol")["outcome"] == "added"
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(30)
