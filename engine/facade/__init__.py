"""The one typed entry point every surface (CLI, MCP server, workbench) uses.

`open_service(...)` gives a `MemoryService`; its verbs take the request dataclasses below and
return the seed results or the dataclasses below. gno_tui/ and screens/ import from here and
from nowhere else in the engine (tests/test_architecture.py checks it), so what a surface may
rely on is exactly this module's `__all__`."""

from engine.contract.errors import MemoryFailure, exit_code_for
from engine.contract.normalize import (
    POLICIES,
    POLICY_STRICTNESS,
    check_json_depth,
    collapse_text,
    counted_record_ids,
    estimate_tokens,
    iso_utc,
    normalize_scopes,
    parse_iso,
)
from engine.contract.validation import load_schema, schema_errors
from engine.curation.calibration import ThresholdCheck
from engine.curation.chain_edits import ChainEdit
from engine.curation.labels import LABELS, LabelSummary
from engine.curation.merge import merged_text
from engine.curation.review import Decision
from engine.curation.review_queue import ReviewQueue
from engine.curation.undo import Redone, Undone
from engine.facade.curation import Curation, CurationAction, DuplicateVerdict
from engine.facade.factory import resolve_home
from engine.facade.facts import FactQuery
from engine.facade.interop import ImportRequest
from engine.facade.service import ExplainedRecall, MemoryService, open_service
from engine.interop.transfer import EXPORT_FORMATS, ImportReport
from engine.keyed.cursor import dumps as keyed_json
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
from engine.retrieval.seam import DuplicatePair
from engine.storage.tables import CollectionRow as CollectionRecord
from engine.storage.tables import FactRow as FactRecord

__all__ = [
    "ALIGNMENT_WEIGHT",
    "EXPORT_FORMATS",
    "FACT_TEMPLATE",
    "FACT_URI",
    "KEYED_HELD_SCHEMA",
    "LABELS",
    "MAX_FACTS_LIMIT",
    "MAX_TOKENS_LIMIT",
    "POLICIES",
    "POLICY_STRICTNESS",
    "PROPOSALS_URI",
    "SEMANTIC_WEIGHT",
    "STATUSES",
    "UINT64_MAX",
    "WHY_NOT_REASONS",
    "ChainEdit",
    "CollectionRecord",
    "Curation",
    "CurationAction",
    "Decision",
    "DuplicatePair",
    "DuplicateVerdict",
    "EmbedderStatus",
    "ExplainedRecall",
    "FactPage",
    "FactQuery",
    "FactRecord",
    "FenceExposure",
    "FenceNearMiss",
    "ImportReport",
    "ImportRequest",
    "LabelSummary",
    "LeftOut",
    "LibraryFilter",
    "LibraryPage",
    "MemoryFailure",
    "MemoryService",
    "NoMatch",
    "RecallRequest",
    "ReceiptCheck",
    "Redone",
    "RememberRequest",
    "ReviewQueue",
    "ScoreParts",
    "ThresholdCheck",
    "Undone",
    "WhyNot",
    "check_json_depth",
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
    "open_service",
    "parse_iso",
    "parse_keyed_request",
    "resolve_home",
    "schema_errors",
    "status_at",
    "status_of",
]
