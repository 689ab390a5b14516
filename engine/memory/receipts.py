"""Recall receipts: content-free, digest-bound, stored for the fence and for audit.

Issuing one, checking a presented one and the replay fence read the store through
engine/storage/reads/__init__.py (a cold CLI call on SQLite answers them through sqlite3); the rest
(the workbench's lists, usage counts, retention) query through the ORM, by the helpers of
engine/storage/queries/memory.py, imported where used."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from engine.contract import visibility
from engine.contract.errors import MemoryFailure
from engine.contract.normalize import content_hash, digest_of, fence_form, is_sha256, iso_utc
from engine.storage.reads import public_receipt

if TYPE_CHECKING:
    from engine.storage.reads import StoreReads
    from engine.storage.schema import tables
    from engine.storage.store import MemoryEngine

RECEIPT_FIELDS = ("caller", "session", "issuedAt", "memoryIds", "spanHashes", "digest")


def receipt_digest(receipt: Mapping[str, Any]) -> str:
    return digest_of({key: receipt[key] for key in RECEIPT_FIELDS if key != "digest"})


def issue_receipt(
    *, caller: str, session: str, issued_at: datetime, memory_ids: list[str], span_hashes: list[str]
) -> dict[str, Any]:
    receipt: dict[str, Any] = {
        "caller": caller,
        "session": session,
        "issuedAt": iso_utc(issued_at),
        "memoryIds": memory_ids,
        "spanHashes": span_hashes,
    }
    receipt["digest"] = receipt_digest(receipt)
    return receipt


def _receipt_of_row(row: tables.ReceiptRow) -> dict[str, Any]:
    assert row.issued_at is not None
    return public_receipt(
        caller=row.caller,
        session=row.session,
        issued_at=row.issued_at,
        memory_ids=row.memory_ids,
        span_hashes=row.span_hashes,
        digest=row.digest,
    )


def _invalid(why: str) -> MemoryFailure:
    return MemoryFailure(
        "MEMORY_RECEIPT_INVALID",
        f"The receipt {why}. Pass the receipt exactly as a recall returned it "
        "(the whole `recall --json` output or its `receipt` object), unmodified.",
    )


def check_receipt_shape(receipt: Any) -> dict[str, Any]:
    if isinstance(receipt, dict) and "receipt" in receipt and isinstance(receipt["receipt"], dict):
        receipt = receipt["receipt"]  # a whole saved recall result
    if not isinstance(receipt, dict):
        raise _invalid("is not a JSON object")
    missing = [key for key in RECEIPT_FIELDS if key not in receipt]
    if missing:
        raise _invalid(f"lacks {', '.join(missing)}")
    if not (
        isinstance(receipt["caller"], str)
        and isinstance(receipt["session"], str)
        and isinstance(receipt["issuedAt"], str)
        and isinstance(receipt["memoryIds"], list)
        and isinstance(receipt["spanHashes"], list)
        and all(isinstance(x, str) for x in receipt["memoryIds"])
        and all(is_sha256(x) for x in receipt["spanHashes"])
        and is_sha256(receipt["digest"])
    ):
        raise _invalid("has fields of the wrong type")
    texts = [receipt["caller"], receipt["session"], receipt["issuedAt"], *receipt["memoryIds"]]
    try:  # the digest is taken over UTF-8; a lone surrogate cannot be part of an issued receipt
        for value in texts:
            value.encode("utf-8")
    except UnicodeEncodeError:
        raise _invalid("holds text that is not valid UTF-8") from None
    return receipt


def verify_presented(reads: StoreReads, receipt: Any) -> dict[str, Any]:
    """The receipt, if its digest matches its fields and a stored receipt; else RECEIPT_INVALID."""
    receipt = check_receipt_shape(receipt)
    if receipt_digest(receipt) != receipt["digest"]:
        raise _invalid("does not match its digest (it was altered after it was issued)")
    stored = reads.stored_receipt(receipt["digest"])
    if stored is None or stored != {k: receipt[k] for k in RECEIPT_FIELDS}:
        raise _invalid("was not issued by this store")
    return cast(dict[str, Any], receipt)


@dataclass
class ReceiptCheck:
    """What a person sees when verifying a stored receipt in the workbench or the CLI."""

    digest_ok: bool
    stored: bool
    # Ids of memories that are no longer current (superseded, retired, expired or gone).
    drifted: dict[str, str] = field(default_factory=dict)


def check_stored_receipt(
    receipt: Mapping[str, Any], stored: bool, facts: Sequence[tables.FactRow], now: datetime
) -> ReceiptCheck:
    """`receipt` checked: whether its digest matches its fields, `stored` as found, and which
    of its memories are no longer current among `facts` (the facts with its memoryIds)."""
    digest_ok = receipt_digest(receipt) == receipt.get("digest")
    drifted: dict[str, str] = {}
    ids = list(receipt.get("memoryIds", []))
    rows = {row.record_id: row for row in facts}
    for record_id in ids:
        row = rows.get(record_id)
        if row is None:
            drifted[record_id] = "gone from the index"
        elif row.superseded_by:
            drifted[record_id] = f"superseded by {row.superseded_by}"
        elif row.retired_at:
            drifted[record_id] = "retired"
        elif visibility.is_expired(row.expires_at, now):
            drifted[record_id] = "expired"
    return ReceiptCheck(digest_ok=digest_ok, stored=stored, drifted=drifted)


# -- receipts a recall had to leave waiting ------------------------------------------------------
# A recall whose receipt could not be written to the index in time (a writer held it: stopped,
# or a long import) leaves it in the pending folder (engine/storage/embedded/receipt_spool.py),
# where it counts as stored. Everything below that reads receipts through the ORM moves the waiting
# ones into the index first when it is free, and otherwise counts them where they wait.


def store_pending_receipts(engine: MemoryEngine, *, wait: bool = False) -> None:
    """Move the waiting receipts into the index; best effort, unless `wait` (under the write
    lock: what deletes receipts or keys rows to them must find them all in the table)."""
    engine.reads.store_pending_receipts(wait=wait)


def _waiting_rows(engine: MemoryEngine) -> list[tables.ReceiptRow]:
    """The receipts still waiting after a try to move them, as rows (not in any session)."""
    from engine.contract.normalize import parse_iso
    from engine.storage.schema import tables

    store_pending_receipts(engine)
    return [
        tables.ReceiptRow(
            digest=receipt["digest"],
            caller=receipt["caller"],
            session=receipt["session"],
            issued_at=parse_iso(receipt["issuedAt"]),
            memory_ids=list(receipt["memoryIds"]),
            span_hashes=list(receipt["spanHashes"]),
        )
        for receipt in engine.reads.pending_receipts()
    ]


def _newest_first(
    rows: Sequence[tables.ReceiptRow], waiting: list[tables.ReceiptRow]
) -> list[tables.ReceiptRow]:
    known = {row.digest for row in rows}
    merged = [*rows, *(row for row in waiting if row.digest not in known)]
    if waiting:
        merged.sort(key=lambda row: (row.issued_at, row.digest), reverse=True)
    return merged


def _receipt_rows(engine: MemoryEngine) -> list[tables.ReceiptRow]:
    """Every stored receipt, waiting ones included, newest first."""
    from engine.storage.queries.memory import receipts_newest_first

    waiting = _waiting_rows(engine)
    with engine.session() as session:
        rows = receipts_newest_first(session)
    return _newest_first(rows, waiting)


def recent_receipts(engine: MemoryEngine, *, limit: int = 200) -> list[dict[str, Any]]:
    from engine.storage.queries.memory import receipts_newest_first

    waiting = _waiting_rows(engine)
    with engine.session() as session:
        rows = receipts_newest_first(session, limit)
        return [_receipt_of_row(row) for row in _newest_first(rows, waiting)[:limit]]


def verify_receipt(engine: MemoryEngine, receipt: Mapping[str, Any]) -> ReceiptCheck:
    from engine.storage.queries.memory import facts_by_ids
    from engine.storage.schema import tables

    store_pending_receipts(engine)
    with engine.session() as session:
        now = engine.now()
        stored = session.get(tables.ReceiptRow, receipt.get("digest", "")) is not None
        facts = facts_by_ids(session, list(receipt.get("memoryIds", [])))
        check = check_stored_receipt(receipt, stored, facts, now)
    if not check.stored and isinstance(receipt.get("digest"), str):
        check.stored = engine.reads.stored_receipt(receipt["digest"]) is not None  # waiting
    return check


# -- the replay fence (docs/contract.md section 5) ----------------------------------------------
# A receipt's spanHashes are the contentHashes of the facts it returned, which only catch a
# replay that differs in whitespace or NFC. So the fence also looks up the texts of the facts
# behind its memoryIds and compares fence forms (engine/contract/normalize.py fence_form):
# case, fullwidth letters, invisible characters, look-alike letters, quotes and punctuation at
# the ends do not make a recalled span new.

# rapidfuzz ratio (0-100) of two fence forms from which a receipted span counts as a near miss.
NEAR_MISS_RATIO = 90.0


def _replays(text: str, receipt: Mapping[str, Any], spans: dict[str, str]) -> str | None:
    """The recordId (or span hash) of the receipt's span that `text` repeats, or None."""
    digest = content_hash(text)
    if digest in receipt.get("spanHashes", []):
        return digest
    form = fence_form(text)
    if not form:  # nothing but punctuation: only an exact match fences it
        return None
    for record_id in receipt.get("memoryIds", []):
        span = spans.get(record_id)
        if span is not None and fence_form(span) == form:
            return str(record_id)
    return None


