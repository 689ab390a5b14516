"""The import's dedup rounds its ~900k pair scores with numpy, and must name the same
similarity and tier that remember's Python round(score, 4) names for the same pair."""

from __future__ import annotations

import numpy as np

from engine.interop.earlier_pairs import _rounded


def test_scores_round_as_python_rounds_them() -> None:
    rng = np.random.default_rng(13)
    scores = [rng.random(200_000, dtype=np.float32)]
    # The float32 values nearest the halfway points between two 4-place decimals, where a
    # rounding that is not exact would go the other way.
    halfway = (np.arange(6_600, 10_000) + 0.5) / 10_000
    for step in (-2, -1, 0, 1, 2):
        near = halfway.astype(np.float32)
        for _ in range(abs(step)):
            near = np.nextafter(near, np.float32(np.sign(step)), dtype=np.float32)
        scores.append(near)
    scores.append(np.asarray([0.0, 1.0, 0.66, 0.86, 0.95], dtype=np.float32))
    values = np.concatenate(scores)
    assert _rounded(values).tolist() == [round(v, 4) for v in values.tolist()]
