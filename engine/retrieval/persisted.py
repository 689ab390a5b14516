"""The index kept on disk between processes, so that opening a large store does not read and
embed every fact again: one file per model under `<home>/.index/`, read in one go.

Building the index of 100k facts from the database takes seconds (every row decoded, every
text tokenised); a CLI call or a fresh MCP server would pay that each time. So a process
that has built (or caught up a long way on) an index writes it out: the facts' fields, the
vectors, the BM25 and word-alignment postings, with the change log position it reflects.
The next process loads it and applies the changes since, as it would after any other write.

The file is derived data, like the vectors table: it is written to a temp file and renamed,
checked on load (format, model, the store it belongs to, a change log position the store
still has) and ignored when anything is off, which costs one rebuild and nothing else. It is
NumPy's .npz format read without pickle, so a file planted in the home can at worst make a
process rebuild."""

from __future__ import annotations

import json
import os
import threading
import zipfile
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from engine.retrieval.growing import GrowingArray, GrowingRows, Postings
from engine.retrieval.lexical import Bm25Index
from engine.retrieval.snapshot import (
    EPOCH,
    MICROSECOND,
    IndexedFact,
    Snapshot,
    record_id_key,
)
from engine.retrieval.word_alignment import WordAlignment, WordVectors

FORMAT = 1
# Below this many facts a rebuild is cheaper than reading and writing a file.
PERSIST_MIN_FACTS = 2_000


def index_file(home: Path, model_id: str | None) -> Path:
    name = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in (model_id or "lexical"))
    return home / ".index" / f"snapshot-{name}.npz"


def _csr(lists: list[Postings]) -> dict[str, np.ndarray]:
    ids, values = (
        zip(*(postings.arrays() for postings in lists), strict=True) if lists else ((), ())
    )
    lengths = np.asarray([len(i) for i in ids], dtype=np.int64)
    return {
        "offsets": np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64),
        "ids": np.concatenate(ids) if ids else np.zeros(0, np.int64),
        "values": np.concatenate(values) if values else np.zeros(0, np.float32),
        "live": np.asarray([postings.live for postings in lists], dtype=np.int64),
    }


def _postings_of(data: Any, prefix: str, dtype: type) -> list[Postings]:
    # Views into the file's arrays, converted once (postings are only read, and an append
    # makes new arrays), with the offsets as Python ints: per list, two slices and no copy.
    offsets, lives = data[f"{prefix}offsets"].tolist(), data[f"{prefix}live"].tolist()
    if len(offsets) != len(lives) + 1:
        raise ValueError(f"{prefix}: offsets and liveness disagree")  # the caller rebuilds
    ids, values = data[f"{prefix}ids"], data[f"{prefix}values"].astype(dtype, copy=False)
    return [
        Postings.of(ids[start:end], values[start:end], live)
        for start, end, live in zip(offsets, offsets[1:], lives, strict=False)
    ]


def _text(value: Any) -> np.ndarray:
    return np.frombuffer(json.dumps(value, ensure_ascii=False).encode("utf-8"), dtype=np.uint8)


def _json(array: np.ndarray) -> Any:
    return json.loads(array.tobytes().decode("utf-8"))


def prepare(snapshot: Snapshot, store_id: str, model_id: str | None) -> dict[str, np.ndarray]:
    """What `write` puts in the file. Call with snapshot.lock held: the arrays are copied or
    are views of append-only storage, so writing them can run after the lock is released."""
    lexical, alignment = snapshot.lexical, snapshot.alignment
    facts = [
        [
            f.record_id, f.docid, f.uri, f.collection, f.text, f.content_hash, list(f.scopes),
            f.caller, f.session, f.created_at.isoformat(), f.source, list(f.supersedes),
            f.expires_at.isoformat() if f.expires_at else None,
        ]
        for f in snapshot.facts
    ]  # fmt: skip
    header = {
        "format": FORMAT,
        "store": store_id,
        "model": model_id,
        "generation": snapshot.generation,
        "changeSeq": snapshot.change_seq,
        "semantic": snapshot.vectors is not None,
        "bm25": [lexical.size, lexical._total_length, lexical.positions_seen],
        "bm25Terms": list(lexical._postings),
        "words": list(alignment._index) if alignment is not None else [],
        "alignment": [alignment.size, alignment.positions_seen] if alignment is not None else [],
    }
    arrays: dict[str, np.ndarray] = {
        "header": _text(header),
        "facts": _text(facts),
        "live": snapshot.live.copy(),
        "lengths": lexical._lengths[: lexical.positions_seen].copy(),
        **{f"bm25_{k}": v for k, v in _csr(list(lexical._postings.values())).items()},
    }
    if snapshot.vectors is not None and snapshot.rows is not None:
        arrays.update(
            vectors=snapshot.vectors, rows=snapshot.rows, starts=snapshot._starts.view().copy()
        )
    if alignment is not None:
        arrays["matrix"] = alignment._matrix.view()
        arrays.update({f"align_{k}": v for k, v in _csr(alignment._postings).items()})
    return arrays