def replayed_span(reads: StoreReads, receipt: Mapping[str, Any], text: str) -> str | None:
    """The span of a verified receipt that `text` replays (its recordId, or its hash when the
    contentHash matches), or None: remember refuses the first with MEMORY_FENCED_REPLAY."""
    return _replays(text, receipt, reads.fact_texts(receipt.get("memoryIds", [])))


def would_fence(engine: MemoryEngine, receipt: Mapping[str, Any], text: str) -> bool:
    """Would remembering `text` with this receipt (a recall result or its `receipt`) be fenced
    as a replay? The same comparison as remember's fence; the receipt is not verified here."""
    if isinstance(receipt.get("receipt"), dict):
        receipt = receipt["receipt"]
    return replayed_span(engine.reads, receipt, text) is not None


@dataclass(frozen=True)
class FenceExposure:
    """The stored receipts whose spans include a text: presenting any of them fences it."""

    receipts: int
    latest_caller: str | None = None
    latest_at: str | None = None


def fence_exposure(engine: MemoryEngine, text: str) -> FenceExposure:
    """How many stored recall receipts returned this text (its contentHash, or a span with the
    same fence form), and the newest one's caller and time. An agent that presents one of them
    when remembering the text gets MEMORY_FENCED_REPLAY (docs/contract.md section 5)."""
    rows = _receipt_rows(engine)
    spans = engine.reads.fact_texts([i for row in rows for i in row.memory_ids])
    hits = [
        row
        for row in rows
        if _replays(text, {"memoryIds": row.memory_ids, "spanHashes": row.span_hashes}, spans)
    ]
    if not hits:
        return FenceExposure(0)
    assert hits[0].issued_at is not None
    return FenceExposure(len(hits), hits[0].caller, iso_utc(hits[0].issued_at))


