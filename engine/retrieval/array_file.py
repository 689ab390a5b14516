"""A file of named numpy arrays and text columns behind a JSON header, made to be read in one
go (engine/retrieval/persisted.py keeps the ranking index in one): a magic line, the header,
then the arrays, each at an aligned offset, that become numpy views of one buffer read. A text
column is its values joined on a separator none of them holds (chosen when written), so 10k
strings come back in one `str.split`. Blocks named `roomy` are stored last and read each into
an array with free rows after them, for a reader that appends rows.

Written to a temp file, synced and renamed into place (a crash or a power loss leaves the old
file or the new one, never a mix); read back only when its size, every array's place and
shape, and a checksum over all of them agree with the header. It holds numbers and text, no
pickle: a file planted in its place can at worst be refused."""

from __future__ import annotations

import json
import os
import struct
import threading
from collections.abc import Callable, Sequence
from io import BufferedReader
from pathlib import Path
from typing import Any, cast

import numpy as np

MAGIC = b"GNOIDX02"
_LEAD = len(MAGIC) + 8  # the magic, then the header's length
ALIGN = 64  # every array starts at a multiple of this (and of any item size)
# Separators tried for a text column, first free one wins: controls no fact text holds
# (clean_text refuses them), then private-use characters.
_SEPARATORS = ["\x1f", "\x1e", "\x1d", "\x1c", *(chr(c) for c in range(0xE000, 0xE100))]
_AS_JSON = ""  # the column is a JSON list: no separator was free


class Damaged(ValueError):
    """The file does not hold what its header says."""


