"""One group's items added so far, for the import's earlier-item matcher
(engine/interop/earlier_pairs.py): kept while the file has members of the group to come."""

from __future__ import annotations

import numpy as np

# Added items scored against a chunk at once (memory: chunk x block float32).
COLUMN_BLOCK = 4_096


class AddedItems:
    """One group's added items so far: their vectors (semantic) or fuzzy words (lexical), in
    file order, or for a large lexical group the first item of each fence form."""

    def __init__(self, remaining: int | None) -> None:
        self.remaining = remaining  # members still to come (None: unknown, kept to the end)
        self.vectors: list[np.ndarray] = []  # blocks of at most COLUMN_BLOCK rows
        self.used = 0  # rows used in the last block
        self.items: list[int] = []
        self.records: list[str | None] = []
        self.words: list[str] = []
        self.first_of: dict[bytes, int] = {}  # fence form (digest) -> the first item of it
        self.first_added: dict[int, str | None] = {}  # those added -> record id

    def add_vector(self, vector: np.ndarray) -> None:
        last = self.vectors[-1] if self.vectors else None
        if last is None or (self.used == len(last) and len(last) == COLUMN_BLOCK):
            last = np.empty((1, len(vector)), np.float32)  # a new block, grown as it fills
            self.vectors.append(last)
            self.used = 0
        elif self.used == len(last):
            last = np.empty((min(2 * self.used, COLUMN_BLOCK), len(vector)), np.float32)
            last[: self.used] = self.vectors[-1]
            self.vectors[-1] = last
        last[self.used] = vector
        self.used += 1

    def vector_blocks(self) -> list[tuple[np.ndarray, int]]:
        """(block, offset of its first item in `items`), the last block cut to its rows."""
        out, offset = [], 0
        for number, block in enumerate(self.vectors):
            rows = self.used if number == len(self.vectors) - 1 else len(block)
            out.append((block[:rows], offset))
            offset += rows
        return out