@dataclass(frozen=True)
class FenceNearMiss:
    """A receipted span close to a text but not the same (so not fenced): worth a look before
    accepting the text as new, since it may be a recalled memory reworded to pass the fence."""

    record_id: str
    text: str  # the span, as stored
    similarity: float  # rapidfuzz ratio of the two fence forms, NEAR_MISS_RATIO..100
    receipts: int  # stored receipts that returned the span (among those considered)
    latest_caller: str | None = None
    latest_at: str | None = None


def fence_near_misses(
    engine: MemoryEngine,
    text: str,
    *,
    receipt: Mapping[str, Any] | None = None,
    threshold: float = NEAR_MISS_RATIO,
    limit: int = 20,
) -> list[FenceNearMiss]:
    """The receipted spans whose fence form is close to `text`'s (rapidfuzz ratio at least
    `threshold`) but not equal to it, closest first. `receipt` (a recall result or its
    `receipt`): only that receipt's spans; else the spans of every stored receipt."""
    from rapidfuzz import fuzz  # here: a recall (which issues receipts) never needs it

    form = fence_form(text)
    if not form:
        return []
    # recordId -> (caller, issuedAt) of the receipts that returned it, newest first
    seen: dict[str, list[tuple[str, str]]] = {}
    if receipt is not None:
        if isinstance(receipt.get("receipt"), dict):
            receipt = receipt["receipt"]
        issued = (str(receipt.get("caller", "")), str(receipt.get("issuedAt", "")))
        seen = {str(i): [issued] for i in receipt.get("memoryIds", [])}
    else:
        for row in _receipt_rows(engine):
            assert row.issued_at is not None
            for record_id in row.memory_ids:
                seen.setdefault(record_id, []).append((row.caller, iso_utc(row.issued_at)))
    spans = engine.reads.fact_texts(list(seen))
    misses: list[FenceNearMiss] = []
    for record_id, span in spans.items():
        if content_hash(span) == content_hash(text):
            continue
        span_form = fence_form(span)
        if not span_form or span_form == form:
            continue  # fenced, not a near miss
        ratio = fuzz.ratio(form, span_form, score_cutoff=threshold)
        if ratio:
            hits = seen[record_id]
            misses.append(
                FenceNearMiss(
                    record_id=record_id,
                    text=span,
                    similarity=round(float(ratio), 1),
                    receipts=len(hits),
                    latest_caller=hits[0][0],
                    latest_at=hits[0][1],
                )
            )
    misses.sort(key=lambda miss: (-miss.similarity, miss.record_id))
    return misses[:limit]


