"""The façade's read side: facts as the workbench browses them (pages, search, chains,
duplicate pairs), the Library's page, why a recall left facts out, and fact resources."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import TYPE_CHECKING, cast

from engine.facade.namespace import Namespace
from engine.memory import browse, library, resources
from engine.memory.as_of_fields import rows_as_of
from engine.memory.browse import FactPage
from engine.memory.library import LibraryFilter, LibraryPage
from engine.memory.recall import RecallRequest
from engine.memory.why_not import NoMatch, WhyNot, no_match, why_not
from engine.retrieval.seam import DuplicatePair
from engine.storage.schema import tables

if TYPE_CHECKING:
    from engine.contract.results import EgressLineage, RecallResult


@dataclass(frozen=True)
class FactQuery:
    """Which facts: a status (current, superseded, retired, expired), a scope, a collection,
    words every fact contains (`invert`: does not), a window, and a moment to see the store
    as it was then."""

    status: str | None = None
    scope: str | None = None
    collection: str | None = None
    text: str | None = None
    invert: bool = False
    offset: int = 0
    limit: int = 200
    as_of: datetime | None = None


class FactsApi(Namespace):
    def page(self, query: FactQuery) -> FactPage:
        """One page of facts for a query, newest first, with the total of every match."""
        return browse.list_facts(self._engine, **asdict(query))

    def status_counts(self, *, as_of: datetime | None = None) -> dict[str, int]:
        return browse.status_counts(self._engine, as_of=as_of)

    def library_page(
        self, wanted: LibraryFilter, *, tab: str, offset: int, limit: int
    ) -> LibraryPage:
        """One page of the Library for its filter and status tab, with every tab's count."""
        return library.library_page(self._engine, wanted, tab, offset, limit)

    def known_scopes(self) -> list[str]:
        return browse.known_scopes(self._engine)

    def get(self, ref: str) -> tables.FactRow:
        """A fact by #docid, record id or uri (MEMORY_NOT_FOUND when there is none)."""
        return browse.fact_row(self._engine, ref)

    def get_as_of(self, ref: str, moment: datetime | None) -> tables.FactRow:
        """A fact with its curation fields (provenance, use policy, freshness) as they were
        at `moment` (None: now); its status fields are as stored (read them against it)."""
        row = browse.fact_row(self._engine, ref)
        return row if moment is None else rows_as_of(self._engine, [row], moment)[0]

    def chain(self, ref: str) -> list[tables.FactRow]:
        """The supersession chain through `ref`, oldest first."""
        return browse.chain(self._engine, ref)

    def effective_policy(self, collections: Sequence[str]) -> EgressLineage:
        # browse.effective_policy builds the seed's egressLineage as dict[str, Any].
        return cast("EgressLineage", browse.effective_policy(self._engine, collections))

    def duplicate_pairs(self, *, scope: str, limit: int = 200) -> list[DuplicatePair]:
        return browse.duplicate_pairs(self._engine, scope=scope, limit=limit)

    def why_not(self, request: RecallRequest, result: RecallResult) -> WhyNot:
        """What the recall `result` of `request` left out, and why."""
        return why_not(self._engine, request, result)

    def no_match(self, request: RecallRequest, result: RecallResult) -> NoMatch | None:
        """Why the recall `result` of `request` returned nothing, for a person (None when it
        returned facts): nothing stored in those scopes, matches withheld by the egress
        ceiling or too big for the budget, or nothing close enough to the query. Not part of
        the result: seed 001 admits no extra fields."""
        if result["facts"]:
            return None
        return no_match(self._engine, request, result)

    def read_resource(
        self,
        uri: str,
        *,
        scopes: Collection[str] | None = None,
        collections: Collection[str] | None = None,
    ) -> tuple[str, str]:
        """A fact (`.md` file or `.json` shape) or the proposals list by uri: (text, MIME).
        Only what a recall in `scopes` would see (None: every scope), in `collections`
        (None: every one); a current fact only."""
        if uri == resources.PROPOSALS_URI:  # the queue, listed: stale review claims first
            from engine.curation.claim_recovery import recover_quietly

            recover_quietly(self._engine)
        return resources.read_resource(self._engine, uri, scopes=scopes, collections=collections)
