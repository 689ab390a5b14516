"""The façade's receipts: recent ones, verification, the fence preview and exposure, recall
usage, and retention (export, delete, purge)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, cast

from engine.facade.namespace import Namespace
from engine.memory import receipts
from engine.memory.receipts import NEAR_MISS_RATIO, FenceExposure, FenceNearMiss, ReceiptCheck

if TYPE_CHECKING:
    from engine.contract.results import Receipt, ReceiptGiven


class ReceiptsApi(Namespace):
    def recent(self, *, limit: int = 200) -> list[Receipt]:
        # public_receipt builds each as dict[str, Any], the seed's receipt.
        return cast("list[Receipt]", receipts.recent_receipts(self._engine, limit=limit))

    def verify(self, receipt: ReceiptGiven) -> ReceiptCheck:
        """Is this a receipt this store issued, unmodified? `receipt`: a recall result or its
        receipt, as a surface was given it (MEMORY_RECEIPT_INVALID when it is not one)."""
        return receipts.verify_receipt(self._engine, receipt)

    def exposure(self, text: str) -> FenceExposure:
        """The stored receipts that already returned this exact text (it would be fenced)."""
        return receipts.fence_exposure(self._engine, text)

    def usage(self, record_id: str, *, as_of: datetime | None = None) -> tuple[int, str | None]:
        """How often a fact was recalled, and by whom last (up to `as_of`, None: now)."""
        return receipts.recall_usage(self._engine, record_id, as_of=as_of)

    def record_usage(
        self, *, digest: str, caller: str, used: Sequence[str], ignored: Sequence[str] = ()
    ) -> dict[str, str]:
        """An agent's report on its own recall (receipt `digest`): which returned facts it
        used and which it ignored; the caller's usage on that recall, record id -> label."""
        from engine.curation import labels

        return labels.record_usage(
            self._engine, digest=digest, caller=caller, used=list(used), ignored=list(ignored)
        )

    def export(self, *, digests: Sequence[str] | None = None, path: Path | None = None) -> Path:
        return receipts.export_receipts(self._engine, digests=digests, path=path)

    def default_export_path(self) -> Path:
        """Where an export goes unless another path is given (a new file under the home)."""
        return receipts.default_export_path(self._engine.home, self._engine.now())

    def issued_before(self, moment: datetime) -> int:
        return receipts.receipts_issued_before(self._engine, moment)

    def delete(self, *, digests: Sequence[str], actor: str) -> int:
        return receipts.delete_receipts(self._engine, digests=digests, actor=actor)

    def purge(self, *, before: datetime, actor: str) -> int:
        return receipts.purge_receipts(self._engine, before=before, actor=actor)

    def near_misses(
        self,
        text: str,
        *,
        receipt: ReceiptGiven | None = None,
        threshold: float = NEAR_MISS_RATIO,
        limit: int = 20,
    ) -> list[FenceNearMiss]:
        """Receipted spans close to `text` (rapidfuzz ratio >= `threshold` of their fence
        forms) but not equal to it, so not fenced: possibly a recalled memory reworded.
        `receipt`: only that receipt's spans (a recall result or its receipt); else every
        stored receipt's. Closest first."""
        return receipts.fence_near_misses(
            self._engine, text, receipt=receipt, threshold=threshold, limit=limit
        )

    def would_fence(self, receipt: ReceiptGiven, text: str) -> bool:
        """Would remembering `text` with this receipt be MEMORY_FENCED_REPLAY? The fence's own
        comparison (fence forms of the spans' texts)."""
        return receipts.would_fence(self._engine, receipt, text)
