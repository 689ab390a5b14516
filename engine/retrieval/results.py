"""What the retrieval seam (engine/retrieval/seam.py) answers with, whichever backend
answers: a current fact as an index holds it (`IndexedFact`), the parts of a match's score
(`ScoreParts`) and a scored dedup candidate (`ScoredCandidate`). A leaf module: no backend,
no numpy, so the seam and its registry say what they return without loading a backend.
The in-memory backend keeps its facts as columns (fact_columns.py) and makes these when asked;
the PostgreSQL backend makes them from rows."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any


@dataclass(frozen=True, slots=True)
class IndexedFact:
    record_id: str
    docid: str
    uri: str
    collection: str
    text: str
    content_hash: str
    scopes: tuple[str, ...]
    caller: str
    session: str
    created_at: datetime
    source: str | None
    supersedes: tuple[str, ...]
    expires_at: datetime | None

    @classmethod
    def from_row(cls, row: Any) -> IndexedFact:
        """From a FactRow, or a result row of its SNAPSHOT_COLUMNS (same attribute names)."""
        assert row.created_at is not None
        return cls(
            record_id=row.record_id,
            docid=row.docid,
            uri=row.uri,
            collection=row.collection,
            text=row.text,
            content_hash=row.content_hash,
            scopes=tuple(row.scopes),
            caller=row.caller,
            session=row.session,
            created_at=row.created_at,
            source=row.source,
            supersedes=tuple(row.supersedes),
            expires_at=row.expires_at,
        )


@dataclass(frozen=True)
class ScoreParts:
    """What a match's score is made of. Hybrid: score = lexical + SEMANTIC_WEIGHT x cosine +
    ALIGNMENT_WEIGHT x alignment, with lexical as BM25 over the query's ceiling. Lexical
    mode: the score is the BM25 itself, and the semantic parts are None."""

    lexical: float
    cosine: float | None = None
    alignment: float | None = None


@dataclass(frozen=True)
class ScoredCandidate:
    fact: IndexedFact
    similarity: float
    tier: str
