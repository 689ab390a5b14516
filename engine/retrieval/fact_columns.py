"""The index's facts, held as columns rather than one Python object per fact.

At 727k facts the facts as IndexedFact objects took about 690 MiB (a kilobyte a fact: the
object, thirteen str / tuple / datetime objects, each with its own header), more than the
int8 vector rows, and a million facts did not fit in 2 GB. Here a string field is its UTF-8
bytes one after another with where each begins (a byte a character and 8 bytes of bound), a
field with few distinct values (collection, caller, session, source, the scope set) is a
32-bit code into a table of those values, and the two datetimes are microseconds. A fact
becomes an IndexedFact again only when it is asked for: the matches a recall returns, the
candidates of a propose, the facts a change touches.

The record-id and content-hash lookups go the same way (`KeyedPositions`): a 64-bit number
per position, sorted once, instead of a dict with a str key per fact."""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import fields as dataclass_fields
from datetime import UTC, datetime, timedelta
from typing import Any, Generic, TypeVar, cast, overload

import numpy as np

from engine.retrieval.array_runs import expand_runs
from engine.retrieval.growing import GrowingArray
from engine.retrieval.results import IndexedFact as IndexedFact  # the seam's; kept here too

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
MICROSECOND = timedelta(microseconds=1)
NO_EXPIRY = int(np.iinfo(np.int64).max)  # expires_us of a fact that never expires
_HEX_ID = re.compile(r"mem-([0-9a-f]{16})")
_HEX_PREFIX = re.compile(r"[0-9a-f]{16}")


def microseconds(moment: datetime) -> int:
    """A timezone-aware datetime as microseconds since the epoch (exact, unlike a float)."""
    return (moment - EPOCH) // MICROSECOND


def moment_of(us: int) -> datetime:
    """The UTC datetime `microseconds` made the number of."""
    return EPOCH + timedelta(microseconds=us)


def record_id_key(record_id: str) -> int:
    """A record id as an unsigned 64-bit number, ordered as the ids are (`mem-` + 16 hex
    digits); any other id (not written by gno-tui) by a checksum, still deterministic."""
    matched = _HEX_ID.fullmatch(record_id)
    if matched:
        return int(matched.group(1), 16)
    return zlib.crc32(record_id.encode("utf-8", "surrogatepass"))


def hash_key(content_hash: str) -> int:
    """A content hash (SHA-256 hex) as a 64-bit number: its first 16 digits; any other text
    by a checksum. Equal keys are only candidates: the hash itself is compared after."""
    head = content_hash[:16]
    if _HEX_PREFIX.fullmatch(head):
        return int(head, 16)
    return zlib.crc32(content_hash.encode("utf-8", "surrogatepass"))


def _decoded(raw: bytes | bytearray) -> str:
    return raw.decode("utf-8", "surrogatepass")


