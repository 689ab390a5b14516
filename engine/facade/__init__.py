"""The one typed entry point every surface (CLI, MCP server, workbench) uses.

`open_service(...)` gives a `MemoryService`; its verbs take the request dataclasses below and
return the seed results or the dataclasses below. gno_tui/ and screens/ import from here and
from nowhere else in the engine (tests/test_architecture.py checks it), so what a surface may
rely on is exactly this module's `__all__`.

Only the contract's errors and normalisation (the standard library beneath them) load with
this module. Every other name loads on first use (`__getattr__` below, PEP 562): a CLI recall
needs neither curation nor the keyed API nor import/export, and loading them all cost about
0.3 s of every cold call. The same names are imported under TYPE_CHECKING, so that type
checkers and readers see where each comes from; `_LAZY` must name the same places
(tests/engine/test_facade_lazy.py checks them against `__all__` and each other)."""

import importlib
from typing import TYPE_CHECKING

from engine.contract.errors import MemoryFailure, exit_code_for
from engine.contract.normalize import (
    POLICIES,
    POLICY_STRICTNESS,
    check_json_depth,
    clean_text,
    collapse_text,
    counted_record_ids,
    estimate_tokens,
    iso_utc,
    normalize_scopes,
    parse_iso,
)

if TYPE_CHECKING:
    from engine.access.tokens import Grant, TokenInfo
    from engine.access.write_requests import RequestRecord
    from engine.contract.results import (
        BackupReport,
        Candidate,
        ChainFork,
        DecideResult,
        DecisionLogEntry,
        DuplicateEvidence,
        DuplicateFile,
        EgressLineage,
        EgressPolicy,
        EgressSource,
        ExportedFact,
        JsonObject,
        JsonValue,
        KeyedHeld,
        KeyedHistoryResponse,
        KeyedHit,
        KeyedMemory,
        KeyedRecallResponse,
        KeyedRequest,
        KeyedSearchItem,
        KeyedSearchResponse,
        KeyFork,
        Matching,
        Ob1Artifact,
        Ob1Freshness,
        Ob1Memory,
        Ob1Provenance,
        Ob1RecallResponse,
        Ob1Scope,
        Ob1Source,
        Ob1UsePolicy,
        Proposal,
        PublicFact,
        ReadOnlyReason,
        RecallBudget,
        RecalledFact,
        RecallResult,
        RecallRetrieval,
        Receipt,
        ReceiptGiven,
        ReindexReport,
        RememberResult,
        RestoreCheck,
        RestoredCollection,
        RestoreReport,
        RetrievalStatus,
        StoreStatus,
        Sync,
    )
    from engine.contract.validation import load_schema, schema_errors
    from engine.curation.calibration import ThresholdCheck
    from engine.curation.chain_edits import ChainEdit
    from engine.curation.labels import LABELS, LabelSummary
    from engine.curation.merge import merged_text
    from engine.curation.review import Decision
    from engine.curation.review_queue import ReviewQueue
    from engine.curation.undo import NeedsYes, Redone, Undone
    from engine.facade.backup import backup_store, restore_store
    from engine.facade.curation import Curation, CurationAction, DuplicateVerdict
    from engine.facade.factory import resolve_home
    from engine.facade.facts import FactQuery
    from engine.facade.interop import ImportRequest
    from engine.facade.patient_open import open_service_patiently
    from engine.facade.service import (
        ExplainedRecall,
        MemoryService,
        RecallService,
        open_recall_service,
        open_service,
    )
    from engine.interop.transfer import EXPORT_FORMATS, ImportReport
    from engine.keyed.cursor import dumps as keyed_json
    from engine.keyed.heads import COLLECTION as KEYED_COLLECTION
    from engine.keyed.requests import UINT64_MAX
    from engine.keyed.requests import parse_request_json as parse_keyed_request
    from engine.keyed.service import HELD_SCHEMA as KEYED_HELD_SCHEMA
    from engine.memory.browse import (
        STATUSES,
        FactPage,
        current_at,
        is_stale,
        status_at,
        status_of,
    )
    from engine.memory.library import LibraryFilter, LibraryPage
    from engine.memory.recall import MAX_FACTS_LIMIT, MAX_TOKENS_LIMIT, RecallRequest
    from engine.memory.receipts import FenceExposure, FenceNearMiss, ReceiptCheck
    from engine.memory.remember import RememberRequest
    from engine.memory.resources import FACT_TEMPLATE, FACT_URI, PROPOSALS_URI
    from engine.memory.why_not import REASONS as WHY_NOT_REASONS
    from engine.memory.why_not import LeftOut, NoMatch, WhyNot
    from engine.retrieval.embeddings import EmbedderStatus
    from engine.retrieval.ranking import ALIGNMENT_WEIGHT, SEMANTIC_WEIGHT, ScoreParts
    from engine.retrieval.registry import REGISTRY as RETRIEVAL_BACKENDS
    from engine.retrieval.seam import DuplicatePair
    from engine.storage.reads.change_feed import ChangeFeed
    from engine.storage.schema.tables import CollectionRow as CollectionRecord
    from engine.storage.schema.tables import FactRow as FactRecord
    from engine.storage.store import DEFAULT_COLLECTION

