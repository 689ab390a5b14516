"""The retrieval seam: what the engine asks of an index of current facts, whichever backend
holds it. Recall ranks through it, remember and import ask it for dedup candidates and exact
duplicates, the Duplicates tab for near-duplicate pairs, and why-not re-ranks through it.

Two implementations: engine/retrieval/in_memory.py (a per-process snapshot of the current
facts) and engine/retrieval/postgres.py (inside PostgreSQL with pgvector). A backend declares
its name and what it can do (`capabilities`) in its entry of engine/retrieval/registry.py, as
harlequin's adapters do, and its index carries both: a caller asks the declaration, never
probes for a method, and can say why a leg is missing instead of guessing. To add one,
implement `RetrievalIndex` and add its entry to the registry."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, cast

from engine.retrieval.results import IndexedFact, ScoredCandidate, ScoreParts

# Chooses the backend (engine/retrieval/registry.py reads it).
RETRIEVAL_ENV = "GNO_TUI_RETRIEVAL"

# Capabilities a backend may declare.
LEXICAL = "lexical"  # word matches (BM25 or full-text search)
SEMANTIC = "semantic"  # vector similarity from the embedding model
# `candidates_many` (BatchCandidates): dedup candidates for a batch (an import) cheaper than
# one `candidates` call per text. Without it, callers loop (`candidates_for`).
BATCH_CANDIDATES = "batch-candidates"


@dataclass(frozen=True)
class Visibility:
    """Which current facts a question may see: sharing one of `scopes` (None: any scope), in
    one of `collections` (None: any), not expired at `now`, and none of `exclude` (record ids).
    Applied inside the index's query, never as a filter over a truncated result."""

    scopes: Sequence[str] | None
    collections: Sequence[str] | None
    now: datetime
    exclude: Sequence[str] = ()


@dataclass(frozen=True)
class Match:
    fact: IndexedFact
    score: float
    parts: ScoreParts


@dataclass(frozen=True)
class Ranking:
    """Visible matches of a query, best first (at most MATCH_WINDOW), and the mode that ranked
    them: `hybrid` (both legs) or `lexical`."""

    matches: Sequence[Match]
    mode: str


@dataclass(frozen=True)
class DuplicatePair:
    left: IndexedFact
    right: IndexedFact
    similarity: float
    tier: str
    method: str  # semantic | lexical


class PairsFound(list[DuplicatePair]):
    """Near-duplicate pairs, best first, and what they were found among: `total` pairs in all
    (more than listed when a limit cut the list), among `compared` of the `visible` facts
    (fewer when only the newest were compared)."""

    def __init__(
        self, pairs: Iterable[DuplicatePair] = (), *, total: int, compared: int, visible: int
    ) -> None:
        super().__init__(pairs)
        self.total, self.compared, self.visible = total, compared, visible


class RetrievalIndex(Protocol):
    # Its registry entry's name (`gno-tui status`), and the entry's capabilities less any leg
    # it lacks here (no model: no SEMANTIC).
    name: str
    capabilities: frozenset[str]

    def catch_up(self) -> None:
        """Reflect every write so far now rather than at the next query (reindex's rebuild).
        Writes reach a backend through the store itself, from any process: the in-memory
        snapshot follows the generation, PostgreSQL's tables the `fact_changes` log."""
        ...

    def rank(self, query: str, visibility: Visibility) -> Ranking:
        """Recall's ranking, each match with the parts of its score."""
        ...

    def candidates(self, text: str, visibility: Visibility) -> list[ScoredCandidate]:
        """Facts that say nearly what `text` says, scored and tiered, best first (remember's
        propose, import's dedup)."""
        ...

    def exact_duplicate(self, content_hash: str, visibility: Visibility) -> IndexedFact | None:
        """The oldest visible current fact with this content hash."""
        ...

    def duplicate_pairs(
        self,
        visibility: Visibility,
        *,
        limit: int | None = None,
        skip: Collection[frozenset[str]] = (),
        newest: int | None = None,
    ) -> PairsFound:
        """Near-duplicate pairs among the visible facts, within one collection, best first:
        at most `limit`, none of `skip` (record-id pairs a person kept both of), among the
        `newest` visible facts (None: all of them)."""
        ...


class BatchCandidates(RetrievalIndex, Protocol):
    """What an index declaring BATCH_CANDIDATES also answers."""

    def candidates_many(
        self,
        texts: Sequence[str],
        visibilities: Sequence[Visibility],
        vectors: Any,
        *,
        least: str = "weak",
    ) -> list[list[ScoredCandidate]]:
        """`candidates` for each text (`vectors`: the texts' own, one row each, or None).
        `least` "likely": weak-tier candidates may be left out (the search can end sooner)."""
        ...


def candidates_for(
    index: RetrievalIndex,
    texts: Sequence[str],
    visibilities: Sequence[Visibility],
    vectors: Any = None,
    *,
    least: str = "weak",
) -> list[list[ScoredCandidate]]:
    """Dedup candidates for many texts: in one batch where the backend can (BATCH_CANDIDATES),
    else one `candidates` call per text. `least` "likely": a backend may leave out the
    weak-tier candidates, which an add-or-hold decision does not need."""
    if BATCH_CANDIDATES in index.capabilities:  # declared, so it has the method
        batch = cast(BatchCandidates, index)
        return batch.candidates_many(texts, visibilities, vectors, least=least)
    return [index.candidates(t, v) for t, v in zip(texts, visibilities, strict=True)]
