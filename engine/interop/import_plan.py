"""An import's dedup, decided for the whole file at once: each current item against the store
and against the items before it in the same file.

remember decides one text at a time; an import of 100k lines cannot scan the store 100k
times. So every text is embedded once (the same vectors are stored with the facts
afterwards), the store is asked for candidates in batches (the retrieval seam's
`candidates_for`), and items are compared with the earlier items that share a scope and a
target collection by one matrix product per group. Then the items are decided in file order,
as remember would decide them one after the other:

- the same text (content hash) as a current fact in a shared scope, or as an earlier item
  of the file being added: skipped;
- a likely or exact tier match with either: queued for a person (a proposal whose
  candidates name the store's facts and the earlier items, which are facts by then);
- otherwise: added.

Without the model, earlier items are compared by rapidfuzz (the lexical tiers) in groups of up
to LEXICAL_GROUP_LIMIT items, and in larger groups by their fence form (the text casefolded,
normalised and stripped of edge punctuation: "Likes tea." and "likes tea" are one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np
from rapidfuzz import fuzz, process

from engine.contract.normalize import content_hash, fence_form
from engine.retrieval.embeddings import embed_facts
from engine.retrieval.lexical import fuzzy_text
from engine.retrieval.matching import (
    LEXICAL_TIERS,
    SEMANTIC_TIERS,
    ScoredCandidate,
    Tiers,
    tier_of,
)
from engine.retrieval.seam import Visibility, candidates_for

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

# Items compared pairwise by rapidfuzz without a model; a larger group compares fence forms.
LEXICAL_GROUP_LIMIT = 2_000
# Rows of one group's similarity matrix computed at once (memory: rows x group size floats).
ROW_CHUNK = 256
LIKELY = ("exact", "likely")


@dataclass(frozen=True)
class Earlier:
    """An earlier item of the same file that this one nearly repeats."""

    item: int
    similarity: float
    tier: str


@dataclass
class Verdict:
    action: str  # add, skip or propose
    reason: str
    store: list[ScoredCandidate] = field(default_factory=list)
    earlier: list[Earlier] = field(default_factory=list)


@dataclass(frozen=True)
class Planned:
    """What to do with each item (None: not deduplicated, e.g. history), and each item's vector
    block (None without a model) to store with the fact."""

    verdicts: list[Verdict | None]
    blocks: list[np.ndarray | None]


def plan_import(
    engine: MemoryEngine,
    texts: list[str],
    scopes: list[list[str]],
    targets: list[str],
    eligible: list[bool],
    now: datetime,
) -> Planned:
    """The verdict on every eligible item (current in its source, not already in the store by
    record id), in file order."""
    embedder = engine.embedder_status.embedder
    blocks: list[np.ndarray | None] = (
        list(embed_facts(embedder, texts))
        if embedder is not None and texts
        else [None] * len(texts)
    )
    members = [i for i, ok in enumerate(eligible) if ok]
    vectors = (
        np.vstack([blocks[i][0] for i in members])  # type: ignore[index]
        if embedder is not None and members
        else None
    )
    visibilities = [Visibility(scopes[i], [targets[i]], now) for i in members]
    store = candidates_for(engine.retrieval(), [texts[i] for i in members], visibilities, vectors)
    by_item = dict(zip(members, store, strict=True))
    earlier = _earlier_matches(texts, scopes, targets, members, vectors)
    verdicts: list[Verdict | None] = [None] * len(texts)
    added_hashes: dict[tuple[str, str], set[str]] = {}  # (target, hash) -> scopes added
    added: set[int] = set()
    for i in members:
        digest = content_hash(texts[i])
        candidates = by_item[i]
        same = [c for c in candidates if c.fact.content_hash == digest]
        if same:
            verdicts[i] = Verdict("skip", f"exact duplicate of {same[0].fact.uri}")
            continue
        if added_hashes.get((targets[i], digest), set()) & set(scopes[i]):
            verdicts[i] = Verdict("skip", "exact duplicate within the file")
            continue
        repeats = [e for e in earlier.get(i, []) if e.item in added]
        likely_store = [c for c in candidates if c.tier in LIKELY]
        likely_file = [e for e in repeats if e.tier in LIKELY]
        if likely_store or likely_file:
            best = max(
                [(c.similarity, c.fact.uri) for c in likely_store]
                + [(e.similarity, f"item {e.item + 1} of this file") for e in likely_file]
            )
            verdicts[i] = Verdict(
                "propose",
                f"likely duplicate of {best[1]} ({best[0]:.2f})",
                candidates,
                repeats,
            )
            continue
        verdicts[i] = Verdict("add", "new")
        added.add(i)
        added_hashes.setdefault((targets[i], digest), set()).update(scopes[i])
    return Planned(verdicts, blocks)


def _earlier_matches(
    texts: list[str],
    scopes: list[list[str]],
    targets: list[str],
    members: list[int],
    vectors: np.ndarray | None,
) -> dict[int, list[Earlier]]:
    """Per item, the earlier items (same target collection, a shared scope) at or above the
    weak tier, best first."""
    groups: dict[tuple[str, str], list[int]] = {}  # (target, scope) -> rows of `members`
    for row, item in enumerate(members):
        for scope in scopes[item]:
            groups.setdefault((targets[item], scope), []).append(row)
    best: dict[int, dict[int, Earlier]] = {}
    for rows in groups.values():
        if len(rows) < 2:
            continue
        if vectors is not None:
            pairs = _semantic_pairs(vectors[rows], SEMANTIC_TIERS)
        elif len(rows) <= LEXICAL_GROUP_LIMIT:
            pairs = _lexical_pairs([texts[members[r]] for r in rows], LEXICAL_TIERS)
        else:
            pairs = _fence_pairs([texts[members[r]] for r in rows])
        for later, first, similarity, tier in pairs:
            item, other = members[rows[later]], members[rows[first]]
            kept = best.setdefault(item, {})
            if other not in kept or kept[other].similarity < similarity:
                kept[other] = Earlier(other, similarity, tier)
    return {
        item: sorted(found.values(), key=lambda e: (-e.similarity, e.item))
        for item, found in best.items()
    }


def _semantic_pairs(block: np.ndarray, tiers: Tiers) -> list[tuple[int, int, float, str]]:
    """(later, earlier, cosine, tier) for every pair of rows at or above the weak tier."""
    found: list[tuple[int, int, float, str]] = []
    for start in range(0, len(block), ROW_CHUNK):
        end = min(start + ROW_CHUNK, len(block))
        similarity = np.clip(block[start:end] @ block[:end].T, 0.0, 1.0)
        for offset, row in enumerate(similarity):
            later = start + offset
            for first in np.flatnonzero(row[:later] >= tiers.weak):
                score = round(float(row[first]), 4)
                found.append((later, int(first), score, tier_of(score, tiers) or "weak"))
    return found


def _lexical_pairs(texts: list[str], tiers: Tiers) -> list[tuple[int, int, float, str]]:
    """As the lexical dedup scores a pair (engine/retrieval/lexical.py `similarity`): the mean
    of rapidfuzz's token-sort and token-set ratios over the texts' words."""
    words = [fuzzy_text(text) for text in texts]
    sort = process.cdist(words, words, scorer=fuzz.token_sort_ratio, dtype=np.float32)
    kept = process.cdist(words, words, scorer=fuzz.token_set_ratio, dtype=np.float32)
    similarity = (sort + kept) / 200.0
    found: list[tuple[int, int, float, str]] = []
    for later in range(1, len(texts)):
        for first in np.flatnonzero(similarity[later, :later] >= tiers.weak):
            if not words[later] or not words[int(first)]:
                continue
            score = round(float(similarity[later, first]), 4)
            found.append((later, int(first), score, tier_of(score, tiers) or "weak"))
    return found


def _fence_pairs(texts: list[str]) -> list[tuple[int, int, float, str]]:
    """Items whose fence forms are equal: the same sentence, differently written."""
    first_of: dict[str, int] = {}
    found: list[tuple[int, int, float, str]] = []
    for later, text in enumerate(texts):
        form = fence_form(text)
        if form in first_of:
            found.append((later, first_of[form], 1.0, "exact"))
        else:
            first_of[form] = later
    return found
