"""The thread that saves index copies (engine/retrieval/index_saver.py) outlives a save that
fails: the saves after it still run, and waiting for them returns. Before, one failure ended
the thread, and every later save waited forever (a process's close and its exit hung)."""

from __future__ import annotations

import logging

import pytest

from engine.retrieval.index_saver import IndexSaver

BOUND_S = 60  # bounds a hang if the saver is broken; a working one answers at once


def test_a_failed_save_does_not_stop_the_saves_after_it(caplog: pytest.LogCaptureFixture) -> None:
    saver = IndexSaver()
    written: list[str] = []

    def fails() -> None:
        raise ValueError("no separator is free in this column")

    with caplog.at_level(logging.ERROR, logger="engine.retrieval.index_saver"):
        failed = saver.submit(fails)
        failed.join(BOUND_S)
        assert not failed.is_alive()
        later = saver.submit(lambda: written.append("copy"))
        later.join(BOUND_S)
    assert not later.is_alive() and written == ["copy"]
    assert "could not be saved" in caplog.text
    saver.finish()  # as at exit: returns, nothing is left waiting
