"""How the decision log records undo and redo: the logged action and the ids it points at.

The log is the journal that engine/curation/undo.py walks: an undo names the decision it takes back
(`undoes`), a redo names the undo it takes back (`redoes`)."""

from __future__ import annotations


def journal_action(action: str, *, undoes: int | None, redoes: int | None, undo_of: str) -> str:
    """The logged action: `undo:<what it undoes>`, `redo:<action>`, or the action itself."""
    if undoes is not None:
        return f"undo:{undo_of}"
    if redoes is not None:
        return f"redo:{action}"
    return action


def journal_detail(undoes: int | None, redoes: int | None) -> dict[str, int]:
    return {
        key: value for key, value in (("undoes", undoes), ("redoes", redoes)) if value is not None
    }
