#!/usr/bin/env python3
"""Evaluate a model2vec static-embedding folder on STS-B (dev and test).

Scores reported (Spearman rank correlation x100 against the gold 0-5 scores):

* ``model``      -- cosine similarity of the two sentence embeddings
* ``rapidfuzz``  -- ``rapidfuzz.fuzz.token_sort_ratio`` (processor=default_process) of the two
  sentences (lexical baseline)
* ``mean``       -- the mean of both scorers per pair: (cosine + token_sort_ratio/100) / 2

Usage (from the repo root)::

    python benchmarks/stsb_model.py [--model engine/retrieval/model] [DATA_DIR] \
        [--dev FILE] [--test FILE]

DATA_DIR defaults to ``../shared/data/stsb`` relative to the repo root and must hold
``sts-dev.csv`` and ``sts-test.csv``, or ``--dev`` / ``--test`` name the files (TAB
separated, no header, no quoting; columns genre, file, year, id, score, sentence1,
sentence2, and on some rows two extra attribution columns). The data is read in place,
never copied into the project.

The table is printed and written to ``benchmarks/results/stsb_model.md`` (see ``--out``).
Needs only model2vec, numpy and rapidfuzz.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from benchmarks.common import read_sts_pairs, spearman, sts_split_files  # noqa: E402

DEFAULT_DATA = REPO_ROOT.parent / "shared" / "data" / "stsb"
DEFAULT_MODEL = REPO_ROOT / "engine" / "retrieval" / "model"
DEFAULT_OUT = REPO_ROOT / "benchmarks" / "results" / "stsb_model.md"
SPLITS = ("dev", "test")


def cosine_scores(model, s1: list[str], s2: list[str]) -> np.ndarray:
    e1 = np.asarray(model.encode(s1), dtype=np.float32)
    e2 = np.asarray(model.encode(s2), dtype=np.float32)
    e1 /= np.linalg.norm(e1, axis=1, keepdims=True) + 1e-12
    e2 /= np.linalg.norm(e2, axis=1, keepdims=True) + 1e-12
    return (e1 * e2).sum(axis=1)


def fuzz_scores(s1: list[str], s2: list[str]) -> np.ndarray:
    from rapidfuzz import fuzz, utils

    # default_process: lower-case, strip non-alphanumerics (what a fuzzy matcher would normally use)
    return np.asarray(
        [
            fuzz.token_sort_ratio(a, b, processor=utils.default_process)
            for a, b in zip(s1, s2, strict=True)
        ],
        dtype=np.float64,
    )


def evaluate(model, files: dict[str, Path]) -> dict[str, dict[str, float]]:
    """Return {scorer: {split: spearman*100}} for scorers model, rapidfuzz, mean."""
    out: dict[str, dict[str, float]] = {"model": {}, "rapidfuzz": {}, "mean": {}}
    for split in SPLITS:
        s1, s2, gold = read_sts_pairs(files[split])
        cos = cosine_scores(model, s1, s2)
        fz = fuzz_scores(s1, s2)
        out["model"][split] = 100 * spearman(cos, gold)
        out["rapidfuzz"][split] = 100 * spearman(fz, gold)
        out["mean"][split] = 100 * spearman((cos + fz / 100.0) / 2.0, gold)
    return out


def folder_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "data_dir", nargs="?", default=str(DEFAULT_DATA), help="folder with sts-{dev,test}.csv"
    )
    ap.add_argument("--dev", help="the dev file (default: DATA_DIR/sts-dev.csv)")
    ap.add_argument("--test", help="the test file (default: DATA_DIR/sts-test.csv)")
    ap.add_argument(
        "--model",
        default=str(DEFAULT_MODEL),
        help="model2vec model folder (default engine/retrieval/model)",
    )
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="markdown file to write ('-' to skip)")
    args = ap.parse_args(argv)

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    model_dir = Path(args.model)
    # model2vec treats a path that does not exist as a hub id: refuse instead.
    if not model_dir.is_dir():
        print(f"error: model folder {model_dir} does not exist", file=sys.stderr)
        return 2
    files = sts_split_files(Path(args.data_dir), args.dev, args.test)

    from model2vec import StaticModel

    t0 = time.perf_counter()
    model = StaticModel.from_pretrained(str(model_dir))
    load_s = time.perf_counter() - t0
    res = evaluate(model, files)

    try:
        shown = model_dir.resolve().relative_to(REPO_ROOT)
    except ValueError:
        shown = model_dir
    lines = [
        "# STS-B: static model vs rapidfuzz",
        "",
        f"Model folder: `{shown}` ({folder_size(model_dir) / 1e6:.1f} MB, dim {model.dim}, "
        f"dtype {model.embedding_dtype}); loaded in {load_s:.2f} s.",
        "Spearman x100 against the gold scores. `mean` = per-pair mean of cosine and "
        "token_sort_ratio/100.",
        "",
        "| scorer | dev | test |",
        "|---|---:|---:|",
    ]
    names = {
        "model": "model2vec cosine",
        "rapidfuzz": "rapidfuzz token_sort_ratio",
        "mean": "mean of both",
    }
    for key, label in names.items():
        lines.append(f"| {label} | {res[key]['dev']:.1f} | {res[key]['test']:.1f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out != "-":
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
