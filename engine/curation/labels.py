"""A person's labels on recall results: which returned facts were relevant, which were not,
and which facts the recall missed.

Labels hang on the receipt (digest) and the fact's record id, so they stay as content-free as
the receipt. Each person has one label per (receipt, fact); labelling again replaces it, and
the label `none` takes it away. Across receipts they give a precision of what recall returned
and a count of what it missed: the recall side of the calibration that Review does for dedup.

An agent's usage report on its own recall (OB1's `POST /recall/{request_id}/usage`) is kept
the same way, as the labels `used` and `ignored` with the recall's caller as actor: content-free,
and deleted with the receipt (engine/memory/receipts.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.contract.errors import MemoryFailure
from engine.storage.queries.curation import recall_labels, recall_labels_by
from engine.storage.reads.records import get_fact
from engine.storage.schema import tables

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

LABELS = ("relevant", "irrelevant", "missing")
USAGE_LABELS = ("used", "ignored")  # an agent's report on the facts its recall returned


@dataclass(frozen=True)
class LabelSummary:
    receipts: int  # receipts with at least one label
    relevant: int
    irrelevant: int
    missing: int

    @property
    def precision(self) -> float | None:
        judged = self.relevant + self.irrelevant
        return self.relevant / judged if judged else None


def label_recall_item(
    engine: MemoryEngine, *, digest: str, ref: str, label: str, actor: str
) -> str:
    """Set (or with `none` remove) `actor`'s label on fact `ref` for the recall with this
    receipt digest; returns the fact's record id. Returned facts take relevant/irrelevant,
    others take missing."""
    if label not in (*LABELS, "none"):
        raise MemoryFailure(
            "MEMORY_DECISION_INVALID", f"Unknown label {label!r}; use one of {LABELS} or none."
        )
    with engine.write_lock(), engine.session() as session:
        engine.reads.store_pending_receipts(wait=True)  # a recall's that had to wait
        receipt = session.get(tables.ReceiptRow, digest)
        if receipt is None:
            raise MemoryFailure(
                "MEMORY_RECEIPT_INVALID",
                "No stored receipt has this digest (deleted, or never issued here); "
                "run the recall again to label its results.",
            )
        fact = get_fact(session, ref=ref)
        if fact is None:
            raise MemoryFailure("MEMORY_NOT_FOUND", f"No fact {ref}; use its #docid or uri.")
        returned = fact.record_id in receipt.memory_ids
        if label == "missing" and returned:
            raise MemoryFailure(
                "MEMORY_DECISION_INVALID",
                f"{fact.docid} was returned by this recall: label it relevant or irrelevant.",
            )
        if label in ("relevant", "irrelevant") and not returned:
            raise MemoryFailure(
                "MEMORY_DECISION_INVALID",
                f"{fact.docid} was not returned by this recall: label it missing instead.",
            )
        existing = session.get(tables.RecallLabelRow, (digest, fact.record_id, actor))
        if label == "none":
            if existing is not None:
                session.delete(existing)
        elif existing is not None:
            existing.label, existing.at = label, engine.now()
        else:
            session.add(
                tables.RecallLabelRow(
                    digest=digest,
                    record_id=fact.record_id,
                    actor=actor,
                    label=label,
                    at=engine.now(),
                )
            )
        session.commit()
        return fact.record_id


def labels_of(engine: MemoryEngine, *, digest: str, actor: str) -> dict[str, str]:
    """record id -> label, for one recall and one person."""
    with engine.session() as session:
        rows = recall_labels(session, digest=digest, actor=actor)
        return {row.record_id: row.label for row in rows}


def label_summary(engine: MemoryEngine, *, actor: str) -> LabelSummary:
    with engine.session() as session:
        rows = recall_labels_by(session, actor)
    counts = {label: sum(row.label == label for row in rows) for label in LABELS}
    return LabelSummary(
        receipts=len({row.digest for row in rows}),
        relevant=counts["relevant"],
        irrelevant=counts["irrelevant"],
        missing=counts["missing"],
    )


def record_usage(
    engine: MemoryEngine, *, digest: str, caller: str, used: list[str], ignored: list[str]
) -> dict[str, str]:
    """Record which facts of the recall with this receipt digest its caller used and which it
    ignored (record ids, as the recall returned them); reporting a fact again replaces its
    label. Only the recall's own caller may report: a receipt of another caller is answered as
    an unknown one (MEMORY_REQUEST_NOT_FOUND). Returns the caller's usage labels on the receipt
    (record id -> used | ignored), these included."""
    both = sorted(set(used) & set(ignored))
    if both:
        raise MemoryFailure(
            "MEMORY_USAGE_INVALID",
            f"{', '.join(both)} is reported both used and ignored; name each memory once.",
        )
    with engine.write_lock(), engine.session() as session:
        engine.reads.store_pending_receipts(wait=True)  # a recall's that had to wait
        receipt = session.get(tables.ReceiptRow, digest)
        if receipt is None or receipt.caller != caller:
            raise MemoryFailure(
                "MEMORY_REQUEST_NOT_FOUND",
                f"No recall {digest!r} of {caller} is stored here (never issued to this "
                "caller, or deleted): report usage with the request_id your own recall "
                "answered.",
            )
        returned = set(receipt.memory_ids)
        strangers = sorted({*used, *ignored} - returned)
        if strangers:
            raise MemoryFailure(
                "MEMORY_USAGE_INVALID",
                f"This recall did not return {', '.join(strangers)}; report only the "
                "memory_ids it answered.",
            )
        now = engine.now()
        reported = {**dict.fromkeys(used, "used"), **dict.fromkeys(ignored, "ignored")}
        for record_id, label in reported.items():
            row = session.get(tables.RecallLabelRow, (digest, record_id, caller))
            if row is None:
                session.add(
                    tables.RecallLabelRow(
                        digest=digest, record_id=record_id, actor=caller, label=label, at=now
                    )
                )
            else:
                row.label, row.at = label, now
        session.commit()
        rows = recall_labels(session, digest=digest, actor=caller)
        return {row.record_id: row.label for row in rows if row.label in USAGE_LABELS}
