"""An import's memory is bounded by its batch, not by its file or by how many of its items
nearly repeat one another (issue 39, item 10; engine/interop/import_run.py).

Measured as the peak of the memory Python and numpy allocate during the import (tracemalloc),
which is the same on every run of the same code: no timing, no process-wide RSS. Before, a
file of near-identical lines kept every pair of them (4,000 lines: 8M pairs), and the whole
file was held several times over (its text, its items, its rows and fact files)."""

from __future__ import annotations

import json
import random
import tracemalloc
from pathlib import Path

import pytest

from engine.facade.factory import open_engine
from engine.interop import transfer
from engine.retrieval.embeddings import BUNDLED_MODEL_DIR, EmbedderStatus, load_embedder

WORDS = (
    *("river", "mountain", "garden", "window", "kitchen", "violin", "harbor", "lantern"),
    *("meadow", "pepper", "silver", "thunder", "candle", "forest", "bridge", "marble"),
    *("orchard", "compass", "blanket", "saddle"),
)


@pytest.fixture(scope="module")
def model() -> EmbedderStatus:
    status = load_embedder()
    assert status.embedder is not None, status.unavailable_reason
    return status


def near_identical(path: Path, count: int) -> Path:
    """`count` lines in one scope, the same 60 words after each line's own number: every
    line after the first is a likely duplicate of the first."""
    body = " ".join(random.Random(7).choice(WORDS) for _ in range(60))
    with path.open("w", encoding="utf-8") as out:
        for n in range(count):
            out.write(json.dumps({"text": f"Note {n}: {body}", "scopes": ["notes"]}) + "\n")
    return path


def distinct(path: Path, count: int) -> Path:
    """`count` short lines of random words of the model's vocabulary, 200 to a scope."""
    vocabulary = json.loads((BUNDLED_MODEL_DIR / "tokenizer.json").read_text(encoding="utf-8"))
    words = sorted(w for w in vocabulary["model"]["vocab"] if w.isalpha() and len(w) >= 4)
    pick = random.Random(11)
    with path.open("w", encoding="utf-8") as out:
        for n in range(count):
            text = " ".join(pick.choice(words) for _ in range(6)) + f" {n}"
            out.write(json.dumps({"text": text, "scopes": [f"s{n // 200}"]}) + "\n")
    return path


def traced_peak(
    home: Path, source: Path, model: EmbedderStatus
) -> tuple[transfer.ImportReport, int]:
    """The import of `source` into a new store, and the most memory it held at once."""
    engine = open_engine(home=home, embedder_status=model)
    try:
        engine.retrieval()  # the store's index is built before the measure starts
        # The import's facts go into the process's index after the commit (index_after_bulk):
        # that memory is the index's, which any reader of the store holds; measured apart.
        caught_up = engine.index_after_bulk
        engine.index_after_bulk = lambda: None  # type: ignore[method-assign]
        tracemalloc.start()
        try:
            report = transfer.run_import(engine, source, caller="import")
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
            engine.index_after_bulk = caught_up  # type: ignore[method-assign]
        caught_up()
        assert engine._snapshots.get().live_count == report.count("add")
    finally:
        engine.db.dispose()
    return report, peak


def test_memory_does_not_grow_with_the_size_of_a_near_duplicate_group(
    tmp_path: Path, model: EmbedderStatus
) -> None:
    peaks = {}
    for count in (1_000, 4_000):
        source = near_identical(tmp_path / f"near-{count}.jsonl", count)
        report, peaks[count] = traced_peak(tmp_path / f"home-{count}", source, model)
        assert (report.count("add"), report.count("propose")) == (1, count - 1)
        assert "likely duplicate of item 1 of this file" in report.actions[-1]["reason"]
    # Four times the lines are sixteen times the pairs. Before: 15 times the memory, 260 KiB
    # more for each line added to the group. Now a line adds its line of the report; what a
    # batch holds (and the inserts queued behind it, two batches at most) does not grow.
    per_line = (peaks[4_000] - peaks[1_000]) / 3_000
    assert per_line < 4096, (per_line, peaks)
    assert peaks[4_000] < 2 * peaks[1_000], peaks


def test_the_whole_file_is_never_held(tmp_path: Path, model: EmbedderStatus) -> None:
    peaks = {}
    for count in (3_000, 12_000):
        source = distinct(tmp_path / f"distinct-{count}.jsonl", count)
        report, peaks[count] = traced_peak(tmp_path / f"home-{count}", source, model)
        assert report.count("add") == count
    # Each line adds what later lines are checked against (its content hash, record id and
    # docid) and its line of the report: under 2 KiB. Before, 5.6 KiB: the file's text, its
    # items, their rows and rendered fact files were all held until the commit.
    per_line = (peaks[12_000] - peaks[3_000]) / 9_000
    assert per_line < 2048, (per_line, peaks)


# -- read twice: once to check, once to import --------------------------------------------------


def test_a_file_changed_between_its_two_readings_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from engine.contract.errors import MemoryFailure
    from engine.interop import import_run

    source = distinct(tmp_path / "items.jsonl", 20)
    checked = import_run._check_all

    def then_changed(job: import_run._Import) -> None:
        checked(job)  # every line checked; now the file changes before it is imported
        with source.open("a", encoding="utf-8") as out:
            out.write(json.dumps({"text": "Added behind the check", "scopes": ["s0"]}) + "\n")

    monkeypatch.setattr(import_run, "_check_all", then_changed)
    engine = open_engine(home=tmp_path / "home", embedder_status=EmbedderStatus(None, "off"))
    try:
        with pytest.raises(MemoryFailure) as refused:
            transfer.run_import(engine, source, caller="import")
        assert refused.value.code == "MEMORY_IMPORT_INVALID"
        assert "changed while it was being imported" in refused.value.message
        assert transfer.export_jsonl_items(engine) == []
    finally:
        engine.db.dispose()