class TextColumn:
    """Strings as UTF-8 bytes one after another: those read from the kept index (a view of
    its buffer, never copied), then those appended since."""

    __slots__ = ("_base", "_base_bounds", "_base_count", "_tail", "_tail_bounds")

    def __init__(self) -> None:
        self._base = np.zeros(0, dtype=np.uint8)
        self._base_bounds = np.zeros(1, dtype=np.int64)  # value i is base[b[i]:b[i + 1]]
        self._base_count = 0
        self._tail = bytearray()
        self._tail_bounds = GrowingArray(np.int64)
        self._tail_bounds.append(0)

    @classmethod
    def of(cls, data: np.ndarray, bounds: np.ndarray) -> TextColumn:
        """A column over these arrays (`bounds`: one more than the values, from 0 to the end
        of `data`, never decreasing); ValueError when they are not that."""
        if data.dtype != np.uint8 or data.ndim != 1 or bounds.ndim != 1 or not len(bounds):
            raise ValueError("text column arrays")
        if int(bounds[0]) != 0 or int(bounds[-1]) != len(data):
            raise ValueError("text column bounds")
        if len(bounds) > 1 and int(np.diff(bounds).min()) < 0:
            raise ValueError("text column bounds")
        column = cls()
        column._base, column._base_bounds = data, bounds.astype(np.int64, copy=False)
        column._base_count = len(bounds) - 1
        return column

    def __len__(self) -> int:
        return self._base_count + self._tail_bounds.filled - 1

    def __getitem__(self, index: int) -> str:
        if index < self._base_count:
            bounds = self._base_bounds
            return _decoded(self._base[bounds[index] : bounds[index + 1]].tobytes())
        bounds = self._tail_bounds.view()
        index -= self._base_count
        return _decoded(self._tail[bounds[index] : bounds[index + 1]])

    def take(self, indices: Sequence[int]) -> list[str]:
        """The values at `indices`: their bounds read in one gather, the bytes sliced from
        one buffer view (a recall's 256 matches, in a fraction of indexing each)."""
        wanted = np.asarray(indices, dtype=np.int64)
        in_base = wanted < self._base_count
        found: list[str] = [""] * len(wanted)
        for inside, buffer, bounds, shift in (
            (in_base, self._base.data, self._base_bounds, 0),
            (~in_base, memoryview(self._tail), self._tail_bounds.view(), self._base_count),
        ):
            where = np.flatnonzero(inside)
            if not len(where):
                continue
            rows = wanted[where] - shift
            for slot, begin, end in zip(
                where.tolist(), bounds[rows].tolist(), bounds[rows + 1].tolist(), strict=True
            ):
                found[slot] = str(buffer[begin:end], "utf-8", "surrogatepass")
        return found

    def append(self, value: str) -> None:
        self._tail += value.encode("utf-8", "surrogatepass")
        self._tail_bounds.append(len(self._tail))

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(data, bounds) of every value, as `of` takes them: views when nothing was appended
        since the column was read, else one copy."""
        if self._tail_bounds.filled == 1:
            return self._base, self._base_bounds
        tail = np.frombuffer(bytes(self._tail), dtype=np.uint8)
        data = np.concatenate([self._base, tail])
        bounds = np.concatenate([self._base_bounds, self._tail_bounds.view()[1:] + len(self._base)])
        return data, bounds


V = TypeVar("V", bound=Hashable)


class ValueColumn(Generic[V]):
    """A field with few distinct values (collections, callers, sessions, scope sets): a
    32-bit code a row into a table of the values, each value held once."""

    __slots__ = ("_code_of", "codes", "values")

    def __init__(self) -> None:
        self.values: list[V] = []
        self._code_of: dict[V, int] = {}
        self.codes = GrowingArray(np.int32)

    @classmethod
    def of(cls, values: list[V], codes: np.ndarray) -> ValueColumn[V]:
        if codes.ndim != 1 or (
            len(codes) and not 0 <= int(codes.min()) <= int(codes.max()) < len(values)
        ):
            raise ValueError("value column codes")
        column: ValueColumn[V] = cls()
        column.values = values
        column._code_of = {value: code for code, value in enumerate(values)}
        if len(column._code_of) != len(values):
            raise ValueError("value column repeats a value")
        column.codes = GrowingArray.of(codes.astype(np.int32, copy=False))
        return column

    def __len__(self) -> int:
        return self.codes.filled

    def __getitem__(self, index: int) -> V:
        return cast(V, self.values[self.codes.view()[index]])

    def take(self, indices: Sequence[int]) -> list[V]:
        values = self.values
        return [values[code] for code in self.codes.view()[np.asarray(indices, np.int64)].tolist()]

    def append(self, value: V) -> None:
        code = self._code_of.get(value)
        if code is None:
            code = self._code_of[value] = len(self.values)
            self.values.append(value)
        self.codes.append(code)


# The fields held as text columns and as value columns (the rest: the two datetimes).
TEXT_FIELDS = ("record_id", "docid", "uri", "text", "content_hash")
VALUE_FIELDS = ("collection", "caller", "session", "source", "scopes", "supersedes")


_FIELD_ORDER = [field.name for field in dataclass_fields(IndexedFact)]


class FactColumns(Sequence[IndexedFact]):
    """The facts of the index by position, as columns; `facts[p]` makes the IndexedFact."""

    def __init__(self) -> None:
        self.texts = {name: TextColumn() for name in TEXT_FIELDS}
        self.values: dict[str, ValueColumn[Any]] = {name: ValueColumn() for name in VALUE_FIELDS}
        self.created_us = GrowingArray(np.int64)
        self.expires_us = GrowingArray(np.int64, NO_EXPIRY)

    @classmethod
    def of(
        cls,
        texts: dict[str, TextColumn],
        values: dict[str, ValueColumn[Any]],
        created_us: np.ndarray,
        expires_us: np.ndarray,
    ) -> FactColumns:
        """Columns read from the kept index; ValueError unless every one has a row a fact."""
        columns = cls()
        columns.texts, columns.values = texts, values
        columns.created_us = GrowingArray.of(created_us.astype(np.int64, copy=False))
        columns.expires_us = GrowingArray.of(expires_us.astype(np.int64, copy=False))
        lengths = {len(text) for text in texts.values()} | {len(v) for v in values.values()}
        lengths |= {len(created_us), len(expires_us)}
        if len(lengths) != 1 or set(texts) != set(TEXT_FIELDS) or set(values) != set(VALUE_FIELDS):
            raise ValueError("fact columns")
        return columns

    def __len__(self) -> int:
        return self.created_us.filled

    @overload
    def __getitem__(self, position: int) -> IndexedFact: ...

    @overload
    def __getitem__(self, position: slice) -> list[IndexedFact]: ...

    def __getitem__(self, position: int | slice) -> IndexedFact | list[IndexedFact]:
        if isinstance(position, slice):
            return [self[p] for p in range(*position.indices(len(self)))]
        if not -len(self) <= position < len(self):
            raise IndexError(position)
        position %= len(self)
        texts, values = self.texts, self.values
        expires = int(self.expires_us.view()[position])
        return IndexedFact(
            record_id=texts["record_id"][position],
            docid=texts["docid"][position],
            uri=texts["uri"][position],
            collection=values["collection"][position],
            text=texts["text"][position],
            content_hash=texts["content_hash"][position],
            scopes=values["scopes"][position],
            caller=values["caller"][position],
            session=values["session"][position],
            created_at=moment_of(int(self.created_us.view()[position])),
            source=values["source"][position],
            supersedes=values["supersedes"][position],
            expires_at=None if expires == NO_EXPIRY else moment_of(expires),
        )

    def take(self, positions: Sequence[int]) -> list[IndexedFact]:
        """The facts at these positions, made column by column."""
        if not len(positions):
            return []
        fields: dict[str, list[Any]] = {
            name: column.take(positions) for name, column in self.texts.items()
        }
        fields.update({name: column.take(positions) for name, column in self.values.items()})
        wanted = np.asarray(positions, dtype=np.int64)
        fields["created_at"] = list(map(moment_of, self.created_us.view()[wanted].tolist()))
        fields["expires_at"] = [
            None if us == NO_EXPIRY else moment_of(us)
            for us in self.expires_us.view()[wanted].tolist()
        ]
        ordered = [fields[name] for name in _FIELD_ORDER]
        return [IndexedFact(*row) for row in zip(*ordered, strict=True)]

    def __iter__(self) -> Iterator[IndexedFact]:
        return (self[position] for position in range(len(self)))

    def text(self, position: int) -> str:
        return self.texts["text"][position]

    def record_id(self, position: int) -> str:
        return self.texts["record_id"][position]

    def content_hash(self, position: int) -> str:
        return self.texts["content_hash"][position]

    def collection(self, position: int) -> str:
        column = self.values["collection"]
        return str(column[position])

    def scopes(self, position: int) -> tuple[str, ...]:
        column = self.values["scopes"]
        return tuple(column[position])

    def append(self, fact: IndexedFact) -> None:
        for name, column in self.texts.items():
            column.append(getattr(fact, name))
        for name, values in self.values.items():
            values.append(getattr(fact, name))
        self.created_us.append(microseconds(fact.created_at))
        self.expires_us.append(microseconds(fact.expires_at) if fact.expires_at else NO_EXPIRY)


class KeyedPositions:
    """Positions by a 64-bit key (a record id's, a content hash's): those known when it was
    last sorted in two sorted arrays, those added since in a dict, sorted in again once they
    are a quarter as many. A key can match several positions (a record indexed again after a
    change, a repeated hash, two ids with the same checksum): the caller checks the field."""

    SORT_MIN = 4096

    def __init__(self, keys: GrowingArray) -> None:
        self._keys = keys  # the key of every position, kept by the owner
        self._sorted = np.zeros(0, dtype=np.uint64)
        self._order = np.zeros(0, dtype=np.int64)  # positions, in key order
        self._recent: dict[int, list[int]] = {}
        self._recent_count = 0

    def sort(self) -> None:
        keys = self._keys.view()
        self._order = np.argsort(keys, kind="stable")
        self._sorted = keys[self._order]
        self._recent, self._recent_count = {}, 0

    def added(self, position: int, key: int) -> None:
        """The next position (the one after the last), its key already in the owner's keys."""
        self._recent.setdefault(key, []).append(position)
        self._recent_count += 1
        if self._recent_count >= max(self.SORT_MIN, len(self._order) // 4):
            self.sort()

    def positions(self, key: int) -> list[int]:
        """The positions with this key, in increasing order."""
        wanted = np.uint64(key)
        low = int(np.searchsorted(self._sorted, wanted, side="left"))
        high = int(np.searchsorted(self._sorted, wanted, side="right"))
        return [*self._order[low:high].tolist(), *self._recent.get(key, [])]

    def positions_many(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """`positions` for many keys at once: every position with one of `keys` (uint64),
        and for each the index in `keys` of its key. No Python step per key: the keys are
        sorted and searched in the sorted positions, and the positions added since (the
        last ones, in order) are searched among the keys."""
        wanted = keys.astype(np.uint64)
        order = np.argsort(wanted, kind="stable")
        needles = wanted[order]
        in_sorted, of_needle = _equal_ranges(self._sorted, needles)
        found, owners = self._order[in_sorted], order[of_needle]
        if not self._recent:
            return found, owners
        base = len(self._order)
        later = self._keys.view()[base : base + self._recent_count]
        of_needle, in_later = _equal_ranges(needles, later)
        return np.concatenate([found, base + in_later]), np.concatenate([owners, order[of_needle]])

    def matching(self, key: int, field: Callable[[int], str], value: str) -> list[int]:
        """The positions with this key whose field holds `value`, in increasing order."""
        return [position for position in self.positions(key) if field(position) == value]


def _equal_ranges(sorted_keys: np.ndarray, probes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every pair (i, j) with sorted_keys[i] == probes[j]: the i, then the j."""
    low = np.searchsorted(sorted_keys, probes, side="left")
    high = np.searchsorted(sorted_keys, probes, side="right")
    counts = high - low
    probe_of = np.repeat(np.arange(len(probes), dtype=np.int64), counts)
    return expand_runs(low, counts), probe_of
