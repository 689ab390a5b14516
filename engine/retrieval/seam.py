"""The retrieval seam: what the engine asks of an index of current facts, whichever backend
holds it. Recall ranks through it, remember and import ask it for dedup candidates and exact
duplicates, the Duplicates tab for near-duplicate pairs, and why-not re-ranks through it.

One implementation today: engine/retrieval/in_memory.py (a per-process snapshot of the current
facts). A backend declares what it can do in `capabilities`, as harlequin's adapters do, so a
caller can say why a leg is missing instead of guessing. To add one, implement
`RetrievalIndex` and return it from MemoryEngine.retrieval()."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

from engine.retrieval.matching import ScoredCandidate
from engine.retrieval.ranking import ScoreParts
from engine.retrieval.snapshot import IndexedFact

# Capabilities a backend may declare.
LEXICAL = "lexical"  # word matches (BM25 or full-text search)
SEMANTIC = "semantic"  # vector similarity from the embedding model
# `candidates_many(texts, visibilities, vectors)`: dedup candidates for a batch (an import)
# cheaper than one `candidates` call per text. Without it, callers loop (`candidates_for`).
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
    capabilities: frozenset[str]

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


def candidates_for(
    index: RetrievalIndex,
    texts: Sequence[str],
    visibilities: Sequence[Visibility],
    vectors: Any = None,
) -> list[list[ScoredCandidate]]:
    """Dedup candidates for many texts: in one batch where the backend can (BATCH_CANDIDATES),
    else one `candidates` call per text."""
    batch = getattr(index, "candidates_many", None)
    if BATCH_CANDIDATES in index.capabilities and batch is not None:
        found: list[list[ScoredCandidate]] = batch(texts, visibilities, vectors)
        return found
    return [index.candidates(t, v) for t, v in zip(texts, visibilities, strict=True)]