# name -> (module, attribute): where each name loaded on first use is defined.
_LAZY: dict[str, tuple[str, str]] = {
    "ALIGNMENT_WEIGHT": ("engine.retrieval.ranking", "ALIGNMENT_WEIGHT"),
    "BackupReport": ("engine.contract.results", "BackupReport"),
    "Candidate": ("engine.contract.results", "Candidate"),
    "ChainEdit": ("engine.curation.chain_edits", "ChainEdit"),
    "ChainFork": ("engine.contract.results", "ChainFork"),
    "ChangeFeed": ("engine.storage.reads.change_feed", "ChangeFeed"),
    "CollectionRecord": ("engine.storage.schema.tables", "CollectionRow"),
    "Curation": ("engine.facade.curation", "Curation"),
    "CurationAction": ("engine.facade.curation", "CurationAction"),
    "DEFAULT_COLLECTION": ("engine.storage.store", "DEFAULT_COLLECTION"),
    "DecideResult": ("engine.contract.results", "DecideResult"),
    "Decision": ("engine.curation.review", "Decision"),
    "DecisionLogEntry": ("engine.contract.results", "DecisionLogEntry"),
    "DuplicateEvidence": ("engine.contract.results", "DuplicateEvidence"),
    "DuplicateFile": ("engine.contract.results", "DuplicateFile"),
    "DuplicatePair": ("engine.retrieval.seam", "DuplicatePair"),
    "DuplicateVerdict": ("engine.facade.curation", "DuplicateVerdict"),
    "EXPORT_FORMATS": ("engine.interop.transfer", "EXPORT_FORMATS"),
    "EgressLineage": ("engine.contract.results", "EgressLineage"),
    "EgressPolicy": ("engine.contract.results", "EgressPolicy"),
    "EgressSource": ("engine.contract.results", "EgressSource"),
    "EmbedderStatus": ("engine.retrieval.embeddings", "EmbedderStatus"),
    "ExplainedRecall": ("engine.facade.service", "ExplainedRecall"),
    "ExportedFact": ("engine.contract.results", "ExportedFact"),
    "FACT_TEMPLATE": ("engine.memory.resources", "FACT_TEMPLATE"),
    "FACT_URI": ("engine.memory.resources", "FACT_URI"),
    "FactPage": ("engine.memory.browse", "FactPage"),
    "FactQuery": ("engine.facade.facts", "FactQuery"),
    "FactRecord": ("engine.storage.schema.tables", "FactRow"),
    "FenceExposure": ("engine.memory.receipts", "FenceExposure"),
    "FenceNearMiss": ("engine.memory.receipts", "FenceNearMiss"),
    "Grant": ("engine.access.tokens", "Grant"),
    "ImportReport": ("engine.interop.transfer", "ImportReport"),
    "ImportRequest": ("engine.facade.interop", "ImportRequest"),
    "JsonObject": ("engine.contract.results", "JsonObject"),
    "JsonValue": ("engine.contract.results", "JsonValue"),
    "KEYED_COLLECTION": ("engine.keyed.heads", "COLLECTION"),
    "KEYED_HELD_SCHEMA": ("engine.keyed.service", "HELD_SCHEMA"),
    "KeyFork": ("engine.contract.results", "KeyFork"),
    "KeyedHeld": ("engine.contract.results", "KeyedHeld"),
    "KeyedHistoryResponse": ("engine.contract.results", "KeyedHistoryResponse"),
    "KeyedHit": ("engine.contract.results", "KeyedHit"),
    "KeyedMemory": ("engine.contract.results", "KeyedMemory"),
    "KeyedRecallResponse": ("engine.contract.results", "KeyedRecallResponse"),
    "KeyedRequest": ("engine.contract.results", "KeyedRequest"),
    "KeyedSearchItem": ("engine.contract.results", "KeyedSearchItem"),
    "KeyedSearchResponse": ("engine.contract.results", "KeyedSearchResponse"),
    "LABELS": ("engine.curation.labels", "LABELS"),
    "LabelSummary": ("engine.curation.labels", "LabelSummary"),
    "LeftOut": ("engine.memory.why_not", "LeftOut"),
    "LibraryFilter": ("engine.memory.library", "LibraryFilter"),
    "LibraryPage": ("engine.memory.library", "LibraryPage"),
    "MAX_FACTS_LIMIT": ("engine.memory.recall", "MAX_FACTS_LIMIT"),
    "MAX_TOKENS_LIMIT": ("engine.memory.recall", "MAX_TOKENS_LIMIT"),
    "Matching": ("engine.contract.results", "Matching"),
    "MemoryService": ("engine.facade.service", "MemoryService"),
    "NeedsYes": ("engine.curation.undo", "NeedsYes"),
    "NoMatch": ("engine.memory.why_not", "NoMatch"),
    "Ob1Artifact": ("engine.contract.results", "Ob1Artifact"),
    "Ob1Freshness": ("engine.contract.results", "Ob1Freshness"),
    "Ob1Memory": ("engine.contract.results", "Ob1Memory"),
    "Ob1Provenance": ("engine.contract.results", "Ob1Provenance"),
    "Ob1RecallResponse": ("engine.contract.results", "Ob1RecallResponse"),
    "Ob1Scope": ("engine.contract.results", "Ob1Scope"),
    "Ob1Source": ("engine.contract.results", "Ob1Source"),
    "Ob1UsePolicy": ("engine.contract.results", "Ob1UsePolicy"),
    "PROPOSALS_URI": ("engine.memory.resources", "PROPOSALS_URI"),
    "Proposal": ("engine.contract.results", "Proposal"),
    "PublicFact": ("engine.contract.results", "PublicFact"),
    "ReadOnlyReason": ("engine.contract.results", "ReadOnlyReason"),
    "RecallBudget": ("engine.contract.results", "RecallBudget"),
    "RecallRequest": ("engine.memory.recall", "RecallRequest"),
    "RETRIEVAL_BACKENDS": ("engine.retrieval.registry", "REGISTRY"),
    "RecallResult": ("engine.contract.results", "RecallResult"),
    "RecallRetrieval": ("engine.contract.results", "RecallRetrieval"),
    "RecallService": ("engine.facade.service", "RecallService"),
    "RecalledFact": ("engine.contract.results", "RecalledFact"),
    "Receipt": ("engine.contract.results", "Receipt"),
    "ReceiptCheck": ("engine.memory.receipts", "ReceiptCheck"),
    "ReceiptGiven": ("engine.contract.results", "ReceiptGiven"),
    "Redone": ("engine.curation.undo", "Redone"),
    "ReindexReport": ("engine.contract.results", "ReindexReport"),
    "RememberRequest": ("engine.memory.remember", "RememberRequest"),
    "RememberResult": ("engine.contract.results", "RememberResult"),
    "RequestRecord": ("engine.access.write_requests", "RequestRecord"),
    "RestoreCheck": ("engine.contract.results", "RestoreCheck"),
    "RestoreReport": ("engine.contract.results", "RestoreReport"),
    "RestoredCollection": ("engine.contract.results", "RestoredCollection"),
    "RetrievalStatus": ("engine.contract.results", "RetrievalStatus"),
    "ReviewQueue": ("engine.curation.review_queue", "ReviewQueue"),
    "SEMANTIC_WEIGHT": ("engine.retrieval.ranking", "SEMANTIC_WEIGHT"),
    "STATUSES": ("engine.memory.browse", "STATUSES"),
    "ScoreParts": ("engine.retrieval.ranking", "ScoreParts"),
    "StoreStatus": ("engine.contract.results", "StoreStatus"),
    "Sync": ("engine.contract.results", "Sync"),
    "ThresholdCheck": ("engine.curation.calibration", "ThresholdCheck"),
    "TokenInfo": ("engine.access.tokens", "TokenInfo"),
    "UINT64_MAX": ("engine.keyed.requests", "UINT64_MAX"),
    "Undone": ("engine.curation.undo", "Undone"),
    "WHY_NOT_REASONS": ("engine.memory.why_not", "REASONS"),
    "WhyNot": ("engine.memory.why_not", "WhyNot"),
    "backup_store": ("engine.facade.backup", "backup_store"),
    "current_at": ("engine.memory.browse", "current_at"),
    "is_stale": ("engine.memory.browse", "is_stale"),
    "keyed_json": ("engine.keyed.cursor", "dumps"),
    "load_schema": ("engine.contract.validation", "load_schema"),
    "merged_text": ("engine.curation.merge", "merged_text"),
    "open_recall_service": ("engine.facade.service", "open_recall_service"),
    "open_service": ("engine.facade.service", "open_service"),
    "open_service_patiently": ("engine.facade.patient_open", "open_service_patiently"),
    "parse_keyed_request": ("engine.keyed.requests", "parse_request_json"),
    "resolve_home": ("engine.facade.factory", "resolve_home"),
    "restore_store": ("engine.facade.backup", "restore_store"),
    "schema_errors": ("engine.contract.validation", "schema_errors"),
    "status_at": ("engine.memory.browse", "status_at"),
    "status_of": ("engine.memory.browse", "status_of"),
}