def write(arrays: dict[str, np.ndarray], path: Path) -> None:
    """The file, whole or not at all (a temp file renamed into place)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        with temp.open("wb") as out:
            np.savez(out, **arrays)  # type: ignore[arg-type]
        temp.replace(path)
    finally:
        temp.unlink(missing_ok=True)


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
    try:
        with np.load(path, allow_pickle=False) as data:
            header = _json(data["header"])
            if (
                header.get("format") != FORMAT
                or header.get("store") != store_id
                or header.get("model") != model_id
                or int(header["changeSeq"]) > newest_change
                or bool(header["semantic"]) != (model_id is not None)
            ):
                return None
            return _restore(data, header, dims, word_vectors)
    except (OSError, ValueError, KeyError, TypeError, IndexError, zipfile.BadZipFile):
        return None


def _restore(
    data: Any, header: dict[str, Any], dims: int, word_vectors: WordVectors | None
) -> Snapshot:
    semantic = bool(header["semantic"])
    snapshot = Snapshot(
        int(header["generation"]), int(header["changeSeq"]), dims, word_vectors, semantic=semantic
    )
    facts = [
        IndexedFact(
            record_id=f[0], docid=f[1], uri=f[2], collection=f[3], text=f[4], content_hash=f[5],
            scopes=tuple(f[6]), caller=f[7], session=f[8],
            created_at=datetime.fromisoformat(f[9]), source=f[10], supersedes=tuple(f[11]),
            expires_at=datetime.fromisoformat(f[12]) if f[12] else None,
        )
        for f in _json(data["facts"])
    ]  # fmt: skip
    live = data["live"].astype(bool)
    if len(live) != len(facts):
        raise ValueError("facts and liveness disagree")
    _restore_positions(snapshot, facts, live)
    if semantic:
        snapshot._vectors = _rows_of(data["vectors"])
        snapshot._rows = _rows_of(data["rows"])
        snapshot._starts = GrowingArray.of(data["starts"].astype(np.int64))
    lexical = Bm25Index()
    lexical.size, lexical._total_length, lexical.positions_seen = (int(v) for v in header["bm25"])
    lexical._lengths = data["lengths"].astype(np.float32)
    terms = header["bm25Terms"]
    lexical._postings = dict(zip(terms, _postings_of(data, "bm25_", np.float32), strict=True))
    lexical._vocabulary = list(terms)
    snapshot.lexical = lexical
    if word_vectors is not None and semantic:
        alignment = WordAlignment([], word_vectors)
        alignment.size, alignment.positions_seen = (int(v) for v in header["alignment"])
        alignment._index = {word: slot for slot, word in enumerate(header["words"])}
        alignment._postings = _postings_of(data, "align_", np.int64)
        alignment._matrix = _rows_of(data["matrix"])
        snapshot.alignment = alignment
    return snapshot


def _restore_positions(snapshot: Snapshot, facts: list[IndexedFact], live: np.ndarray) -> None:
    """The per-position structures that follow from the facts themselves (cheaper to derive
    than to store): ids, hashes, scope and collection postings, expiry, the tie-break keys."""
    snapshot.facts = facts
    snapshot.positions = {fact.record_id: position for position, fact in enumerate(facts)}
    snapshot._live = GrowingArray.of(live)
    snapshot._expiry = GrowingArray.of(
        np.asarray([f.expires_at.timestamp() if f.expires_at else np.inf for f in facts])
    )
    snapshot._created = GrowingArray.of(
        np.asarray([(f.created_at - EPOCH) // MICROSECOND for f in facts], dtype=np.int64)
    )
    snapshot._id_key = GrowingArray.of(
        np.asarray([record_id_key(f.record_id) for f in facts], dtype=np.uint64)
    )
    # Positions gathered in plain lists and made into postings once per scope and collection
    # (an append per fact costs more than the whole load of the arrays).
    by_scope: dict[str, list[int]] = {}
    by_collection: dict[str, list[int]] = {}
    by_hash = snapshot._by_hash
    for position, fact in enumerate(facts):
        by_hash.setdefault(fact.content_hash, []).append(position)
        for scope in fact.scopes:
            by_scope.setdefault(scope, []).append(position)
        by_collection.setdefault(fact.collection, []).append(position)
    snapshot._by_scope = {scope: _marks(p, live) for scope, p in by_scope.items()}
    snapshot._by_collection = {name: _marks(p, live) for name, p in by_collection.items()}
    snapshot.live_count = int(live.sum())


def _marks(positions: list[int], live: np.ndarray) -> Postings:
    """The postings of a scope or collection: its positions, and how many of them are live."""
    ids = np.asarray(positions, dtype=np.int64)
    return Postings.of(ids, np.zeros(len(ids), np.int8), int(live[ids].sum()))


def _rows_of(array: np.ndarray) -> GrowingRows:
    if array.ndim == 2 and len(array) and array.dtype == np.float32 and array.flags.c_contiguous:
        return GrowingRows.of(array)  # read from the file for this process alone: no copy
    rows = GrowingRows(array.shape[1] if array.ndim == 2 else 1)
    rows.append(np.asarray(array, dtype=np.float32).reshape(len(array), -1))
    return rows
