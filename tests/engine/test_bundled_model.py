"""The shipped model is package data that loads offline, and a missing or broken model falls
back to lexical matching with the reason (never a crash, never a hub lookup)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np

import engine
from engine.retrieval.embeddings import BUNDLED_MODEL_DIR, load_embedder


def test_the_bundled_model_is_packaged_and_loads_offline(monkeypatch):
    monkeypatch.delenv("GNO_TUI_MODEL", raising=False)
    assert Path(engine.__file__).parent / "retrieval" / "model" == BUNDLED_MODEL_DIR
    files = {path.name for path in BUNDLED_MODEL_DIR.iterdir()}
    assert {"model.safetensors", "tokenizer.json", "config.json", "PROVENANCE.md"} <= files
    assert sum(p.stat().st_size for p in BUNDLED_MODEL_DIR.iterdir()) <= 16 * 2**20
    assert "Apache-2.0" in (BUNDLED_MODEL_DIR / "PROVENANCE.md").read_text(encoding="utf-8")
    status = load_embedder()
    assert status.unavailable_reason is None and status.embedder is not None
    vectors = status.embedder.embed(
        ["Alice prefers green tea", "Alice likes drinking green tea", "The deploy runs Friday"]
    )
    assert vectors.shape == (3, 256)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2] + 0.2


def test_loading_never_needs_torch_or_a_hub():
    code = (
        "import sys; from engine.retrieval.embeddings import load_embedder; s = load_embedder(); "
        "assert s.embedder is not None, s.unavailable_reason; "
        "assert 'torch' not in sys.modules and 'transformers' not in sys.modules"
    )
    env = {"HF_HUB_OFFLINE": "1", "PATH": "/usr/bin:/bin"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, timeout=120)


def test_a_missing_or_broken_model_falls_back_with_a_reason(tmp_path):
    missing = load_embedder(tmp_path / "nowhere")
    assert missing.embedder is None and missing.unavailable_reason is not None
    assert "no model folder" in missing.unavailable_reason
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    (broken / "tokenizer.json").write_text("{}", encoding="utf-8")
    status = load_embedder(broken)
    assert status.embedder is None and status.unavailable_reason is not None
    assert "failed to load" in status.unavailable_reason
