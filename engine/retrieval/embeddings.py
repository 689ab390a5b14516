"""The semantic seam: an embedder turns texts into unit vectors, or is absent with a reason.

The bundled model is a model2vec static model shipped as package data
(engine/retrieval/model). Nothing here ever reaches a model hub: a folder that does not exist
is reported, never looked up.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

import numpy as np

from engine.retrieval.static_model import StaticModel

BUNDLED_MODEL_DIR = Path(__file__).parent / "model"


class Embedder(Protocol):
    """What the engine needs from a model: an id (to know when stored vectors are stale) and
    unit-length float32 rows for a batch of texts."""

    model_id: str
    dims: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass(frozen=True)
class EmbedderStatus:
    embedder: Embedder | None
    # Why semantic matching is off; None when the embedder is present.
    unavailable_reason: str | None = None


class StaticModelEmbedder:
    """A static model (engine/retrieval/static_model.py, or model2vec's own: anything with
    `encode` and `dim`), vectors normalised so that a dot product is the cosine."""

    def __init__(self, model: Any, model_id: str) -> None:
        self._model = model
        self.model_id = model_id
        self.dims = int(model.dim)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dims), dtype=np.float32)
        vectors = np.asarray(self._model.encode(list(texts)), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return cast(np.ndarray, vectors / np.maximum(norms, 1e-12))


def model_fingerprint(folder: Path) -> str:
    """A short id that changes whenever the weights change (size + mtime + name of each file)."""
    digest = hashlib.sha256()
    for path in sorted(folder.iterdir()):
        if path.is_file():
            stat = path.stat()
            digest.update(f"{path.name}:{stat.st_size}:{int(stat.st_mtime)}".encode())
    return f"{folder.name}-{digest.hexdigest()[:12]}"


def load_embedder(model_path: str | Path | None = None) -> EmbedderStatus:
    """Load the model at `model_path`, else $GNO_TUI_MODEL, else the bundled one.

    A missing or broken model is not a crash: the status carries the reason, and the engine
    falls back to lexical matching and says so in `semanticUnavailable`."""
    chosen = model_path or os.environ.get("GNO_TUI_MODEL") or BUNDLED_MODEL_DIR
    folder = Path(chosen).expanduser()
    if not folder.is_dir():
        return EmbedderStatus(None, f"no model folder at {folder} (set --model or $GNO_TUI_MODEL)")
    if not (folder / "model.safetensors").is_file():
        return EmbedderStatus(None, f"{folder} holds no model.safetensors (not a model2vec model)")
    try:
        model = StaticModel(folder)
    except Exception as exc:  # noqa: BLE001 - a corrupt file, a wrong format: fall back, say why
        return EmbedderStatus(
            None, f"model at {folder} failed to load: {type(exc).__name__}: {exc}"
        )
    return EmbedderStatus(StaticModelEmbedder(model, model_fingerprint(folder)))


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def sentences(text: str) -> list[str]:
    """The sentences of a fact with more than one; [] for a one-sentence fact."""
    body = text.strip()
    # Most facts are one sentence: no sentence end before their last character, so no split
    # (the regex split was a sixth of embedding an import's 100k texts).
    head = body[:-1]
    if "." not in head and "!" not in head and "?" not in head:
        return []
    parts = [part.strip() for part in _SENTENCE_END.split(body) if part.strip()]
    return parts if len(parts) > 1 else []


def embed_facts(embedder: Embedder, texts: Sequence[str]) -> list[np.ndarray]:
    """Per fact, a (k, dims) block: row 0 the whole text, then one row per sentence when it has
    more than one. Recall scores a fact by its best row (a long turn that mentions the answer
    in one sentence is not diluted by the rest); dedup compares whole texts (row 0)."""
    split = [sentences(text) for text in texts]
    flat = list(texts) + [sentence for parts in split for sentence in parts]
    vectors = np.asarray(embedder.embed(flat), dtype=np.float32)
    # A one-sentence fact's block is a row of `vectors` itself, not a copy (a copy per fact
    # was a fifth of embedding an import); read-only, as every block is only read.
    vectors.flags.writeable = False
    blocks, cursor = [], len(texts)
    for index, parts in enumerate(split):
        if not parts:
            blocks.append(vectors[index : index + 1])
            continue
        whole = vectors[index]
        # A sentence row keeps its fact's context (whole + sentence, renormalised): a bare
        # sentence loses who or what the fact is about, which hurt recall on LoCoMo.
        rows = [whole]
        for offset in range(len(parts)):
            mixed = whole + vectors[cursor + offset]
            rows.append(mixed / max(float(np.linalg.norm(mixed)), 1e-12))
        cursor += len(parts)
        blocks.append(np.vstack(rows).astype(np.float32))
    return blocks


def vector_to_bytes(block: np.ndarray) -> bytes:
    return np.asarray(block, dtype=np.float32).tobytes()


def vector_from_bytes(blob: bytes, dims: int) -> np.ndarray:
    return np.frombuffer(blob, dtype=np.float32).reshape(-1, dims)


class VectorsAhead:
    """Embeddings row values worked out before a write takes the write lock, for the write to
    use inside it (`take`): embedding a fact is a fifth of an add's work, and done under the
    lock it delays every other writer of the home as well. Keyed by model and stored text,
    so a vector is used only for exactly the text it was made from; bounded, the oldest
    dropped (a write whose vector was dropped embeds again, as it would without this)."""

    LIMIT = 64

    def __init__(self) -> None:
        self._vectors: dict[tuple[str, str], bytes] = {}

    def put(self, embedder: Embedder, text: str) -> None:
        key = (embedder.model_id, text)
        if key in self._vectors:
            return
        (block,) = embed_facts(embedder, [text])
        self._vectors[key] = vector_to_bytes(block)
        while len(self._vectors) > self.LIMIT:
            self._vectors.pop(next(iter(self._vectors)))

    def take(self, embedder: Embedder, text: str) -> bytes | None:
        return self._vectors.pop((embedder.model_id, text), None)