def recall_usage(
    engine: MemoryEngine, record_id: str, *, as_of: datetime | None = None
) -> tuple[int, str | None]:
    """How many stored receipts name this fact, and the caller of the latest one; issued up
    to `as_of` when given (the Library's as-of view)."""
    rows = _receipt_rows(engine)
    hits = [
        row
        for row in rows
        if record_id in row.memory_ids
        and (as_of is None or (row.issued_at is not None and row.issued_at <= as_of))
    ]
    return len(hits), hits[0].caller if hits else None


# -- retention: export, delete, purge ----------------------------------------------------------
# Receipts are content-free (ids and hashes), but they still say who recalled what and when, so
# a person may export them for audit and delete them for retention. A deleted receipt no longer
# fences (an agent presenting it gets MEMORY_RECEIPT_INVALID, so its write is refused anyway)
# and no longer counts in "recalled N×"; the decision log keeps the digests and who deleted them.


def default_export_path(home: Path, now: datetime) -> Path:
    """Where receipts are exported unless another path is given: a file named by the time."""
    stamp = iso_utc(now).replace(":", "").replace("-", "").replace(".", "")
    return home / "exports" / f"receipts-{stamp}.jsonl"


def export_receipts(
    engine: MemoryEngine, *, digests: Sequence[str] | None = None, path: Path | None = None
) -> Path:
    """Write the receipts (all, or those digests) as JSON lines to `path` (by default a new
    file under <home>/exports/), newest first; returns the file's path. Nothing is written
    when there is nothing to export."""
    from engine.storage.embedded.factfiles import write_atomically

    wanted = recent_receipts(engine, limit=1_000_000)
    if digests is not None:
        chosen = set(digests)
        wanted = [receipt for receipt in wanted if receipt["digest"] in chosen]
    if not wanted:
        raise MemoryFailure("MEMORY_NOT_FOUND", "No receipt to export: select or mark one.")
    path = path or default_export_path(engine.home, engine.now())
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = "".join(json.dumps(receipt, sort_keys=True) + "\n" for receipt in wanted)
    write_atomically(path, lines)
    return path


def receipts_issued_before(engine: MemoryEngine, moment: datetime) -> int:
    from engine.storage.queries.memory import count_receipts_issued_before

    waiting = len(
        [row for row in _waiting_rows(engine) if row.issued_at and row.issued_at < moment]
    )
    with engine.session() as session:
        return waiting + count_receipts_issued_before(session, moment)


def delete_receipts(engine: MemoryEngine, *, digests: Sequence[str], actor: str) -> int:
    """Delete these receipts; returns how many there were. Logged with their digests."""
    from engine.storage.queries.memory import receipts_with_digests

    return _delete(
        engine,
        lambda session: receipts_with_digests(session, digests),
        actor=actor,
        action="delete-receipts",
    )


def purge_receipts(engine: MemoryEngine, *, before: datetime, actor: str) -> int:
    """Delete every receipt issued before `before`; returns how many. Logged."""
    from engine.storage.queries.memory import receipts_issued_before

    return _delete(
        engine,
        lambda session: receipts_issued_before(session, before),
        actor=actor,
        action="purge-receipts",
        extra={"before": iso_utc(before)},
    )


def _delete(
    engine: MemoryEngine,
    rows_in: Callable[..., Sequence[tables.ReceiptRow]],
    *,
    actor: str,
    action: str,
    extra: dict[str, Any] | None = None,
) -> int:
    """Delete the receipts `rows_in` finds in the write's session, and log it."""
    from engine.storage.queries.memory import delete_recall_labels
    from engine.storage.schema import tables

    with engine.write_lock(), engine.session() as session:
        store_pending_receipts(engine, wait=True)  # a waiting one is deleted (purged) too
        rows = rows_in(session)
        now = engine.now()
        if not rows:
            return 0
        digests = sorted(row.digest for row in rows)
        for row in rows:
            session.delete(row)
        # A person's labels on those recalls go with them (engine/curation/labels.py).
        delete_recall_labels(session, digests)
        session.add(
            tables.DecisionRow(
                at=now,
                actor=actor,
                action=action,
                target="receipts",
                detail={"count": len(digests), "digests": digests, **(extra or {})},
            )
        )
        session.commit()
        return len(digests)
