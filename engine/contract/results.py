"""The JSON documents the façade's verbs return, as TypedDicts: what a reader (and mypy) knows
of each result. Each follows its JSON Schema key for key (schemas/, seeds 000-003 among them:
`additionalProperties: false`, so a TypedDict here names every key the document may have;
`NotRequired` where the schema leaves one out of `required`). At run time
they are plain dicts: the engine builds them and validates them against the schemas
(engine/contract/validation.py ensure_valid), the types only describe them.

Documents that are open-ended by design (a keyed memory's app-defined `metadata`, a fact's
`workbench` fields, a logged decision's `detail`) are `JsonObject`: any JSON object. Reports
without a schema (status, reindex, backup, restore) follow the code that builds them."""

from typing import Literal, NotRequired, TypeAlias, TypedDict, final

# Any JSON value, as json.loads gives it; a JSON object is a dict of them.
JsonValue: TypeAlias = "str | int | float | bool | list[JsonValue] | dict[str, JsonValue] | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"

EgressPolicy: TypeAlias = Literal["local_only", "lan", "remote"]

# -- memory-remember@1.0 (seed 000, schemas/gno-memory-remember-result.schema.json) ------------


class PublicFact(TypedDict):
    """The seed's `fact`: a stored fact as every surface shows it
    (engine/storage/reads/fact_shape.py public_fact)."""

    uri: str
    docid: str
    recordId: str
    text: str
    scopes: list[str]
    caller: str
    session: str
    createdAt: str
    contentHash: str
    source: NotRequired[str]  # only when one was given
    supersedes: list[str]


class Candidate(PublicFact):
    """A current fact that says nearly what a remember's text says."""

    similarity: float
    match: Literal["exact", "likely", "weak"]


class Matching(TypedDict):
    """The dedup matching a remember used (engine/retrieval/matching.py matching_block)."""

    mode: Literal["semantic", "lexical"]
    semanticUnavailable: NotRequired[str]  # why, when lexical stood in for semantic
    threshold: float


class Sync(TypedDict):
    """Whether the index took the written fact."""

    status: Literal["completed", "failed"]
    error: NotRequired[str]


class RememberResult(TypedDict):
    """The schema is a oneOf of three branches, which `outcome` tells apart:

    - `existing` (a current fact in scope already says this; nothing written): record, matching;
    - `candidates` (a propose or a held write; nothing written): candidates, matching;
    - `added` / `superseded` (a fact written): record, absPath, sync, matching.

    One TypedDict with the branch keys NotRequired rather than a union of three: every surface
    reads `record` after a write it asked for, which a union would make each narrow first."""

    outcome: Literal["existing", "candidates", "added", "superseded"]
    record: NotRequired[PublicFact]  # existing, added, superseded
    candidates: NotRequired[list[Candidate]]  # candidates
    absPath: NotRequired[str]  # added, superseded: the fact file written (server: its uri)
    sync: NotRequired[Sync]  # added, superseded
    matching: Matching


# -- memory-recall@1.0 (seed 001, schemas/gno-memory-recall-result.schema.json) ----------------


class EgressSource(TypedDict):
    collection: str
    policy: EgressPolicy
    source: Literal["explicit", "config_default", "legacy_default"]


class EgressLineage(TypedDict):
    """The strictest policy of the collections behind some facts, and each one's."""

    effectivePolicy: EgressPolicy
    digest: str
    sources: list[EgressSource]


class RecalledFact(PublicFact):
    score: float
    spanHash: str
    egressLineage: EgressLineage


class Receipt(TypedDict):
    """A recall's receipt: content-free, bound to caller and session."""

    caller: str
    session: str
    issuedAt: str
    memoryIds: list[str]
    spanHashes: list[str]
    digest: str


class RecallBudget(TypedDict):
    maxFacts: int
    maxTokens: int
    usedTokens: int
    omitted: int


class RecallRetrieval(TypedDict):
    mode: Literal["hybrid", "lexical"]
    semanticUnavailable: NotRequired[str]


