"""remember (docs/contract.md section 5): validate, fence, exact check, candidates, then write.

In the embedded mode the write is file first (atomic), then the index row; in the server mode
the row alone (engine/storage/fact_sink.py). Either way under the store's write lock; the
predecessor check of a supersede is a compare-and-swap in the index as well, so two writers
racing for one predecessor get one `superseded` and one MEMORY_SUPERSEDE_CONFLICT."""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from engine.contract.curation_fields import curation_defaults
from engine.contract.errors import MemoryFailure
from engine.contract.normalize import (
    MAX_TEXT_BYTES,
    check_identity,
    check_utf8,
    clean_text,
    content_hash,
    fact_uri,
    iso_utc,
    normalize_scopes,
)
from engine.contract.validation import ensure_valid
from engine.memory.receipts import replayed_span, verify_presented
from engine.retrieval.matching import ScoredCandidate, matching_block
from engine.retrieval.seam import Visibility
from engine.storage.embedded.factfiles import FactFile
from engine.storage.reads.fact_shape import public_fact

if TYPE_CHECKING:
    from engine.storage.reads import RecallStore
    from engine.storage.schema import tables
    from engine.storage.store import MemoryEngine

# The ORM's modules (engine.storage.reads.records, engine.storage.proposals) are imported where a
# write or a held write uses them: a propose reads through engine.reads (engine/storage/
# reads.py) and, on a cold CLI call on SQLite, loads no SQLAlchemy.

DECISIONS = ("propose", "add", "supersede")
# What the index half of a write may answer when another writer got there first: the new
# file is taken back and the call fails with that code.
_LOST_RACE = frozenset(
    {"MEMORY_SUPERSEDE_CONFLICT", "MEMORY_KEY_EXISTS", "MEMORY_REVISION_CONFLICT"}
)
KEYED_MAX_CONTENT_BYTES = 16 * 1024


@dataclass
class RememberRequest:
    text: str | None
    scopes: list[str] | None
    caller: str | None
    session: str | None
    decision: str | None = None
    predecessor: str | None = None
    predecessor_hash: str | None = None
    collection: str | None = None
    source: str | None = None
    receipt: Any = None
    derived_from: str | None = None
    # Who stands behind the write (OB1 created_by): agent surfaces say "agent", the
    # workbench "user"; it sets the fact's starting provenance and use policy.
    created_by: str = "agent"
    # The workbench's own front-matter fields for the new fact (provenance, keyed API, ...).
    workbench: dict[str, Any] = field(default_factory=dict)
    # A keyed-API write (engine/keyed/service.py): two keys may hold the same text, so the exact
    # check and the candidates are skipped, and the content limit is the keyed API's 16 KiB.
    keyed: bool = False


@dataclass
class _Checked:
    text: str
    content_hash: str
    scopes: list[str]
    caller: str
    session: str
    decision: str
    collection: str
    source: str | None


def _validate(engine: RecallStore, request: RememberRequest) -> tuple[_Checked, list[str] | None]:
    text = clean_text(
        request.text, max_bytes=KEYED_MAX_CONTENT_BYTES if request.keyed else MAX_TEXT_BYTES
    )
    caller, session = check_identity(request.caller, request.session)
    decision = request.decision or "propose"
    if decision not in DECISIONS:
        raise MemoryFailure(
            "MEMORY_DECISION_INVALID",
            f"Decision {decision!r} is unknown; use propose (the default), add or supersede.",
        )
    if decision == "supersede":
        if not request.predecessor or not request.predecessor_hash:
            raise MemoryFailure(
                "MEMORY_PREDECESSOR_REQUIRED",
                "A supersede needs the predecessor's uri and its contentHash: "
                "--supersede gno://... --predecessor-hash <sha256> (both from a recall or a "
                "candidates result).",
            )
    elif request.predecessor or request.predecessor_hash:
        raise MemoryFailure(
            "MEMORY_DECISION_INVALID",
            "A predecessor only goes with a supersede; pass --decision supersede (or "
            "--supersede URI) or drop --predecessor/--predecessor-hash.",
        )
    # Scopes may be left out of a supersede: the predecessor's are used.
    scopes = normalize_scopes(request.scopes) if request.scopes or decision != "supersede" else None
    collection = request.collection or "memory"
    engine.require_collection(collection)
    source = request.source.strip() if request.source and request.source.strip() else None
    if source is not None:
        check_utf8(source, "The source (--source)")
    if request.derived_from is not None and not isinstance(request.derived_from, str):
        raise MemoryFailure("MEMORY_DECISION_INVALID", "derivedFrom must be a string URI.")
    checked = _Checked(
        text, content_hash(text), scopes or [], caller, session, decision, collection, source
    )
    return checked, scopes


