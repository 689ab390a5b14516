"""An import's dedup, decided a batch of items at a time, in file order: each current item
against the store and against the items before it in the same file.

remember decides one text at a time; an import of 100k lines cannot scan the store 100k
times. So a batch's texts are embedded once (the same vectors are stored with the facts
afterwards), the store is asked for the batch's candidates at once (the retrieval seam's
`candidates_for`), and the batch is scored against the file's earlier items that share a scope
and a target collection (engine/interop/earlier_pairs.py). Then the items are decided in file
order, as remember would decide them one after the other (the store asked first for the
likely-tier candidates only, which is what the decision needs and lets a large store's graph
walk end within a few rows; the proposals' full candidate lists, weak tier included, are asked
for afterwards, for the few items held, by `complete`):

- the same text (content hash) as a current fact in a shared scope, or as an earlier item
  of the file being added: skipped;
- a likely or exact tier match with either: queued for a person (a proposal whose
  candidates name the store's facts and the earlier items, which are facts by then);
- otherwise: added.

Without the model, earlier items are compared by rapidfuzz (the lexical tiers) in groups of up
to earlier_pairs.LEXICAL_GROUP_LIMIT items, and in larger groups by their fence form (the text
casefolded, normalised and stripped of edge punctuation: "Likes tea." and "likes tea" are
one).

What the planner keeps between batches is what later decisions need: the content hashes the
file added (per target and scope) and the matcher's groups; a batch's vectors and candidates
go with the batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from engine.contract.normalize import content_hash
from engine.interop.earlier_pairs import Earlier, EarlierMatcher, GroupKey
from engine.retrieval.embeddings import embed_facts
from engine.retrieval.matching import ScoredCandidate
from engine.retrieval.seam import Visibility, candidates_for
from engine.storage.bulk.hashes import HashScopes

if TYPE_CHECKING:
    from engine.storage.store import MemoryEngine

LIKELY = ("exact", "likely")
# Characters of text embedded at once: the model's work arrays grow with the text it is given
# (512 facts of 4 KB took 45 MB), and a batch's texts are embedded in runs of this much.
EMBED_CHARS = 128 * 1024


def _embedding_runs(texts: Sequence[str]) -> list[tuple[int, int]]:
    """(start, end) of consecutive texts of at most EMBED_CHARS in all (one text at least)."""
    runs, start, size = [], 0, 0
    for end, text in enumerate(texts):
        if end > start and size + len(text) > EMBED_CHARS:
            runs.append((start, end))
            start, size = end, 0
        size += len(text)
    if start < len(texts):
        runs.append((start, len(texts)))
    return runs


@dataclass
class Verdict:
    action: str  # add, skip or propose
    reason: str
    store: list[ScoredCandidate] = field(default_factory=list)
    # The earlier items of the file it repeats (any tier) that were written, best first.
    earlier: Sequence[Earlier] = field(default_factory=list)


def group_keys(scopes: Sequence[str], target: str) -> list[GroupKey]:
    """The groups an item is compared in: its target collection with each of its scopes."""
    return [(target, scope) for scope in dict.fromkeys(scopes)]


class ImportPlanner:
    """Decides a file's items batch by batch: `batch` prepares the next items, then `decide`
    each eligible one in order, followed by `settle` once the caller knows whether an added
    item was written."""

    def __init__(
        self, engine: MemoryEngine, *, sizes: dict[GroupKey, int] | None, now: datetime
    ) -> None:
        self._engine = engine
        self._embedder = engine.embedder_status.embedder
        self._now = now
        self._matcher = EarlierMatcher(semantic=self._embedder is not None, sizes=sizes)
        # The texts the file added so far, by target and content hash, with their scopes.
        self._added_hashes = HashScopes()
        self._items: dict[int, tuple[str, list[str], str]] = {}
        self._candidates: dict[int, list[ScoredCandidate]] = {}
        self._verdicts: dict[int, Verdict] = {}
        # The batch's questions to the store, kept for `complete`: text, visibility, vector.
        self._asked: dict[int, tuple[str, Visibility, np.ndarray | None]] = {}
        self._held: dict[int, Verdict] = {}

    def batch(
        self,
        items: Sequence[int],
        texts: Sequence[str],
        scopes: Sequence[list[str]],
        targets: Sequence[str],
        eligible: Sequence[bool],
    ) -> list[np.ndarray | None]:
        """Prepare the next items (numbers in the file, texts, normalised scopes, targets,
        whether each is deduplicated); returns each item's vector block (None without a
        model) to store with its fact."""
        blocks: list[np.ndarray | None] = [None] * len(texts)
        if self._embedder is not None:
            for start, end in _embedding_runs(texts):
                blocks[start:end] = embed_facts(self._embedder, texts[start:end])
        members = [row for row, ok in enumerate(eligible) if ok]
        vectors = (
            np.vstack([blocks[row][0] for row in members])  # type: ignore[index]
            if self._embedder is not None and members
            else None
        )
        shared: dict[tuple[tuple[str, ...], str], Visibility] = {}
        visibilities = []
        for row in members:
            key = (tuple(scopes[row]), targets[row])
            if key not in shared:
                shared[key] = Visibility(scopes[row], [targets[row]], self._now)
            visibilities.append(shared[key])
        store = candidates_for(
            self._engine.retrieval(),
            [texts[row] for row in members],
            visibilities,
            vectors,
            least="likely",
        )
        self._items = {items[row]: (texts[row], scopes[row], targets[row]) for row in members}
        self._asked = {
            items[row]: (texts[row], visibility, vectors[n] if vectors is not None else None)
            for n, (row, visibility) in enumerate(zip(members, visibilities, strict=True))
        }
        self._held = {}
        self._candidates = {items[row]: found for row, found in zip(members, store, strict=True)}
        self._verdicts = {}
        self._matcher.chunk(
            [items[row] for row in members],
            [group_keys(scopes[row], targets[row]) for row in members],
            [texts[row] for row in members],
            vectors,
        )
        return blocks

    def decide(self, item: int) -> tuple[Verdict, str]:
        """The verdict on an eligible item of the batch (the next in file order) and its
        content hash."""
        text, scopes, target = self._items[item]
        digest = content_hash(text)
        candidates = self._candidates.pop(item)
        earlier = self._matcher.found(item)  # asked for every item: it follows the file order
        same = [c for c in candidates if c.fact.content_hash == digest]
        if same:
            verdict = Verdict("skip", f"exact duplicate of {same[0].fact.uri}")
        elif self._added_hashes.shares(target, digest, scopes):
            verdict = Verdict("skip", "exact duplicate within the file")
        else:
            likely_store = [c for c in candidates if c.tier in LIKELY]
            if likely_store or earlier.best is not None:
                picks = [(c.similarity, c.fact.uri) for c in likely_store]
                if earlier.best is not None:
                    score, first = earlier.best
                    picks.append((score, f"item {first + 1} of this file"))
                best = max(picks)
                verdict = Verdict(
                    "propose",
                    f"likely duplicate of {best[1]} ({best[0]:.2f})",
                    candidates,
                    earlier.repeats,
                )
                self._held[item] = verdict
            else:
                verdict = Verdict("add", "new")
                self._added_hashes.add(target, digest, scopes)
        self._verdicts[item] = verdict
        return verdict, digest

    def complete(self) -> None:
        """The batch's held items' store candidates, every tier (the decision asked for the
        likely tier only): what a person reviewing each proposal is shown, as remember's
        propose lists them. One batch for the items held, a few in a hundred."""
        held = list(self._held)
        if not held:
            return
        asked = [self._asked[item] for item in held]
        vectors = (
            np.vstack([vector for _, _, vector in asked])  # type: ignore[misc]
            if self._embedder is not None
            else None
        )
        full = candidates_for(
            self._engine.retrieval(),
            [text for text, _, _ in asked],
            [visibility for _, visibility, _ in asked],
            vectors,
        )
        for item, candidates in zip(held, full, strict=True):
            self._held.pop(item).store = candidates

    def settle(self, item: int, *, record_id: str | None) -> None:
        """After `decide`: whether an added item was written (its record id; None when the
        write skipped it, or in a dry run)."""
        verdict = self._verdicts.pop(item)
        self._items.pop(item)
        self._matcher.decided(item, added=verdict.action == "add", record_id=record_id)
