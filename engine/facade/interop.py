"""The façade's import and export."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, cast

from engine.facade.namespace import Namespace
from engine.interop import transfer
from engine.interop.transfer import ImportReport

if TYPE_CHECKING:
    from engine.contract.results import ExportedFact, Ob1RecallResponse


@dataclass(frozen=True)
class ImportRequest:
    """A file to import: its format (detected when None), the scopes and collection its items
    get when they carry none, whether to only say what would happen, and who imports."""

    path: Path
    fmt: str | None = None
    scopes: list[str] | None = None
    collection: str | None = None
    dry_run: bool = False
    caller: str = "import"


class InteropApi(Namespace):
    def import_file(
        self, request: ImportRequest, *, progress: Callable[[int, int], None] | None = None
    ) -> ImportReport:
        """All or nothing: the whole file is checked before anything is written."""
        fields = asdict(request)
        return transfer.run_import(self._engine, fields.pop("path"), progress=progress, **fields)

    def export_jsonl(self) -> list[ExportedFact]:
        # export_jsonl_items builds each line as dict[str, Any]: a public fact and more.
        return cast("list[ExportedFact]", transfer.export_jsonl_items(self._engine))

    def export_ob1(self) -> Ob1RecallResponse:
        # Built as dict[str, Any] and validated against seed 002 by the engine.
        return cast("Ob1RecallResponse", transfer.export_ob1(self._engine))

    def export_gno(self, output: Path) -> int:
        return transfer.export_gno(self._engine, output)