def _fence(engine: RecallStore, request: RememberRequest, checked: _Checked) -> None:
    if request.receipt is not None:
        receipt = verify_presented(engine.reads, request.receipt)
        replayed = replayed_span(engine.reads, receipt, checked.text)
        if replayed is not None:
            raise MemoryFailure(
                "MEMORY_FENCED_REPLAY",
                "This text is a span that the presented receipt's recall returned (compared "
                "ignoring case, whitespace, invisible and look-alike characters and punctuation "
                "at the ends): remembering it again would launder recalled memory into a new "
                "fact. Remember what is new instead, or supersede the recalled fact if it changed.",
            )
    if isinstance(request.derived_from, str) and request.derived_from.startswith("gno://"):
        raise MemoryFailure(
            "MEMORY_FENCED_DERIVED",
            f"The text is derived from {request.derived_from}, a stored memory; it is not new "
            "evidence. Supersede that fact instead if it changed.",
        )


def _check_predecessor(
    row: tables.FactRow | None, request: RememberRequest, checked: _Checked
) -> tables.FactRow:
    """The supersede's predecessor, `row` as found for its uri (None: no fact has it), if it
    may be superseded; the successor takes its collection and, when none were given, its
    scopes."""
    if row is None:
        raise MemoryFailure(
            "MEMORY_PREDECESSOR_NOT_FOUND",
            f"No fact has the uri {request.predecessor}. Recall it again to get its current uri.",
        )
    if row.content_hash != request.predecessor_hash:
        raise MemoryFailure(
            "MEMORY_PREDECESSOR_HASH_MISMATCH",
            f"{row.uri} has contentHash {row.content_hash}, not {request.predecessor_hash}: it is "
            "not the fact you read. Recall it again and pass the hash it reports.",
        )
    if row.superseded_by or row.retired_at:
        state = f"superseded by {row.superseded_by}" if row.superseded_by else "retired"
        raise MemoryFailure(
            "MEMORY_SUPERSEDE_CONFLICT",
            f"{row.uri} is already {state}; someone else changed it first. Recall again and "
            "supersede the current fact instead.",
        )
    if request.collection and request.collection != row.collection:
        raise MemoryFailure(
            "MEMORY_DECISION_INVALID",
            f"The predecessor lives in collection {row.collection!r}; a successor stays in its "
            "predecessor's collection. Drop --collection.",
        )
    checked.collection = row.collection
    if not checked.scopes:
        checked.scopes = list(row.scopes)
    return row


def _candidates_result(
    engine: RecallStore, checked: _Checked, exclude: list[str]
) -> tuple[dict[str, Any], list[ScoredCandidate]]:
    status = engine.embedder_status
    visibility = Visibility(checked.scopes, [checked.collection], engine.now(), exclude)
    scored = engine.retrieval().candidates(checked.text, visibility)
    result = {
        "outcome": "candidates",
        "candidates": [
            {**public_fact(c.fact), "similarity": c.similarity, "match": c.tier} for c in scored
        ],
        "matching": matching_block(status.embedder, status.unavailable_reason),
    }
    return result, scored


def _existing(
    engine: RecallStore, request: RememberRequest, checked: _Checked, matching: dict[str, Any]
) -> dict[str, Any] | None:
    """The `existing` answer when a current fact in scope has this text, else None. Nothing is
    written on the paths that ask here, so the snapshot (fresh for the store's generation)
    answers without a query."""
    if request.keyed:
        return None
    found = engine.retrieval().exact_duplicate(
        checked.content_hash, Visibility(checked.scopes, [checked.collection], engine.now())
    )
    if found is None:
        return None
    return ensure_valid(
        "remember", {"outcome": "existing", "record": public_fact(found), "matching": matching}
    )


def propose(engine: RecallStore, request: RememberRequest) -> dict[str, Any]:
    """A remember with decision propose, which writes nothing: what `remember` answers for
    it, from reads alone, so a cold CLI call's sqlite3 store serves it as MemoryEngine does."""
    checked, _ = _validate(engine, request)
    if checked.decision != "propose":
        raise MemoryFailure(
            "MEMORY_INTERNAL", f"propose() was handed decision {checked.decision!r}."
        )
    _fence(engine, request, checked)
    status = engine.embedder_status
    matching = matching_block(status.embedder, status.unavailable_reason)
    existing = _existing(engine, request, checked, matching)
    if existing is not None:
        return existing
    return ensure_valid("remember", _candidates_result(engine, checked, [])[0])