class RecallResult(TypedDict):
    facts: list[RecalledFact]
    receipt: Receipt
    budget: RecallBudget
    retrieval: RecallRetrieval
    egressLineage: NotRequired[EgressLineage]  # absent when no fact was returned
    hint: NotRequired[str]  # present only when no fact was returned


# A receipt as a surface was given it, to verify or fence against: a recall result, its
# receipt, or a JSON object a person passed (checked: MEMORY_RECEIPT_INVALID if it is neither).
ReceiptGiven: TypeAlias = "Receipt | RecallResult | JsonObject"

# -- OB1 recall response (seed 002, schemas/ob1-agent-memory-recall-response.schema.json) -----


class Ob1Source(TypedDict, total=False):
    kind: str
    uri: str | None
    title: str | None
    timestamp: str | None


class Ob1Provenance(TypedDict):
    status: Literal["observed", "inferred", "user_confirmed", "imported", "generated"]
    confidence: float
    created_by: Literal["user", "agent", "system", "import"]
    model: NotRequired[str | None]
    runtime: NotRequired[str | None]


class Ob1Scope(TypedDict):
    workspace_id: str
    project_id: NotRequired[str | None]
    channel_id: NotRequired[str | None]
    visibility: Literal["personal", "channel", "project", "workspace", "organization"]


class Ob1UsePolicy(TypedDict):
    can_use_as_instruction: bool
    can_use_as_evidence: bool
    requires_user_confirmation: bool


class Ob1Freshness(TypedDict):
    created_at: str
    last_confirmed_at: NotRequired[str | None]
    stale_after: NotRequired[str | None]


class Ob1Artifact(TypedDict):
    kind: str
    uri: str


class Ob1Memory(TypedDict):
    memory_id: str
    summary: str
    content: str
    source: Ob1Source
    provenance: Ob1Provenance
    scope: Ob1Scope
    use_policy: Ob1UsePolicy
    freshness: Ob1Freshness
    related_artifacts: list[Ob1Artifact]


class Ob1RecallResponse(TypedDict):
    schema_version: Literal["openbrain.openclaw.recall_response.v1"]
    request_id: str
    memories: list[Ob1Memory]


# -- the keyed API (seed 003 requests; schemas/keyed-memory-*.schema.json) ---------------------

# A keyed request as a surface parsed it from JSON (seed 003's RememberRequest, MemoryQuery or
# SearchQuery). Any parsed value is accepted: engine/keyed/requests.py validate_request checks
# it against the seed and refuses anything else (not an object, a wrong field) with
# MEMORY_REQUEST_INVALID.
KeyedRequest: TypeAlias = JsonValue


class KeyedMemory(TypedDict):
    content: str
    topic: str | None
    tags: list[str]
    metadata: JsonObject  # app-defined, stored and returned as given
    occurred_at_ms: int


class KeyedHit(TypedDict):
    """One revision of a key (instantKV's MemoryHit)."""

    key: str
    revision: int
    written_at_ms: int
    expires_at_ms: int | None
    memory: KeyedMemory


class KeyedSearchItem(KeyedHit):
    score: float


class KeyedRecallResponse(TypedDict):
    items: list[KeyedHit]
    next_cursor: str | None
    scanned: int
    scanned_bytes: int


class KeyedSearchResponse(TypedDict):
    items: list[KeyedSearchItem]
    next_cursor: str | None
    truncated: bool


class KeyedHistoryResponse(TypedDict):
    key: str
    items: list[KeyedHit]


class KeyedHeld(TypedDict):
    """A keyed remember held for a person's review (schemas/keyed-memory-held.schema.json)."""

    status: Literal["held"]
    proposal_id: int
    key: str
    if_revision: int | None
    message: str


# -- the review queue and the decision log ------------------------------------------------------


class Proposal(TypedDict):
    """A write held for a person (engine/storage/proposals.py public_proposal). The decision
    keys are there once it is decided or being decided (None while deciding)."""

    id: int
    state: str
    origin: str
    createdAt: str
    text: str
    scopes: list[str]
    collection: str
    caller: str
    session: str
    source: str | None
    decision: str
    predecessor: str | None
    predecessorHash: str | None
    candidates: list[JsonObject]  # the candidates its remember answered, as stored
    matching: JsonObject  # its remember's matching; a held keyed write's request
    decidedAt: NotRequired[str | None]
    decidedBy: NotRequired[str | None]
    resolution: NotRequired[str | None]


