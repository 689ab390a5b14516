"""What an import did with each item: the report `gno-tui import` prints.

An import of 232k lines has as many lines in its report, so the report keeps them compact
(a line number instead of `file:line`, an action code, the reason) and makes each line's dict
only when it is read; `json_chunks` writes the JSON a piece at a time."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, overload

ACTIONS = ("add", "skip", "propose")
# Actions (as their JSON dicts) written per chunk by ImportReport.json_chunks.
JSON_CHUNK = 2_000


class ImportActions(Sequence[dict[str, Any]]):
    """The report's lines: {where, action, reason} per item, in file order."""

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix  # `where` for a line is this and its number (file:line)
        self._where: list[int | str] = []
        self._action = bytearray()
        self._reason: list[str] = []
        self._counts = dict.fromkeys(ACTIONS, 0)

    def append(self, where: str, action: str, reason: str) -> None:
        number = where[len(self._prefix) :] if where.startswith(self._prefix) else ""
        if number.isascii() and number.isdigit() and str(int(number)) == number:
            self._where.append(int(number))
        else:
            self._where.append(where)
        self._action.append(ACTIONS.index(action))
        self._reason.append(reason)
        self._counts[action] += 1

    def count(self, action: str) -> int:
        return self._counts[action]

    def __len__(self) -> int:
        return len(self._action)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        where = self._where[index]
        return {
            "where": f"{self._prefix}{where}" if isinstance(where, int) else where,
            "action": ACTIONS[self._action[index]],
            "reason": self._reason[index],
        }

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for index in range(len(self)):
            yield self[index]


class ImportReport:
    def __init__(self, fmt: str, file: str, dry_run: bool) -> None:
        self.format = fmt
        self.file = file
        self.dry_run = dry_run
        self.actions = ImportActions(f"{file}:")

    def count(self, action: str) -> int:
        return self.actions.count(action)

    def _head(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "file": self.file,
            "dryRun": self.dry_run,
            "items": len(self.actions),
            "added": self.count("add"),
            "skipped": self.count("skip"),
            "proposed": self.count("propose"),
        }

    def to_json(self) -> dict[str, Any]:
        return {**self._head(), "actions": list(self.actions)}

    def json_chunks(self) -> Iterator[str]:
        """json.dumps(self.to_json(), ensure_ascii=False), a piece at a time: the actions of a
        large import are never all made into dicts at once."""
        head = json.dumps({**self._head(), "actions": []}, ensure_ascii=False)
        yield head[: -len("[]}")] + "["
        for start in range(0, len(self.actions), JSON_CHUNK):
            part = json.dumps(self.actions[start : start + JSON_CHUNK], ensure_ascii=False)
            yield (", " if start else "") + part[1:-1]
        yield "]}"
