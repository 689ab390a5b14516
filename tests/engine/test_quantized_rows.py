"""The index's int8 vector rows (engine/retrieval/quantized.py): close to the float32 cosines
ranking and dedup were tuned on, the same bits wherever a row sits, a quarter of the bytes."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from engine.retrieval.embeddings import load_embedder
from engine.retrieval.quantized import QuantizedRows, cosines, quantize
from engine.retrieval.snapshot import IndexedFact, Snapshot

SUBJECTS = ["Alice", "Bob", "The team", "Our landlord", "My sister", "The backup job"]
VERBS = ["prefers", "moved to", "keeps", "forgot", "asked about", "runs on"]
OBJECTS = ["green tea", "Lyon", "a red bicycle", "the VPN password", "Friday mornings", "MFA"]


@pytest.fixture(scope="module")
def vectors() -> np.ndarray:
    """The bundled model's vectors of 216 short facts (float32, unit length)."""
    status = load_embedder()
    assert status.embedder is not None, status.unavailable_reason
    texts = [f"{s} {v} {o}" for s, v, o in itertools.product(SUBJECTS, VERBS, OBJECTS)]
    return np.asarray(status.embedder.embed(texts), dtype=np.float32)


def test_int8_cosines_stay_within_a_few_thousandths_of_float32(vectors: np.ndarray) -> None:
    rows = quantize(vectors)
    errors = np.concatenate(
        [np.abs(cosines(rows, query) - vectors @ query) for query in vectors[::7]]
    )
    # Dedup tiers sit 0.09 apart (0.95 / 0.86), ranking's fusion weights far coarser.
    assert float(errors.max()) < 0.006
    assert float(errors.mean()) < 0.0012


def test_a_vector_scores_one_with_itself(vectors: np.ndarray) -> None:
    rows = quantize(vectors)
    own = np.asarray([cosines(rows, v)[i] for i, v in enumerate(vectors[:20])])
    assert np.allclose(own, 1.0, atol=1e-6)


def test_a_row_scores_the_same_bits_wherever_it_sits(vectors: np.ndarray) -> None:
    """The index grown write by write and the index built afresh hold a fact's row at
    different places; its cosine must not depend on that."""
    query = vectors[11]
    alone = QuantizedRows(vectors.shape[1])
    alone.append(quantize(vectors[5:6]))
    crowded = QuantizedRows(vectors.shape[1])
    crowded.append(quantize(vectors[::-1]))
    at = len(vectors) - 1 - 5
    assert cosines(alone.view(), query)[0].tobytes() == cosines(crowded.view(), query)[at].tobytes()
    assert (alone.view().values[0] == crowded.view().values[at]).all()


def test_rows_take_a_quarter_of_float32s_bytes(vectors: np.ndarray) -> None:
    rows = quantize(vectors)
    assert rows.values.dtype == np.int8
    assert rows.values.nbytes + rows.scales.nbytes < vectors.nbytes / 3.5


def test_the_snapshot_ranks_with_its_int8_rows(vectors: np.ndarray) -> None:
    """Whole-text cosines, picked from the full scan or from the asked rows alone, agree, and
    the dequantized vectors give the same products."""
    from datetime import UTC, datetime

    snapshot = Snapshot(0, 0, vectors.shape[1], semantic=True)
    for index, vector in enumerate(vectors):
        fact = IndexedFact(
            f"mem-{index:016x}", f"#{index:06x}", f"gno://m/{index}", "memory", f"fact {index}",
            f"h{index}", ("s",), "c", "s", datetime(2026, 1, 1, tzinfo=UTC), None, (), None,
        )  # fmt: skip
        snapshot.add(fact, np.vstack([vector, vector]) if index % 3 == 0 else vector[None])
    query = vectors[40]
    few = np.asarray([3, 40, 200])
    every = np.arange(len(vectors))
    assert np.array_equal(
        snapshot.whole_cosines(query, few), snapshot.whole_cosines(query, every)[few]
    )
    assert snapshot.best_cosine(query)[40] == pytest.approx(1.0, abs=1e-6)
    dequantized = snapshot.whole_vectors(few) @ quantize(query).floats()[0]
    assert np.allclose(dequantized, snapshot.whole_cosines(query, few), atol=1e-5)