def _aligned(size: int) -> int:
    return -(-size // ALIGN) * ALIGN


def _checksum(array: np.ndarray) -> int:
    """An array's bytes as 64-bit words (the last one zero-padded), summed wrapping: a torn or
    zeroed block changes it, and it costs a few milliseconds for tens of MB, where a CRC costs
    tens. The file's checksum is the sum of its arrays'."""
    raw = array.reshape(-1).view(np.uint8)
    whole = len(raw) // 8 * 8
    total = int(raw[:whole].view(np.uint64).sum(dtype=np.uint64))
    return (total + int.from_bytes(raw[whole:].tobytes(), "little")) % 2**64


def _text_column(values: Sequence[str]) -> tuple[np.ndarray, str]:
    """The values joined on a separator none of them holds, as UTF-8 bytes; when every
    separator is taken (text made to hold them all), a JSON list instead (separator "")."""
    for separator in _SEPARATORS:
        if not any(separator in value for value in values):
            data = separator.join(values).encode("utf-8", "surrogatepass")
            return np.frombuffer(data, dtype=np.uint8), separator
    return np.frombuffer(json.dumps(list(values)).encode("ascii"), dtype=np.uint8), _AS_JSON


def write(
    path: Path,
    header: dict[str, Any],
    arrays: dict[str, np.ndarray],
    texts: dict[str, Sequence[str]],
    *,
    roomy: Sequence[str] = (),
) -> None:
    """The file, whole or not at all. `header` is kept as given, beside the layout."""
    stored = {name: np.ascontiguousarray(array) for name, array in arrays.items()}
    columns: dict[str, list[Any]] = {}  # name -> [separator, how many values]
    for name, values in texts.items():
        stored[f"text_{name}"], separator = _text_column(values)
        columns[name] = [separator, len(values)]
    places: dict[str, list[Any]] = {}  # name -> [dtype, shape, offset, nbytes]
    size = 0
    for name in sorted(stored, key=lambda name: name in roomy):  # the roomy blocks last
        array = stored[name]
        places[name] = [array.dtype.str, list(array.shape), size, array.nbytes]
        size += _aligned(array.nbytes)
    payload = np.zeros(size, dtype=np.uint8)
    for name, array in stored.items():
        offset, nbytes = places[name][2:]
        payload[offset : offset + nbytes] = array.view(np.uint8).reshape(-1)
    total = sum(map(_checksum, stored.values())) % 2**64
    layout = {"arrays": places, "texts": columns, "size": size, "sum": str(total)}
    encoded = json.dumps({**header, "layout": layout}, ensure_ascii=False).encode("utf-8")
    lead = MAGIC + struct.pack("<Q", len(encoded)) + encoded
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        with temp.open("wb") as out:
            out.write(lead + bytes(_aligned(len(lead)) - len(lead)))
            out.write(payload.data)
            out.flush()
            os.fsync(out.fileno())
        temp.replace(path)
    finally:
        temp.unlink(missing_ok=True)


def read(
    path: Path, accept: Callable[[dict[str, Any]], bool], *, roomy: Sequence[str] = ()
) -> tuple[dict[str, Any], Arrays] | None:
    """The header and arrays of the file, or None when it is not one of these files, `accept`
    refuses its header, or it does not hold what the header says. Raises OSError when it
    cannot be read, and Damaged (or KeyError, TypeError) for a header of the wrong shape."""
    with path.open("rb") as source:
        lead = source.read(_LEAD)
        if len(lead) != _LEAD or lead[: len(MAGIC)] != MAGIC:
            return None
        (length,) = struct.unpack("<Q", lead[len(MAGIC) :])
        if length > 1 << 26:
            return None
        header = json.loads(source.read(length).decode("utf-8"))
        if not isinstance(header, dict) or not accept(header):
            return None
        layout, start = header["layout"], _aligned(_LEAD + length)
        if os.fstat(source.fileno()).st_size != start + int(layout["size"]):
            return None  # torn, or not what the header says (and never a huge buffer)
        arrays = Arrays.read(source, start, layout, roomy)
    if sum(map(_checksum, arrays.all())) % 2**64 != int(layout["sum"]):
        return None
    return header, arrays


def room(rows: int) -> int:
    """Free rows after a roomy block (pages never touched cost nothing until used)."""
    return max(1024, rows // 4)


class Arrays:
    """The arrays by name: views into the one buffer read, and the roomy blocks, each in an
    array of its own. Each is checked to lie inside the file and to be what the header says."""

    def __init__(
        self, payload: np.ndarray, layout: dict[str, Any], blocks: dict[str, np.ndarray]
    ) -> None:
        self._payload, self._places, self._blocks = payload, layout["arrays"], blocks
        self._columns: dict[str, list[Any]] = layout["texts"]

    @classmethod
    def read(
        cls, source: BufferedReader, start: int, layout: dict[str, Any], roomy: Sequence[str]
    ) -> Arrays:
        places = layout["arrays"]
        ordered = sorted((places[name][2], name) for name in roomy if name in places)
        small = ordered[0][0] if ordered else int(layout["size"])
        source.seek(start)
        payload = np.empty(small, dtype=np.uint8)
        if source.readinto(payload.data) != small:
            raise Damaged("payload")
        blocks: dict[str, np.ndarray] = {}
        for offset, name in ordered:
            dtype_name, shape, _, nbytes = places[name]
            dtype = np.dtype(dtype_name)
            if dtype.hasobject or len(shape) != 2 or offset < small or offset % ALIGN:
                raise Damaged(name)
            rows, width = (int(n) for n in shape)
            if rows * width * dtype.itemsize != nbytes:
                raise Damaged(name)
            block = np.empty((rows + room(rows), width), dtype=dtype)
            source.seek(start + offset)
            if source.readinto(block[:rows].reshape(-1).view(np.uint8).data) != nbytes:
                raise Damaged(name)
            blocks[name] = block
        return cls(payload, layout, blocks)

    def all(self) -> list[np.ndarray]:
        return [self[name] for name in self._places]

    def block(self, name: str) -> tuple[np.ndarray, int]:
        """A roomy block whole (its room included) and how many of its rows are filled."""
        return self._blocks[name], int(self._places[name][1][0])

    def __getitem__(self, name: str) -> np.ndarray:
        dtype_name, shape, offset, nbytes = self._places[name]
        if name in self._blocks:
            return self._blocks[name][: int(shape[0])]
        dtype = np.dtype(dtype_name)
        if dtype.hasobject or offset % ALIGN or offset + nbytes > len(self._payload):
            raise Damaged(name)
        if int(np.prod(shape)) * dtype.itemsize != nbytes:
            raise Damaged(name)
        return cast(np.ndarray, self._payload[offset : offset + nbytes].view(dtype).reshape(shape))

    def texts(self, name: str) -> list[str]:
        """A text column: its values, as many as were written."""
        separator, count = self._columns[name]
        if not count:
            return []
        joined = self[f"text_{name}"].tobytes().decode("utf-8", "surrogatepass")
        if separator == _AS_JSON:
            try:
                values = json.loads(joined)
            except ValueError:
                raise Damaged(name) from None
        else:
            values = joined.split(separator)
        if not isinstance(values, list) or len(values) != count:
            raise Damaged(name)
        return values
