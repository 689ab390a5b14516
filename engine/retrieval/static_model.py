"""A model2vec static model read straight from its folder: the token table (safetensors), the
tokenizer (tokenizers) and config.json, and model2vec's encoding (the mean of the text's token
vectors) done here in numpy.

Why not model2vec's own StaticModel: importing model2vec pulls in its hub client
(huggingface_hub, ~0.9 s), which a command-line call pays on every run and which this project
never uses: its models are local folders. tests/engine/test_static_model.py proves that the
vectors are the same as model2vec's, bit for bit, for the bundled model."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, cast

import numpy as np

# model2vec's defaults where a config says nothing.
DEFAULT_MAX_LENGTH = 512
BATCH_SIZE = 1024


class ModelFolderError(ValueError):
    """The folder is not a model2vec model this loader can read."""


class StaticModel:
    """Token vectors and a tokenizer; `encode` gives one row per text, as model2vec does."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        paths = {name: folder / name for name in ("model.safetensors", "tokenizer.json")}
        missing = [name for name, path in paths.items() if not path.is_file()]
        if missing:
            raise ModelFolderError(f"{folder} has no {', '.join(missing)} (not a model2vec model)")
        config_path = folder / "config.json"
        config: dict[str, Any] = (
            json.loads(config_path.read_text(encoding="utf-8")) if config_path.is_file() else {}
        )
        tensors = load_file(str(paths["model.safetensors"]))
        if "embeddings" not in tensors:
            raise ModelFolderError(f"{paths['model.safetensors']} holds no 'embeddings' tensor")
        self.embedding: np.ndarray = tensors["embeddings"]
        self.weights: np.ndarray | None = tensors.get("weights")
        self.token_mapping: np.ndarray | None = tensors.get("mapping")
        self.normalize = bool(config.get("normalize", False))
        self.max_length: int | None = config.get("max_length", DEFAULT_MAX_LENGTH)

        tokenizer = Tokenizer.from_file(str(paths["tokenizer.json"]))
        padding = tokenizer.padding
        if padding is not None:  # keep the pad token, never pad
            tokenizer.enable_padding(
                pad_id=padding["pad_id"],
                pad_token=padding["pad_token"],
                pad_type_id=padding["pad_type_id"],
                length=0,
            )
        if self.max_length is None:
            tokenizer.no_truncation()
        else:
            tokenizer.enable_truncation(self.max_length)
        self.tokenizer = tokenizer
        self.unk_token_id = _unk_token_id(tokenizer)
        tokens = tokenizer.get_vocab_size()
        if self.token_mapping is None and tokens != len(self.embedding):
            raise ModelFolderError(f"{folder}: {tokens} tokens but {len(self.embedding)} vectors")

    @cached_property
    def median_token_length(self) -> int:
        """Texts are cut to max_length x the median token length in characters before they are
        tokenized (model2vec does the same; it bounds the tokenizer's work on huge texts).
        Worked out on first need, not at load: it reads the whole vocabulary (~20 ms), and a
        CLI call's short texts never need it (see encode)."""
        vocabulary = self.tokenizer.get_vocab()
        return int(np.median([len(token) for token in vocabulary]))

    @property
    def dim(self) -> int:
        return int(self.embedding.shape[1])

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        # A text of at most max_length characters is never cut (the median token has at least
        # one character), so the cut is only worked out for a longer one.
        if self.max_length is not None and any(len(text) > self.max_length for text in texts):
            cut = self.max_length * self.median_token_length
            texts = [text[:cut] for text in texts]
        batches = [
            self._encode_batch(texts[start : start + BATCH_SIZE])
            for start in range(0, len(texts), BATCH_SIZE)
        ]
        if not batches:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.concatenate(batches, axis=0)

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        encodings = self.tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
        ids = [encoding.ids for encoding in encodings]
        if self.unk_token_id is not None:  # a word-level model's unknown words carry nothing
            ids = [[token for token in row if token != self.unk_token_id] for row in ids]
        return ids

    def _encode_batch(self, texts: Sequence[str]) -> np.ndarray:
        ids = self._token_ids(texts)
        dtype = np.dtype(np.float32) if self.embedding.dtype == np.int8 else self.embedding.dtype
        out = np.zeros((len(ids), self.dim), dtype=dtype)
        if self.token_mapping is None and self.weights is None:
            # Texts of one token count share one gather and one mean.
            by_length: dict[int, list[int]] = defaultdict(list)
            for index, row in enumerate(ids):
                if row:
                    by_length[len(row)].append(index)
            for indices in by_length.values():
                matrix = np.array([ids[i] for i in indices], dtype=np.int64)
                out[indices] = self.embedding[matrix].mean(axis=1)
        else:
            for index, row in enumerate(ids):
                if row:
                    rows = self.embedding[row if self.token_mapping is None
                                          else self.token_mapping[row]]  # fmt: skip
                    if self.weights is not None:
                        rows = rows * self.weights[row][:, None]
                    out[index] = rows.mean(axis=0)
        if self.normalize:
            as32 = out.astype(np.float32)
            norms = np.linalg.norm(as32, axis=1, keepdims=True) + 1e-32
            return cast(np.ndarray, (as32 / norms).astype(out.dtype))
        return out


def _unk_token_id(tokenizer: Any) -> int | None:
    model = tokenizer.model
    if hasattr(model, "unk_token"):  # WordPiece, BPE, word level
        token = model.unk_token
        return None if token is None else tokenizer.token_to_id(token)
    unk = json.loads(tokenizer.to_str())["model"].get("unk_id")  # Unigram
    return None if unk is None else int(unk)
