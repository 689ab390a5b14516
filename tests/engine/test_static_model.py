"""The engine reads the bundled static model itself (engine/retrieval/static_model.py) instead of
through model2vec, whose import pulls in a model-hub client. Its vectors must be model2vec's,
exactly, or stored embeddings and the calibrated thresholds would silently drift."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.retrieval.embeddings import BUNDLED_MODEL_DIR, load_embedder
from engine.retrieval.static_model import ModelFolderError, StaticModel

ROOT = Path(__file__).resolve().parents[2]

TEXTS = [
    "Alice prefers green tea in the morning",
    "The deploy runs on Fridays at noon. It takes five minutes! Ask Bob first?",
    "",
    "   ",
    "naïve café, Zürich, 東京, Привет, emoji 🎉 and tabs\tand\nnewlines",
    "UPPER lower MiXeD 12345 3.14 user:alice project:billing-api gno://memory/facts/x.md",
    "word " * 3000,  # past max_length: cut the way model2vec cuts it
    "x" * 20000,
    "[UNK] [CLS] [SEP] [PAD] ##ing",
]


def test_bundled_model_vectors_are_model2vecs_bit_for_bit() -> None:
    from model2vec import StaticModel as Model2Vec

    ours = StaticModel(BUNDLED_MODEL_DIR).encode(TEXTS * 3)
    theirs = Model2Vec.from_pretrained(str(BUNDLED_MODEL_DIR)).encode(TEXTS * 3)
    assert ours.dtype == theirs.dtype and ours.shape == theirs.shape == (27, 256)
    assert np.array_equal(ours, theirs)
    assert np.abs(ours[0]).sum() > 0  # a real vector, not zeros on both sides


def test_word_level_model_drops_unknown_words_as_model2vec_does(tiny_model_dir: Path) -> None:
    from model2vec import StaticModel as Model2Vec

    texts = ["alice tea morning", "zzz unknown words only", "alice zzz tea", ""]
    ours = StaticModel(tiny_model_dir).encode(texts)
    theirs = Model2Vec.from_pretrained(str(tiny_model_dir)).encode(texts)
    assert np.array_equal(ours, theirs)


def test_an_empty_batch_gives_no_rows() -> None:
    assert StaticModel(BUNDLED_MODEL_DIR).encode([]).shape == (0, 256)


def test_a_folder_without_a_tokenizer_is_refused_with_its_name(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"")
    with pytest.raises(ModelFolderError, match=r"tokenizer\.json"):
        StaticModel(tmp_path)
    status = load_embedder(tmp_path)
    assert status.embedder is None and "tokenizer.json" in (status.unavailable_reason or "")


PROBE = """
import json, sys
from engine.retrieval.embeddings import load_embedder
status = load_embedder()
vector = status.embedder.embed(["Alice prefers green tea"])
print(json.dumps({"loaded": sorted(m for m in sys.modules
                                   if m.split(".")[0] in ("huggingface_hub", "model2vec", "torch")),
                  "dims": int(vector.shape[1])}))
"""


def test_loading_the_model_never_imports_a_hub_client() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report == {"loaded": [], "dims": 256}