# A person's decision on a proposal: the remember result it wrote, or (a rejection) the
# decided proposal.
DecideResult: TypeAlias = RememberResult | Proposal


class DecisionLogEntry(TypedDict):
    """One row of the curation log (engine/curation/review.py decision_log)."""

    id: int
    at: str | None
    actor: str
    action: str
    target: str
    detail: JsonObject


class DuplicateEvidence(TypedDict):
    """What a verdict on a near-duplicate pair logs beside it."""

    actor: str
    similarity: float | None
    method: str | None


# -- the store ----------------------------------------------------------------------------------


class RetrievalStatus(TypedDict):
    backend: str
    capabilities: list[str]


class StoreStatus(TypedDict):
    """`gno-tui status`: where the store lives and how it ranks (MemoryService.status)."""

    home: str
    database: str
    mode: Literal["embedded", "server"]
    readOnly: bool
    readOnlyReason: NotRequired[str]  # only when readOnly
    notes: list[str]
    retrieval: RetrievalStatus
    matching: Matching


@final  # final: `"predecessor" in fork` tells a ChainFork from a KeyFork
class ChainFork(TypedDict):
    """Two files superseding one fact: one is kept."""

    predecessor: str
    kept: str
    notKept: list[str]
    reason: str


@final
class KeyFork(TypedDict):
    """Two files holding one revision of one key: one is kept."""

    key: str
    revision: int
    kept: str
    notKept: list[str]
    reason: str


class DuplicateFile(TypedDict):
    """One record id in more than one file: one is indexed."""

    recordId: str
    kept: str
    ignored: list[str]


class ReindexReport(TypedDict):
    """What `reindex` found and did (engine/storage/embedded/reindex.py;
    server_mode.rebuild_derived)."""

    files: int
    indexed: int
    added: int
    changed: int
    removed: int
    problems: list[str]
    forks: list[ChainFork | KeyFork]
    duplicates: list[DuplicateFile]
    notes: list[str]


class ExportedFact(PublicFact):
    """One line of `export --format jsonl`."""

    collection: str
    workbench: JsonObject
    supersededBy: NotRequired[str]


class BackupSummary(TypedDict):
    """A backup as its manifest counts it: both reports begin with this."""

    backup: str
    mode: Literal["embedded", "server"]
    takenAt: str
    schema: str
    facts: int
    receipts: int
    proposals: int
    decisions: int
    currentFacts: int
    factFiles: NotRequired[int]  # embedded


class BackupReport(BackupSummary):
    """What `backup` wrote (engine/storage/embedded/backup.py, backup_rows.py): where, when, which
    store, how many rows of each kind, the files and bytes written, and how long writers
    waited (none in the server mode, a snapshot)."""

    collections: int
    files: int
    bytes: int
    writersPausedMs: float
    lockWaitMs: NotRequired[float]  # embedded
    copiedUnderLock: NotRequired[int]  # embedded: fact files copied while writers waited


class RestoredCollection(TypedDict):
    name: str
    root: NotRequired[str]  # embedded: where its files are now


class RestoreCheck(TypedDict):
    """The check after a restore, in reindex's words (a key reindex left out is None)."""

    added: int | None
    changed: int | None
    removed: int | None
    problems: list[str] | None
    forks: list[ChainFork | KeyFork] | None
    duplicates: list[DuplicateFile] | None
    notes: list[str] | None


class RestoreReport(BackupSummary):
    """What `restore` did: the backup's summary (its manifest's counts), where it went, and
    what the check afterwards found."""

    restored: str  # the home (embedded) or the database, shown without its password
    collections: list[RestoredCollection]
    rows: NotRequired[dict[str, int]]  # server: rows restored per table
    check: RestoreCheck


class ReadOnlyReason(TypedDict, total=False):
    """StoreStatus's `readOnlyReason`, alone: spread into it when the home is read-only."""

    readOnlyReason: str