def remember(
    engine: MemoryEngine,
    request: RememberRequest,
    *,
    hold_writes: bool = False,
    origin: str = "cli",
    locked: bool = False,
) -> dict[str, Any]:
    """One remember call. `hold_writes` (a propose-only surface) turns an add or supersede
    into a pending proposal for a person and answers `candidates`. `locked`: the caller
    already holds engine.write_lock() (the keyed API checks its key under the same hold)."""
    checked, _ = _validate(engine, request)
    _fence(engine, request, checked)
    status = engine.embedder_status
    matching = matching_block(status.embedder, status.unavailable_reason)
    if checked.decision == "propose" or hold_writes:
        predecessor = None
        if checked.decision == "supersede":
            from engine.storage.reads.records import get_fact

            assert request.predecessor is not None
            with engine.session(expire_on_commit=False) as session:
                found = get_fact(session, ref=request.predecessor)
                predecessor = _check_predecessor(found, request, checked)
        existing = _existing(engine, request, checked, matching)
        if existing is not None:
            return existing
        exclude = [predecessor.record_id] if predecessor else []
        result, _ = _candidates_result(engine, checked, exclude)
        if checked.decision != "propose":
            from engine.storage.proposals import queue_proposal

            queue_proposal(
                engine,
                request,
                checked.text,
                checked.scopes,
                checked.collection,
                checked.decision,
                result,
                origin=origin,
            )
        return ensure_valid("remember", result)
    with nullcontext() if locked else engine.write_lock():
        return _write(engine, request, checked, matching)


def _write(
    engine: MemoryEngine, request: RememberRequest, checked: _Checked, matching: dict[str, Any]
) -> dict[str, Any]:
    from engine.storage.reads.records import (
        allocate_docid,
        current_duplicate,
        get_fact,
        values_from_file,
    )

    now = engine.now()
    # Inside a group commit this is the group's session: the exact check and the docid see
    # the rows of the group's earlier writes, not yet committed.
    batch = engine.current_batch()
    statements = batch.statements if batch is not None else None  # SQLite's driver, in a group
    with engine.write_session() as session:
        predecessor = None
        if checked.decision == "supersede":
            assert request.predecessor is not None
            found = get_fact(session, ref=request.predecessor)
            predecessor = _check_predecessor(found, request, checked)
        existing = (
            None
            if request.keyed
            else current_duplicate(
                session,
                collection=checked.collection,
                content_hash=checked.content_hash,
                scopes=checked.scopes,
                now=now,
                statements=statements,
            )
        )
        if existing is not None:
            return ensure_valid(
                "remember",
                {"outcome": "existing", "record": public_fact(existing), "matching": matching},
            )
        created_at = iso_utc(now)
        record_id = engine.new_record_id()
        docid = allocate_docid(session, record_id=record_id, statements=statements)
    day = created_at[:10]
    uri = fact_uri(checked.collection, day, record_id)
    rel_path = f"facts/{day}/{record_id}.md"
    fact_file = FactFile(
        record_id=record_id,
        scopes=checked.scopes,
        caller=checked.caller,
        session=checked.session,
        created_at=created_at,
        content_hash=checked.content_hash,
        text=checked.text,
        source=checked.source,
        supersedes=[predecessor.uri] if predecessor else [],
        workbench={"docid": docid, **curation_defaults(request.created_by), **request.workbench},
    )
    # The sink writes the file (embedded mode) or nothing (server mode: the row is the fact).
    sink = engine.fact_sink
    path = sink.write_new(engine, fact_file, collection=checked.collection, rel_path=rel_path)
    row = values_from_file(
        fact_file, collection=checked.collection, uri=uri, rel_path=rel_path, docid=docid
    )
    sync: dict[str, Any] = {"status": "completed"}
    try:
        engine.index_new_fact(row, predecessor)
    except MemoryFailure as failure:
        if failure.code in _LOST_RACE:
            sink.take_back(engine, record_id, path)  # another writer got there first
            raise
        sync = sink.index_failed(failure.message, failure)
    except Exception as exc:  # noqa: BLE001 - in embedded mode the file stands, indexed later
        sync = sink.index_failed(f"{type(exc).__name__}: {exc}.")
    else:
        engine.row_written(record_id, sync)
    result = {
        "outcome": "superseded" if predecessor else "added",
        "record": public_fact(row),
        # The seed requires absPath; in server mode no file exists, and the fact document's
        # address is its uri (an MCP resource, the mirror `export --format gno` writes).
        "absPath": engine.absolute_path(path) if path is not None else uri,
        "sync": sync,
        "matching": matching,
    }
    return ensure_valid("remember", result)