__all__ = [
    "ALIGNMENT_WEIGHT",
    "DEFAULT_COLLECTION",
    "EXPORT_FORMATS",
    "FACT_TEMPLATE",
    "FACT_URI",
    "KEYED_COLLECTION",
    "KEYED_HELD_SCHEMA",
    "LABELS",
    "MAX_FACTS_LIMIT",
    "MAX_TOKENS_LIMIT",
    "POLICIES",
    "POLICY_STRICTNESS",
    "PROPOSALS_URI",
    "RETRIEVAL_BACKENDS",
    "SEMANTIC_WEIGHT",
    "STATUSES",
    "UINT64_MAX",
    "WHY_NOT_REASONS",
    "BackupReport",
    "Candidate",
    "ChainEdit",
    "ChainFork",
    "ChangeFeed",
    "CollectionRecord",
    "Curation",
    "CurationAction",
    "DecideResult",
    "Decision",
    "DecisionLogEntry",
    "DuplicateEvidence",
    "DuplicateFile",
    "DuplicatePair",
    "DuplicateVerdict",
    "EgressLineage",
    "EgressPolicy",
    "EgressSource",
    "EmbedderStatus",
    "ExplainedRecall",
    "ExportedFact",
    "FactPage",
    "FactQuery",
    "FactRecord",
    "FenceExposure",
    "FenceNearMiss",
    "Grant",
    "ImportReport",
    "ImportRequest",
    "JsonObject",
    "JsonValue",
    "KeyFork",
    "KeyedHeld",
    "KeyedHistoryResponse",
    "KeyedHit",
    "KeyedMemory",
    "KeyedRecallResponse",
    "KeyedRequest",
    "KeyedSearchItem",
    "KeyedSearchResponse",
    "LabelSummary",
    "LeftOut",
    "LibraryFilter",
    "LibraryPage",
    "Matching",
    "MemoryFailure",
    "MemoryService",
    "NeedsYes",
    "NoMatch",
    "Ob1Artifact",
    "Ob1Freshness",
    "Ob1Memory",
    "Ob1Provenance",
    "Ob1RecallResponse",
    "Ob1Scope",
    "Ob1Source",
    "Ob1UsePolicy",
    "Proposal",
    "PublicFact",
    "ReadOnlyReason",
    "RecallBudget",
    "RecallRequest",
    "RecallResult",
    "RecallRetrieval",
    "RecallService",
    "RecalledFact",
    "Receipt",
    "ReceiptCheck",
    "ReceiptGiven",
    "Redone",
    "ReindexReport",
    "RememberRequest",
    "RememberResult",
    "RequestRecord",
    "RestoreCheck",
    "RestoreReport",
    "RestoredCollection",
    "RetrievalStatus",
    "ReviewQueue",
    "ScoreParts",
    "StoreStatus",
    "Sync",
    "ThresholdCheck",
    "TokenInfo",
    "Undone",
    "WhyNot",
    "backup_store",
    "check_json_depth",
    "clean_text",
    "collapse_text",
    "counted_record_ids",
    "current_at",
    "estimate_tokens",
    "exit_code_for",
    "is_stale",
    "iso_utc",
    "keyed_json",
    "load_schema",
    "merged_text",
    "normalize_scopes",
    "open_recall_service",
    "open_service",
    "open_service_patiently",
    "parse_iso",
    "parse_keyed_request",
    "resolve_home",
    "restore_store",
    "schema_errors",
    "status_at",
    "status_of",
]


def __getattr__(name: str) -> object:
    try:
        module, attribute = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    value = getattr(importlib.import_module(module), attribute)
    globals()[name] = value  # the next lookup is an ordinary global
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
