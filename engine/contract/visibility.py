"""What a "current" fact is, defined once for every reader of the store.

A fact is *live* while it is neither superseded (`superseded_by` unset) nor retired
(`retired_at` unset); a restore or a revert makes it live again. A live fact is *current* at
`now` (the engine's clock, engine.now()) unless it has *expired*: its `expires_at` is set and
not later than `now` (a fact expiring at exactly `now` has expired). Liveness is stored; expiry
depends on the clock, so the derived indexes (the in-memory snapshot, PostgreSQL's fact_search)
hold the live facts and check expiry when asked.

The rule is asked in five forms: a Python predicate over a row, an SQLAlchemy clause, raw SQL
for sqlite3 (the cold read path) and PostgreSQL's derived tables, and a numpy mask over the
snapshot's arrays. Each module used to write out its own, free to drift (`<` against `<=` at
the expiry moment, a liveness test left out); here they are written side by side, and
tests/engine/test_visibility_one_definition.py holds every reader of one store to the same
visible set. No SQLAlchemy or numpy at import: the cold read path imports this module.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np


class FactState(Protocol):
    """What the rule reads of a fact: a FactRow, or anything with these fields."""

    @property
    def superseded_by(self) -> str | None: ...
    @property
    def retired_at(self) -> datetime | None: ...
    @property
    def expires_at(self) -> datetime | None: ...


# -- Python ---------------------------------------------------------------------------------


def is_live(fact: FactState) -> bool:
    """Neither superseded nor retired."""
    return fact.superseded_by is None and fact.retired_at is None


def is_expired(expires_at: datetime | None, now: datetime) -> bool:
    """Expired at `now`: an expiry is set and is not later than `now`."""
    return expires_at is not None and expires_at <= now


def is_current(fact: FactState, now: datetime) -> bool:
    """Live and not expired at `now`."""
    return is_live(fact) and not is_expired(fact.expires_at, now)


# -- SQLAlchemy -----------------------------------------------------------------------------
# `columns`: anything with the facts' columns as attributes: the FactRow entity, an alias of
# it, or the Core table's `.c`. `now`: a datetime or a bound parameter (bindparam("now")).
# Every clause is NULL-safe, so that `~` of it is its complement (browse's inverted filters).


def live_clause(columns: Any) -> Any:
    from sqlalchemy import and_

    return and_(columns.superseded_by.is_(None), columns.retired_at.is_(None))


def expired_clause(columns: Any, now: Any) -> Any:
    from sqlalchemy import and_

    return and_(columns.expires_at.is_not(None), columns.expires_at <= now)


def unexpired_clause(columns: Any, now: Any) -> Any:
    from sqlalchemy import or_

    return or_(columns.expires_at.is_(None), columns.expires_at > now)


def current_clause(columns: Any, now: Any) -> Any:
    from sqlalchemy import and_

    return and_(live_clause(columns), unexpired_clause(columns, now))


# -- raw SQL --------------------------------------------------------------------------------
# `alias`: the table's name or alias in the statement (None: columns unqualified). `now`: the
# placeholder of the moment as the caller binds it: "?" for sqlite3, ":now" for SQLAlchemy's
# text(). `facts` keeps times as ISO text on every database (tables.UtcDateTime): bind
# iso_utc(now) there; PostgreSQL's fact_search keeps a timestamptz: bind the datetime.


def _qualified(alias: str | None, column: str) -> str:
    return f"{alias}.{column}" if alias else column


def live_sql(alias: str | None = None) -> str:
    superseded, retired = _qualified(alias, "superseded_by"), _qualified(alias, "retired_at")
    return f"{superseded} IS NULL AND {retired} IS NULL"


def unexpired_sql(alias: str | None = None, now: str = ":now") -> str:
    expires = _qualified(alias, "expires_at")
    return f"({expires} IS NULL OR {expires} > {now})"


def current_sql(alias: str | None = None, now: str = ":now") -> str:
    return f"{live_sql(alias)} AND {unexpired_sql(alias, now)}"


# -- numpy ----------------------------------------------------------------------------------


def unexpired_mask(expiry: np.ndarray, now: datetime) -> np.ndarray:
    """Per position, not expired at `now`; `expiry`: POSIX seconds, +inf for none."""
    mask: np.ndarray = expiry > now.timestamp()
    return mask


def current_mask(
    live: np.ndarray, expiry: np.ndarray, now: datetime, *, within: np.ndarray | None = None
) -> np.ndarray:
    """Per position of the snapshot, current at `now` (`live`: its liveness flags). With
    `within`, that mask is narrowed in place and returned (a recall's, no new array)."""
    if within is None:
        mask: np.ndarray = live & unexpired_mask(expiry, now)
        return mask
    within &= live
    within &= unexpired_mask(expiry, now)
    return within
