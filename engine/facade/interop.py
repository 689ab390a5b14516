"""The façade's import and export."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.interop import transfer
from engine.interop.transfer import ImportReport

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine


class InteropApi:
    def __init__(self, engine: MemoryEngine) -> None:
        self._engine = engine

    def import_file(
        self,
        path: Path,
        *,
        fmt: str | None = None,
        scopes: list[str] | None = None,
        collection: str | None = None,
        dry_run: bool = False,
        caller: str = "import",
        progress: Callable[[int, int], None] | None = None,
    ) -> ImportReport:
        return transfer.run_import(
            self._engine,
            path,
            fmt=fmt,
            scopes=scopes,
            collection=collection,
            dry_run=dry_run,
            caller=caller,
            progress=progress,
        )

    def export_jsonl(self) -> list[dict[str, Any]]:
        return transfer.export_jsonl_items(self._engine)

    def export_ob1(self) -> dict[str, Any]:
        return transfer.export_ob1(self._engine)

    def export_gno(self, output: Path) -> int:
        return transfer.export_gno(self._engine, output)
