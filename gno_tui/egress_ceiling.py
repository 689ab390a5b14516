"""A caller's egress ceiling (a token's `--egress lan|remote`): the collections whose policy
lets their facts leave for there are the only ones it reaches, through every verb, not only
recall. Recall takes the stricter of its own `egress` and the ceiling; a remember, a keyed
call or a write-back names a collection, which must be admitted (its candidates and an
`existing` answer come from that collection); resources and the review list show only
admitted collections. `local_only` is no ceiling."""

from __future__ import annotations

from typing import Any

from engine.facade import (
    DEFAULT_COLLECTION,
    POLICY_STRICTNESS,
    MemoryFailure,
    MemoryService,
)

NO_CEILING = "local_only"


def admits(policy: str, ceiling: str) -> bool:
    return POLICY_STRICTNESS[policy] >= POLICY_STRICTNESS[ceiling]


def stricter_egress(asked: Any, ceiling: str) -> Any:
    """The stricter of a recall's own egress and the ceiling (a bad value is left for the
    engine to refuse with its code)."""
    if ceiling == NO_CEILING or asked not in (None, *POLICY_STRICTNESS):
        return asked
    if asked is None or POLICY_STRICTNESS[asked] < POLICY_STRICTNESS[ceiling]:
        return ceiling
    return asked


def admitted_collections(service: MemoryService, ceiling: str) -> frozenset[str] | None:
    """The collections a ceiling admits (None: every one)."""
    if ceiling == NO_CEILING:
        return None
    return frozenset(row.name for row in service.collections() if admits(row.policy, ceiling))


def require_admitted(
    service: MemoryService, collection: str | None, ceiling: str, what: str
) -> None:
    """Refuse a call on a collection the ceiling does not admit (an unknown one gets the
    engine's MEMORY_COLLECTION_NOT_FOUND)."""
    if ceiling == NO_CEILING:
        return
    name = collection or DEFAULT_COLLECTION
    row = service.collection(name)
    if not admits(row.policy, ceiling):
        raise MemoryFailure(
            "MEMORY_GRANT_MISSING",
            f"{what} reaches collection {name!r}, whose policy is {row.policy}; this token's "
            f"egress ceiling is {ceiling}, so only collections whose policy is {ceiling} or "
            "stricter to leave are within reach. A person can run `gno-tui collection "
            f"set-policy {name} {ceiling}`, or make a token without --egress.",
        )
