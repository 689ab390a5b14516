"""The approximate-neighbour graph's file (engine/retrieval/ann_index.py): usearch's own
serialisation, then a trailer (JSON: format, generation, rows, dims, blob length, checksum),
its length and a magic.

Written to a temp file, synced and renamed (a crash leaves the old file or the new one), and
opened by mapping it, so that a cold process reads only the pages a search touches. A file
that is short, torn, of another format or dims, or of another generation is refused
(IndexFileRefused): the caller rebuilds, and a refused file never answers."""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

FORMAT = 1
MAGIC = b"GNOANN01"
_TAIL = 16  # the trailer's length (8 bytes), then MAGIC


class IndexFileRefused(ValueError):
    """The file cannot answer: rebuild the index (and save it again)."""


class DamagedIndexFile(IndexFileRefused):
    """Short, torn, overwritten, or not this module's format."""


class StaleIndexFile(IndexFileRefused):
    """A sound file of another generation (or model) than the caller expects."""


def checksum(data: memoryview | bytes | np.ndarray) -> int:
    """The bytes as 64-bit words (the last zero-padded), summed wrapping: a torn or zeroed
    block changes it, at memory speed (as engine/retrieval/array_file.py does)."""
    raw = np.frombuffer(data, dtype=np.uint8)
    whole = len(raw) // 8 * 8
    total = int(raw[:whole].view(np.uint64).sum(dtype=np.uint64))
    return (total + int.from_bytes(raw[whole:].tobytes(), "little")) % 2**64


def write_graph(path: Path, serialise: Callable[[str], Any], header: dict[str, int]) -> None:
    """Write what `serialise(temp path)` writes, then the trailer (`header`: generation, rows,
    dims), to `path` atomically: temp file, fsync, rename, and the folder synced."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        serialise(str(temp))
        with temp.open("r+b") as out:
            blob_length = out.seek(0, os.SEEK_END)
            with mmap.mmap(out.fileno(), blob_length, access=mmap.ACCESS_READ) as blob:
                summed = checksum(memoryview(blob))
            trailer = json.dumps(
                {"format": FORMAT, **header, "blob": blob_length, "checksum": summed}
            ).encode()
            out.write(trailer + len(trailer).to_bytes(8, "little") + MAGIC)
            out.flush()
            os.fsync(out.fileno())
        temp.replace(path)
    finally:
        temp.unlink(missing_ok=True)
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)  # the rename itself survives a power loss
    finally:
        os.close(folder)


def map_graph(
    path: Path, *, dims: int, generation: int | None
) -> tuple[mmap.mmap, memoryview, dict[str, Any]]:
    """The file at `path` mapped, the view of its graph's bytes (checksum verified) and its
    trailer; refused when damaged, of other dims, or of a generation other than `generation`
    (None: any)."""
    with path.open("rb") as source:
        try:
            mapped = mmap.mmap(source.fileno(), 0, access=mmap.ACCESS_READ)
        except ValueError as error:  # an empty file
            raise DamagedIndexFile(f"{path}: {error}") from error
    blob: memoryview | None = None
    try:
        header = _trailer(mapped, path)
        if header["dims"] != dims:
            raise StaleIndexFile(f"{path}: rows of {header['dims']} dims, not {dims}")
        if generation is not None and header["generation"] != generation:
            raise StaleIndexFile(
                f"{path}: generation {header['generation']}, expected {generation}"
            )
        blob = memoryview(mapped)[: header["blob"]]
        if checksum(blob) != header["checksum"]:
            raise DamagedIndexFile(f"{path}: checksum mismatch (torn or overwritten)")
    except BaseException:
        if blob is not None:
            blob.release()
        mapped.close()
        raise
    return mapped, blob, header


def _trailer(mapped: mmap.mmap, path: Path) -> dict[str, Any]:
    size = len(mapped)
    if size < _TAIL or mapped[size - len(MAGIC) :] != MAGIC:
        raise DamagedIndexFile(f"{path}: no trailer (short, torn, or not an index file)")
    length = int.from_bytes(mapped[size - _TAIL : size - len(MAGIC)], "little")
    if length > size - _TAIL:
        raise DamagedIndexFile(f"{path}: trailer length {length} past the file's start")
    try:
        header: dict[str, Any] = json.loads(mapped[size - _TAIL - length : size - _TAIL])
    except ValueError as error:
        raise DamagedIndexFile(f"{path}: unreadable trailer") from error
    if header.get("format") != FORMAT:
        raise StaleIndexFile(f"{path}: format {header.get('format')}, not {FORMAT}")
    if header.get("blob") != size - _TAIL - length:
        raise DamagedIndexFile(f"{path}: {size} bytes, not what the trailer says")
    return header
