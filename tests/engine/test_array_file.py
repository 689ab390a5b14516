"""The index copy's file format (engine/retrieval/array_file.py) keeps any text: a column
whose values hold every separator it tries (text an agent may send as a fact's source) is written
and read back whole. Before, writing it failed, so no process could keep its index copy and
every one rebuilt the index at its first recall."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.retrieval import array_file

EVERY_SEPARATOR = "".join(["\x1f\x1e\x1d\x1c", *(chr(c) for c in range(0xE000, 0xE100))])


def _round_trip(path: Path, values: list[str]) -> list[str]:
    array_file.write(path, {"kind": "test"}, {"n": np.arange(3)}, {"source": values})
    found = array_file.read(path, lambda header: header.get("kind") == "test")
    assert found is not None
    header, arrays = found
    assert header["kind"] == "test" and arrays["n"].tolist() == [0, 1, 2]
    return arrays.texts("source")


def test_a_column_holding_every_separator_is_kept_whole(tmp_path: Path) -> None:
    values = ["plain", EVERY_SEPARATOR, "", "a\udc80lone surrogate", 'é\n"quoted"']
    assert _round_trip(tmp_path / "copy.idx", values) == values


def test_an_ordinary_column_round_trips(tmp_path: Path) -> None:
    values = ["alice drinks tea", "", "bob: coffee"]
    assert _round_trip(tmp_path / "copy.idx", values) == values
