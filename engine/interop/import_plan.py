"""An import's dedup, decided for the whole file at once: each current item against the store
and against the items before it in the same file.

remember decides one text at a time; an import of 100k lines cannot scan the store 100k
times. So every text is embedded once (the same vectors are stored with the facts
afterwards), the store is asked for candidates in batches (the retrieval seam's
`candidates_for`), and items are compared with the earlier items that share a scope and a
target collection by one matrix product per group (engine/interop/earlier_pairs.py). Then the
items are decided in file order, as remember would decide them one after the other:

- the same text (content hash) as a current fact in a shared scope, or as an earlier item
  of the file being added: skipped;
- a likely or exact tier match with either: queued for a person (a proposal whose
  candidates name the store's facts and the earlier items, which are facts by then);
- otherwise: added.

Without the model, earlier items are compared by rapidfuzz (the lexical tiers) in groups of up
to earlier_pairs.LEXICAL_GROUP_LIMIT items, and in larger groups by their fence form (the text
casefolded, normalised and stripped of edge punctuation: "Likes tea." and "likes tea" are
one).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from engine.contract.normalize import content_hash
from engine.interop.earlier_pairs import Earlier, earlier_pairs
from engine.retrieval.embeddings import embed_facts
from engine.retrieval.matching import ScoredCandidate
from engine.retrieval.seam import Visibility, candidates_for

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

LIKELY = ("exact", "likely")


@dataclass
class Verdict:
    action: str  # add, skip or propose
    reason: str
    store: list[ScoredCandidate] = field(default_factory=list)
    # The earlier items of the file it repeats (any tier) that are added, best first.
    earlier: Sequence[Earlier] = field(default_factory=list)


@dataclass(frozen=True)
class Planned:
    """What to do with each item (None: not deduplicated, e.g. history), each item's vector
    block (None without a model) to store with the fact, and the content hash of each item
    deduplicated (None for the others)."""

    verdicts: list[Verdict | None]
    blocks: list[np.ndarray | None]
    digests: list[str | None]


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
    # One Visibility per (scopes, target), shared by the items that have them.
    shared: dict[tuple[tuple[str, ...], str], Visibility] = {}
    visibilities = []
    for i in members:
        key = (tuple(scopes[i]), targets[i])
        if key not in shared:
            shared[key] = Visibility(scopes[i], [targets[i]], now)
        visibilities.append(shared[key])
    store = candidates_for(engine.retrieval(), [texts[i] for i in members], visibilities, vectors)
    by_item = dict(zip(members, store, strict=True))
    earlier = earlier_pairs(texts, scopes, targets, members, vectors)
    verdicts: list[Verdict | None] = [None] * len(texts)
    added_hashes: dict[tuple[str, str], set[str]] = {}  # (target, hash) -> scopes added
    added: set[int] = set()
    is_added = np.zeros(len(texts), dtype=bool)  # `added`, as a mask over the items
    digests: list[str | None] = [None] * len(texts)
    for i in members:
        digest = digests[i] = content_hash(texts[i])
        candidates = by_item[i]
        same = [c for c in candidates if c.fact.content_hash == digest]
        if same:
            verdicts[i] = Verdict("skip", f"exact duplicate of {same[0].fact.uri}")
            continue
        if added_hashes.get((targets[i], digest), set()) & set(scopes[i]):
            verdicts[i] = Verdict("skip", "exact duplicate within the file")
            continue
        likely_store = [c for c in candidates if c.tier in LIKELY]
        likely_file = [e for e in earlier.likely(i) if e.item in added]
        if likely_store or likely_file:
            best = max(
                [(c.similarity, c.fact.uri) for c in likely_store]
                + [(e.similarity, f"item {e.item + 1} of this file") for e in likely_file]
            )
            verdicts[i] = Verdict(
                "propose",
                f"likely duplicate of {best[1]} ({best[0]:.2f})",
                candidates,
                earlier.repeats(i, is_added),
            )
            continue
        verdicts[i] = Verdict("add", "new")
        added.add(i)
        is_added[i] = True
        added_hashes.setdefault((targets[i], digest), set()).update(scopes[i])
    return Planned(verdicts, blocks, digests)
