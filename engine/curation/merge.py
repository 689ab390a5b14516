"""The text a merge starts from: a candidate fact and a new text combined, for a person to edit.

A merge writes one fact that says what both say and supersedes the candidate, so the chain
keeps the old wording. The suggestion is deliberately plain (no rewriting): when one text
already contains the other, the longer one; otherwise the candidate, then the new text, as
two sentences.
"""

from __future__ import annotations

import re

_SPACES = re.compile(r"\s+")


def _folded(text: str) -> str:
    return _SPACES.sub(" ", text).strip().rstrip(".!?").casefold()


def merged_text(kept: str, incoming: str) -> str:
    """`kept` (the fact that will be superseded) and `incoming`, as one text."""
    kept, incoming = _SPACES.sub(" ", kept).strip(), _SPACES.sub(" ", incoming).strip()
    if _folded(incoming) in _folded(kept):
        return kept
    if _folded(kept) in _folded(incoming):
        return incoming
    if kept and kept[-1] not in ".!?":
        kept += "."
    return f"{kept} {incoming}".strip()
