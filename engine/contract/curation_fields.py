"""The curation fields every fact carries from its first write (docs/contract.md section 9):
provenance and use policy, by who wrote it. OB1's shapes (engine/interop/ob1.py) are built
from them; remember and bulk writes start every fact with them."""

from __future__ import annotations

from typing import Any

PROVENANCE_STATUSES = ("observed", "inferred", "user_confirmed", "imported", "generated")
CREATORS = ("user", "agent", "system", "import")


def curation_defaults(created_by: str, *, runtime: str | None = None) -> dict[str, Any]:
    """What a fact starts with, by who wrote it: an agent's write is evidence that needs a
    person's confirmation; a person's own write is confirmed."""
    if created_by == "user":
        provenance = {"status": "user_confirmed", "confidence": 1.0, "createdBy": "user"}
        policy = {
            "canUseAsInstruction": True,
            "canUseAsEvidence": True,
            "requiresUserConfirmation": False,
        }
    elif created_by == "import":
        provenance = {"status": "imported", "confidence": 0.7, "createdBy": "import"}
        policy = {
            "canUseAsInstruction": False,
            "canUseAsEvidence": True,
            "requiresUserConfirmation": True,
        }
    else:
        provenance = {"status": "observed", "confidence": 0.7, "createdBy": created_by}
        policy = {
            "canUseAsInstruction": False,
            "canUseAsEvidence": True,
            "requiresUserConfirmation": True,
        }
    if runtime:
        provenance["runtime"] = runtime
    return {"provenance": provenance, "usePolicy": policy}
