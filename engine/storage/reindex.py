"""`gno-tui reindex`: bring what is derived in line with what is canonical, as the store
keeps it (the embedded store rebuilds the index from the fact files:
engine/storage/embedded/reindex.py; the server store rebuilds derived data only), a full disk
said with what it left as it was."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from engine.storage.disk_full import disk_full_refusal

if TYPE_CHECKING:
    from engine.storage.mode import StoreEngine


def reindex(
    engine: StoreEngine, progress: Callable[[int, int], None] | None = None
) -> dict[str, Any]:
    """Reindex the store; `progress(done, total)` as it goes. In the embedded store a SQLite
    index that fails its integrity check is set aside and rebuilt first, and what opening the
    home already rebuilt (once per engine) is counted in and said in `notes`."""
    try:
        return engine.store.reindex(engine, progress)
    except Exception as exc:  # a full disk is said as such (engine/storage/disk_full.py)
        kept = engine.store.reindex_keeps()
        refusal = disk_full_refusal(
            exc,
            engine.home,
            f"reindex could not finish; {kept}. Free some space there, then run "
            "`gno-tui reindex` again",
            reword=True,
        )
        if refusal is None:
            raise
        raise refusal from exc
