"""The index kept on disk between processes, so that opening a large store does not read and
embed every fact again: one file per model under `<home>/.index/`, read in one go.

Building the index of 100k facts from the database takes seconds (every row decoded, every
text tokenised); a CLI call or a fresh MCP server would pay that each time. So a process
that has built (or caught up a long way on) an index writes it out: the facts' fields, the
vectors, the BM25 and word-alignment postings, with the change log position it reflects.
The next process loads it and applies the changes since, as it would after any other write.

A cold CLI call pays the load on every run, so it has no loop per fact where numpy can do
the work: the file (engine/retrieval/array_file.py) is arrays read as views of one buffer and
text columns split in one call; the per-position arrays the index derives from the facts
(expiry, tie-break keys, scope and collection postings) are stored as they are; the vector
blocks come with room for the rows the changes since will append.

The file is derived data, like the vectors table: checked on load (format, model, the store
it belongs to, a change log position the store still has, and the file's own checks of size,
layout and checksum); anything off costs one rebuild and nothing else. It holds only numbers
and text, no pickle, so a file planted in the home can at worst make a process rebuild."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from engine.retrieval.array_file import Arrays, Damaged, read
from engine.retrieval.array_file import write as write_file
from engine.retrieval.fact_columns import (
    TEXT_FIELDS,
    FactColumns,
    KeyedPositions,
    TextColumn,
    ValueColumn,
)
from engine.retrieval.growing import GrowingArray, GrowingRows, Postings
from engine.retrieval.lexical import Bm25Index
from engine.retrieval.quantized import QuantizedRows
from engine.retrieval.semantic_graph import first_holders
from engine.retrieval.snapshot import Snapshot
from engine.retrieval.word_alignment import FlatPostings, WordAlignment, WordVectors

# 3: the vector rows in int8 with a scale each (engine/retrieval/quantized.py); 4: the facts
# as their columns (engine/retrieval/fact_columns.py), read as views without a str per field.
FORMAT = 4
# Below this many facts a rebuild is cheaper than reading and writing a file.
PERSIST_MIN_FACTS = 2_000
# The big row blocks (every fact's vector rows, the word vectors): read with room to grow, so
# that the changes a reader applies after loading append in place (without room the first
# append copied the whole block: 20 MB at 10k facts, ~25 ms a call).
_ROOMY = ("rows", "matrix")
# The fact fields whose values are text (the others: a source or none, and tuples of text).
_PLAIN_VALUES = ("collection", "caller", "session")
_TUPLE_VALUES = ("scopes", "supersedes")


def index_file(home: Path, model_id: str | None) -> Path:
    name = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in (model_id or "lexical"))
    return home / ".index" / f"snapshot-{name}.idx"


def graph_file(index: Path) -> Path:
    """Where the approximate-neighbour graph of the index kept at `index` is kept."""
    return index.with_suffix(".graph")


# -- what the folder keeps ---------------------------------------------------------------------
# One file per model, replaced whole (array_file.write: a temp file renamed over it), so no old
# copies pile up. What can: the temp file of a process killed while writing (as large as the
# index), and the files of models no longer used. `sweep` (run by engine/storage/compaction.py)
# removes both; a file removed wrongly costs one rebuild and nothing else.

# Another model's file not written for this long belongs to a model no longer used.
INDEX_IDLE_DAYS = 30
# A temp file this old is abandoned even when its pid is alive again (a pid used anew).
TEMP_ABANDONED_S = 24 * 3600
_TEMP = re.compile(r"^\.snapshot-.+\.(?:idx\.(\d+)-\d+|graph\.(\d+))\.tmp$")
_INDEX = re.compile(r"^snapshot-.+\.(?:idx|graph)$")


def sweep(folder: Path, *, keep: Path, now: float | None = None) -> list[Path]:
    """Remove from the index folder the temp files of processes that are gone (or that are
    a day old) and the index files other than `keep` (this process's) that were not written
    for INDEX_IDLE_DAYS; what was removed. Other files are not ours and stay."""
    moment = time.time() if now is None else now
    removed: list[Path] = []
    try:
        entries = list(folder.iterdir())
    except OSError:
        return removed  # no folder (no index kept yet), or not readable
    for entry in entries:
        try:
            age = moment - entry.stat().st_mtime
            temp = _TEMP.match(entry.name)
            if temp is not None:
                pid = int(temp.group(1) or temp.group(2))
                stale = age > TEMP_ABANDONED_S or not _alive(pid)
            else:
                stale = (
                    _INDEX.match(entry.name) is not None
                    and entry.name not in (keep.name, graph_file(keep).name)
                    and age > INDEX_IDLE_DAYS * 86_400
                )
            if stale:
                entry.unlink()
                removed.append(entry)
        except OSError:
            continue  # gone meanwhile, or not ours to remove
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process, or a platform without signal 0
        return True
    return True


# -- writing -----------------------------------------------------------------------------------


def _csr(lists: Sequence[Postings]) -> dict[str, np.ndarray]:
    pairs = [postings.arrays() for postings in lists]
    lengths = np.asarray([len(ids) for ids, _ in pairs], dtype=np.int64)
    return {
        "offsets": np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        "ids": np.concatenate([ids for ids, _ in pairs]) if pairs else np.zeros(0, np.int64),
        "values": np.concatenate([v for _, v in pairs]) if pairs else np.zeros(0, np.float32),
        "live": np.asarray([postings.live for postings in lists], dtype=np.int64),
    }


def prepare(snapshot: Snapshot, store_id: str, model_id: str | None) -> dict[str, Any]:
    """What `write` puts in the file. Call with snapshot.lock held: the arrays are copied or
    are views of append-only storage, so writing them can run after the lock is released."""
    lexical, alignment, facts = snapshot.lexical, snapshot.alignment, snapshot.facts
    # The append-only columns go as views; `live` (set in place) as a copy.
    texts, arrays = _fact_arrays(facts)
    texts["scope_names"] = list(snapshot._by_scope)
    texts["collection_names"] = list(snapshot._by_collection)
    texts["bm25_terms"] = list(lexical._postings)
    texts["words"] = list(alignment._index) if alignment is not None else []
    arrays.update(
        live=snapshot.live.copy(),
        expiry=snapshot._expiry.view(),
        id_key=snapshot._id_key.view(),
        hash_key=snapshot._hash_key.view(),
        lengths=lexical._lengths[: lexical.positions_seen].copy(),
    )
    for prefix, lists in (
        ("scope_", list(snapshot._by_scope.values())),
        ("collection_", list(snapshot._by_collection.values())),
        ("bm25_", list(lexical._postings.values())),
        *((("align_", alignment._postings),) if alignment is not None else ()),
    ):
        arrays.update({f"{prefix}{key}": value for key, value in _csr(lists).items()})
    if snapshot.rows is not None:
        # The whole-text vectors are each block's first row.
        arrays.update(
            rows=snapshot.rows.values,
            row_scales=snapshot.rows.scales.copy(),
            starts=snapshot.starts.copy(),
        )
    if alignment is not None:
        arrays["matrix"] = alignment._matrix.view()
    header = {
        "format": FORMAT,
        "store": store_id,
        "model": model_id,
        "generation": snapshot.generation,
        "changeSeq": snapshot.change_seq,
        "semantic": snapshot.semantic,
        "count": len(facts),
        "bm25": [lexical.size, lexical._total_length, lexical.positions_seen],
        "alignment": [alignment.size, alignment.positions_seen] if alignment is not None else [],
    }
    return {"header": header, "arrays": arrays, "texts": texts}


def write(prepared: dict[str, Any], path: Path) -> None:
    """The file, whole or not at all (engine/retrieval/array_file.py)."""
    write_file(path, prepared["header"], prepared["arrays"], prepared["texts"], roomy=_ROOMY)


# -- reading -----------------------------------------------------------------------------------


def load(
    path: Path,
    *,
    store_id: str,
    model_id: str | None,
    dims: int,
    word_vectors: WordVectors | None,
    newest_change: int,
) -> Snapshot | None:
    """The index in `path`, or None when there is none or it does not belong to this store,
    model and change log (then the caller rebuilds)."""

    def ours(header: dict[str, Any]) -> bool:
        return (
            header.get("format") == FORMAT
            and header.get("store") == store_id
            and header.get("model") == model_id
            and int(header["changeSeq"]) <= newest_change
            and bool(header["semantic"]) == (model_id is not None)
        )

    try:
        found = read(path, ours, roomy=_ROOMY)
        return None if found is None else _restore(found[1], found[0], dims, word_vectors)
    except (OSError, ValueError, KeyError, TypeError, IndexError, UnicodeDecodeError):
        return None  # Damaged is a ValueError


def _growing(data: Arrays, name: str) -> GrowingRows:
    """A roomy block as growing rows: its rows filled, the room after them free."""
    block, filled = data.block(name)
    rows = GrowingRows.of(block)
    rows.filled = filled
    return rows


def _restore(
    data: Arrays, header: dict[str, Any], dims: int, word_vectors: WordVectors | None
) -> Snapshot:
    semantic = bool(header["semantic"])
    count = int(header["count"])
    snapshot = Snapshot(
        int(header["generation"]), int(header["changeSeq"]), dims, word_vectors, semantic=semantic
    )

    texts = data.texts
    live = data["live"].astype(bool)
    if len(live) != count:
        raise Damaged("live")
    snapshot.facts = _fact_columns(data, count)
    snapshot._live = GrowingArray.of(live)
    snapshot._expiry = GrowingArray.of(_sized(data["expiry"], count, np.float64))
    snapshot._id_key = GrowingArray.of(_sized(data["id_key"], count, np.uint64))
    snapshot._hash_key = GrowingArray.of(_sized(data["hash_key"], count, np.uint64))
    snapshot._by_id = KeyedPositions(snapshot._id_key)
    snapshot._by_hash = KeyedPositions(snapshot._hash_key)
    snapshot._first = GrowingArray.of(first_holders(snapshot._hash_key.view()))
    snapshot.distinct_texts = int(np.count_nonzero(snapshot._first.view() == np.arange(count)))
    snapshot._by_id.sort()
    snapshot._by_hash.sort()
    snapshot._by_scope = _postings_of(data, "scope_", texts("scope_names"), np.int8)
    snapshot._by_collection = _postings_of(data, "collection_", texts("collection_names"), np.int8)
    snapshot.live_count = int(live.sum())
    if semantic:
        rows, starts = data["rows"], data["starts"].astype(np.int64)
        scales = data["row_scales"]
        if rows.ndim != 2 or rows.shape[1] != max(dims, 1) or len(starts) != count:
            raise Damaged("rows")
        if rows.dtype != np.int8 or scales.ndim != 1 or len(scales) != len(rows):
            raise Damaged("row_scales")
        if count and (int(starts.min()) < 0 or int(starts.max()) >= len(rows)):
            raise Damaged("starts")
        snapshot._rows = QuantizedRows.of(_growing(data, "rows"), scales)
        snapshot._starts = GrowingArray.of(starts)
    lexical = Bm25Index()
    lexical.size, lexical._total_length, lexical.positions_seen = (int(v) for v in header["bm25"])
    lexical._lengths = data["lengths"].astype(np.float32)
    terms = texts("bm25_terms")
    lexical._postings = _postings_of(data, "bm25_", terms, np.float32)
    lexical._vocabulary = terms
    snapshot.lexical = lexical
    if word_vectors is not None and semantic:
        alignment = WordAlignment([], word_vectors)
        alignment.size, alignment.positions_seen = (int(v) for v in header["alignment"])
        words = texts("words")
        alignment._index = {word: slot for slot, word in enumerate(words)}
        alignment._postings = list(_postings_of(data, "align_", words, np.int64).values())
        # The same layout a query gathers from (validated by _postings_of): no copy to make.
        alignment._flat = FlatPostings(data["align_offsets"], data["align_ids"])
        matrix = data["matrix"]
        if matrix.ndim != 2 or matrix.shape[1] != max(dims, 1) or len(matrix) != len(words):
            raise Damaged("matrix")
        alignment._matrix = _growing(data, "matrix")
        snapshot.alignment = alignment
    return snapshot


def _fact_arrays(facts: FactColumns) -> tuple[dict[str, list[str]], dict[str, np.ndarray]]:
    """The fact columns as the file holds them: each text column's bytes and bounds, each
    value column's codes and its table of values (text, with a null mask for `source`, and
    the tuples flattened with their lengths)."""
    texts: dict[str, list[str]] = {}
    arrays: dict[str, np.ndarray] = {
        "created_us": facts.created_us.view(),
        "expires_us": facts.expires_us.view(),
    }
    for name, column in facts.texts.items():
        arrays[f"fact_{name}"], arrays[f"fact_{name}_bounds"] = column.arrays()
    for name, values in facts.values.items():
        arrays[f"fact_{name}_codes"] = values.codes.view()
    for name in _PLAIN_VALUES:
        texts[f"fact_{name}_values"] = list(facts.values[name].values)
    sources = facts.values["source"].values
    texts["fact_source_values"] = [source or "" for source in sources]
    arrays["fact_source_null"] = np.asarray([s is None for s in sources], dtype=np.bool_)
    for name in _TUPLE_VALUES:
        groups = facts.values[name].values
        texts[f"fact_{name}_values"] = [item for group in groups for item in group]
        arrays[f"fact_{name}_counts"] = np.asarray([len(g) for g in groups], dtype=np.int64)
    return texts, arrays


def _fact_columns(data: Arrays, count: int) -> FactColumns:
    """The facts' columns, over the file's arrays (no str made for any fact's field)."""
    texts = {
        name: TextColumn.of(data[f"fact_{name}"], data[f"fact_{name}_bounds"])
        for name in TEXT_FIELDS
    }

    def codes(name: str) -> np.ndarray:
        return _sized(data[f"fact_{name}_codes"], count, np.int32)

    values: dict[str, ValueColumn[Any]] = {
        name: ValueColumn.of(data.texts(f"fact_{name}_values"), codes(name))
        for name in _PLAIN_VALUES
    }
    sources: list[str | None] = list(data.texts("fact_source_values"))
    nulls = _sized(data["fact_source_null"], len(sources), np.bool_)
    for index in np.flatnonzero(nulls).tolist():
        sources[index] = None
    values["source"] = ValueColumn.of(sources, codes("source"))
    for name in _TUPLE_VALUES:
        flat = data.texts(f"fact_{name}_values")
        counts = data[f"fact_{name}_counts"]
        values[name] = ValueColumn.of(
            _groups(flat, _sized(counts, len(counts), np.int64)), codes(name)
        )
    created = _sized(data["created_us"], count, np.int64)
    return FactColumns.of(texts, values, created, _sized(data["expires_us"], count, np.int64))


def _sized(array: np.ndarray, count: int, dtype: type) -> np.ndarray:
    if array.ndim != 1 or len(array) != count or array.dtype != np.dtype(dtype):
        raise Damaged("per-fact array")
    return array


def _groups(flat: list[str], counts: np.ndarray) -> list[tuple[str, ...]]:
    """Each fact's tuple of a flat column (its scopes, its supersedes), by their counts."""
    if int(counts.sum()) != len(flat) or (len(counts) and int(counts.min()) < 0):
        raise Damaged("counts")
    if not flat:
        return [()] * len(counts)
    if int(counts.min()) == int(counts.max()) == 1:
        return list(zip(flat, strict=True))  # one scope a fact, the common case: no loop here
    ends = np.cumsum(counts).tolist()
    return [tuple(flat[end - n : end]) for end, n in zip(ends, counts.tolist(), strict=True)]


def _postings_of(data: Arrays, prefix: str, names: list[str], dtype: type) -> dict[str, Postings]:
    # Views into the file's arrays (postings are only read, and an append makes new arrays),
    # with the offsets as Python ints: per list, two slices and no copy.
    offsets, lives = data[f"{prefix}offsets"].tolist(), data[f"{prefix}live"].tolist()
    if not (len(offsets) == len(lives) + 1 == len(names) + 1):
        raise Damaged(prefix)  # the caller rebuilds
    ids = data[f"{prefix}ids"]
    values: np.ndarray = data[f"{prefix}values"].astype(dtype, copy=False)
    if offsets and (offsets[0] != 0 or offsets[-1] != len(ids) or len(values) != len(ids)):
        raise Damaged(prefix)
    return {
        name: Postings.of(ids[start:end], values[start:end], live)
        for name, start, end, live in zip(names, offsets[:-1], offsets[1:], lives, strict=True)
    }
