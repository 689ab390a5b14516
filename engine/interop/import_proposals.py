"""An import's likely duplicates as review-queue entries: each held item's candidates (the
store's facts and the file's earlier items, now facts), checked against the remember schema
once for all of them, and their JSON text made from each fact's text made once.

With many likely duplicates the same few facts are the candidates of thousands of proposals:
a 100k-line file of persona facts queues 21.6k proposals naming 37.9k facts 128k times, 54 MB
of JSON. Encoding each candidate dict again took an import 0.7 s; a fact's JSON is made once
and each candidate's text is that plus its two scores."""

from __future__ import annotations

import json
from collections import OrderedDict
from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

from engine.contract.validation import ensure_valid
from engine.retrieval.matching import MAX_CANDIDATES
from engine.storage.embedded.sqlite_batch import EncodedJson
from engine.storage.reads.records import public_fact
from engine.storage.schema import tables

if TYPE_CHECKING:
    from engine.interop.import_plan import Verdict
    from engine.retrieval.snapshot import IndexedFact

# Facts kept shaped (their public JSON) for the proposals that name them: the same few are
# the candidates of many proposals (a file of near-duplicates names its first item in each).
SHAPED_KEPT = 4_096


# A fact's public fields and its JSON text without the closing brace, by record id.
Written = dict[str, tuple[dict[str, Any], str]]
# One candidate: its fact's public fields, that fact's JSON text without the closing brace, and
# the two scores (similarity, match).
Entry = tuple[dict[str, Any], str, float, str]


def ensure_results_valid(matching: dict[str, Any], proposals: list[list[Entry]]) -> None:
    """Every proposal's result against the remember schema, in one validation: the results
    share their outcome and `matching`, and the schema constrains each candidate on its own
    (not their number), so the envelope around all their candidates is valid exactly when
    each result is. One call per result cost an import of 20k proposals 1.5 s.

    Nor is each candidate checked: one per fact and one per (similarity, match) are. A
    candidate is a fact's public fields and the two scores, and the schema's properties are
    independent of one another, so a candidate is valid exactly when its fact's
    representative and its scores' representative are. 21.6k proposals of a 100k import held
    128k candidates: 37.9k facts and 3.4k score pairs."""
    chosen: dict[Any, Entry] = {}
    for entries in proposals:
        for entry in entries:
            chosen.setdefault(entry[0]["recordId"], entry)
            chosen.setdefault((type(entry[2]), entry[2], entry[3]), entry)
    if chosen:
        ensure_valid(
            "remember",
            {
                "outcome": "candidates",
                "matching": matching,
                "candidates": _as_dicts(list({id(e): e for e in chosen.values()}.values())),
            },
        )


class PublicFacts:
    """Facts in the seed's public shape, each shaped (and its JSON written) once while it is
    among the last SHAPED_KEPT used. The facts this import wrote are read back from the
    transaction that writes them (`written`'s `read`): they are not kept in memory meanwhile."""

    def __init__(self) -> None:
        # record id -> (the public fact, its JSON text without the closing brace)
        self._shaped: OrderedDict[str, tuple[dict[str, Any], str]] = OrderedDict()

    def _keep(self, record_id: str, shaped: tuple[dict[str, Any], str]) -> None:
        if record_id in self._shaped:
            self._shaped.move_to_end(record_id)
            return
        self._shaped[record_id] = shaped
        if len(self._shaped) > SHAPED_KEPT:
            self._shaped.popitem(last=False)

    def of_store(self, fact: IndexedFact) -> tuple[dict[str, Any], str]:
        shaped = self._shaped.get(fact.record_id) or _with_json(public_fact(fact))
        self._keep(fact.record_id, shaped)
        return shaped

    def written(
        self, read: Callable[[list[str]], Iterable[tables.FactRow]], record_ids: set[str]
    ) -> Written:
        """The facts this import wrote that some proposals name, read with `read` (from the
        transaction writing them: engine.storage.queries.interop.facts_by_record_ids on it)
        unless shaped already."""
        found: Written = {}
        missing = []
        for record_id in sorted(record_ids):
            shaped = self._shaped.get(record_id)
            if shaped is None:
                missing.append(record_id)
            else:
                found[record_id] = shaped
                self._keep(record_id, shaped)
        for start in range(0, len(missing), 500):
            chunk = missing[start : start + 500]
            for row in read(chunk):
                found[row.record_id] = _with_json(public_fact(row))
                self._keep(row.record_id, found[row.record_id])
        return found


def _with_json(shaped: dict[str, Any]) -> tuple[dict[str, Any], str]:
    text = json.dumps(shaped)
    assert text.endswith("}") and len(shaped) > 0  # a non-empty object: more keys can follow
    return shaped, text[:-1]


def proposal_candidates(verdict: Verdict, facts: PublicFacts, written: Written) -> list[Entry]:
    """The store's candidates and the earlier items of the file (facts now, in `written`),
    best first."""
    found = [(*facts.of_store(c.fact), c.similarity, c.tier) for c in verdict.store]
    # The earlier items come best first, after the store's candidates, and the sort below
    # keeps that order among equals: past the first MAX_CANDIDATES of them none can place.
    for earlier in verdict.earlier[:MAX_CANDIDATES]:
        assert earlier.record_id is not None  # the planner names only written items
        found.append((*written[earlier.record_id], earlier.similarity, earlier.tier))
    found.sort(key=lambda entry: -entry[2])
    return found[:MAX_CANDIDATES]


def encoded_candidates(entries: list[Entry]) -> EncodedJson:
    """A proposal's candidates as the JSON text json.dumps writes for their dicts (", "
    between items and members, ": " after a key), the dicts made only if read."""
    text = ", ".join(
        f'{fact_json}, "similarity": {_json_of(similarity)}, "match": {_json_of(tier)}}}'
        for _, fact_json, similarity, tier in entries
    )
    return EncodedJson(f"[{text}]", partial(_as_dicts, entries))


def _as_dicts(entries: list[Entry]) -> list[dict[str, Any]]:
    return [
        {**fact, "similarity": similarity, "match": tier} for fact, _, similarity, tier in entries
    ]


# A score or tier's JSON by (type, value): a few thousand distinct values among 128k
# candidates. The type is part of the key because 1 == 1.0 but json.dumps writes them apart.
_JSON_OF: dict[tuple[type, Any], str] = {}


def _json_of(value: Any) -> str:
    key = (type(value), value)
    text = _JSON_OF.get(key)
    if text is None:
        text = json.dumps(value)
        if len(_JSON_OF) < 65_536:
            _JSON_OF[key] = text
    return text
