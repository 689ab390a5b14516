"""The seed's public shape of a fact, from a FactRow or an IndexedFact (anything with their
fields). Apart from engine/storage/reads/records.py (which re-exports it) so that the read path of a
cold recall or propose shapes facts without loading the ORM."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from engine.contract.normalize import iso_utc


class FactFields(Protocol):
    """What the shape reads: FactRow and IndexedFact both have these."""

    @property
    def uri(self) -> str: ...
    @property
    def docid(self) -> str: ...
    @property
    def record_id(self) -> str: ...
    @property
    def text(self) -> str: ...
    @property
    def scopes(self) -> Any: ...
    @property
    def caller(self) -> str: ...
    @property
    def session(self) -> str: ...
    @property
    def created_at(self) -> datetime | None: ...
    @property
    def content_hash(self) -> str: ...
    @property
    def supersedes(self) -> Any: ...
    @property
    def source(self) -> str | None: ...


def public_fact(fact: FactFields) -> dict[str, Any]:
    """The seed's `fact` object: exactly its properties, `source` only when there is one."""
    assert fact.created_at is not None
    shaped: dict[str, Any] = {
        "uri": fact.uri,
        "docid": fact.docid,
        "recordId": fact.record_id,
        "text": fact.text,
        "scopes": list(fact.scopes),
        "caller": fact.caller,
        "session": fact.session,
        "createdAt": iso_utc(fact.created_at),
        "contentHash": fact.content_hash,
        "supersedes": list(fact.supersedes),
    }
    if fact.source:
        shaped["source"] = fact.source
    return shaped
