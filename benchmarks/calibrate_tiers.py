"""Calibrate the dedup tiers on STS-B dev and report them on STS-B test.

For each scorer (lexical rapidfuzz, the static model's cosine, and their blend) it prints
Spearman x100, then picks thresholds on dev:
  exact  = the lowest threshold with 75 % precision for "gold >= 4.6" (the same fact),
  likely = the threshold with the best F1 for "gold >= 4.0" (a likely duplicate),
  weak   = the highest threshold that still keeps 90 % recall of "gold >= 3.0" (related),
and reports precision / recall of each tier on test with those thresholds.

    python benchmarks/calibrate_tiers.py [STS-B folder] [--dev FILE] [--test FILE] [--model DIR]
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.common import DATA, machine, read_sts_pairs, spearman, sts_split_files, write_report
from engine.retrieval.embeddings import load_embedder
from engine.retrieval.lexical import similarity as lexical_similarity

TIERS = (("exact", 4.6, "precision75"), ("likely", 4.0, "f1"), ("weak", 3.0, "recall90"))


def pr(scores: np.ndarray, positive: np.ndarray, threshold: float) -> tuple[float, float]:
    chosen = scores >= threshold
    tp = float((chosen & positive).sum())
    precision = tp / chosen.sum() if chosen.sum() else 1.0
    recall = tp / positive.sum() if positive.sum() else 1.0
    return precision, recall


def pick(scores: np.ndarray, gold: np.ndarray, cut: float, rule: str) -> float:
    positive = gold >= cut
    grid = np.round(np.arange(0.30, 1.0001, 0.01), 2)
    if rule == "f1":
        best, best_t = -1.0, 1.0
        for t in grid:
            p, r = pr(scores, positive, t)
            f1 = 2 * p * r / (p + r) if p + r else 0.0
            if f1 > best:
                best, best_t = f1, float(t)
        return best_t
    if rule == "precision75":
        precise = [float(t) for t in grid if pr(scores, positive, t)[0] >= 0.75]
        return min(precise) if precise else 1.0
    keep = [float(t) for t in grid if pr(scores, positive, t)[1] >= 0.9]
    return max(keep) if keep else float(grid[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default=str(DATA / "stsb"))
    parser.add_argument("--dev", help="the dev file (default: FOLDER/sts-dev.csv)")
    parser.add_argument("--test", help="the test file (default: FOLDER/sts-test.csv)")
    parser.add_argument("--model", help="model2vec folder (default: the bundled model)")
    args = parser.parse_args()
    files = sts_split_files(Path(args.folder), args.dev, args.test)
    splits = {name: read_sts_pairs(path) for name, path in files.items()}
    scorers: dict[str, Callable[[list[str], list[str]], np.ndarray]] = {
        "lexical (rapidfuzz sort+set)": lambda a, b: np.array(
            [lexical_similarity(x, y) for x, y in zip(a, b, strict=True)]
        ),
    }
    status = load_embedder(args.model)
    if status.embedder is not None:
        embedder = status.embedder

        def cosine(a: list[str], b: list[str]) -> np.ndarray:
            return np.clip((embedder.embed(a) * embedder.embed(b)).sum(axis=1), 0, 1)

        scorers["semantic (static cosine)"] = cosine
        scorers["blend (mean of both)"] = lambda a, b: (
            (cosine(a, b) + scorers["lexical (rapidfuzz sort+set)"](a, b)) / 2
        )
    else:
        print(f"semantic skipped: {status.unavailable_reason}", file=sys.stderr)
    rows = []
    for name, scorer in scorers.items():
        scores = {split: scorer(left, right) for split, (left, right, _) in splits.items()}
        dev_gold, test_gold = splits["dev"][2], splits["test"][2]
        row: list[object] = [
            name,
            f"{spearman(scores['dev'], dev_gold) * 100:.1f}",
            f"{spearman(scores['test'], test_gold) * 100:.1f}",
        ]
        thresholds = {}
        for tier, cut, rule in TIERS:
            thresholds[tier] = pick(scores["dev"], dev_gold, cut, rule)
        # Keep the tiers ordered even if the data would cross them.
        thresholds["likely"] = min(thresholds["likely"], thresholds["exact"])
        thresholds["weak"] = min(thresholds["weak"], thresholds["likely"])
        for tier, cut, _ in TIERS:
            p, r = pr(scores["test"], test_gold >= cut, thresholds[tier])
            row.append(f"{thresholds[tier]:.2f} (P {p:.2f} / R {r:.2f})")
        rows.append(row)
    header = [
        "scorer",
        "Spearman dev",
        "Spearman test",
        "exact: t (test P/R, gold>=4.6)",
        "likely: t (test P/R, gold>=4)",
        "weak: t (test P/R, gold>=3)",
    ]
    write_report(
        "calibrate_tiers",
        header,
        rows,
        notes=[
            f"data: dev {files['dev']}, test {files['test']}",
            f"machine: {machine()}",
            "thresholds chosen on dev; precision/recall measured on test",
        ],
    )


if __name__ == "__main__":
    main()
