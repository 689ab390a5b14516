"""The domain core of gno-tui: facts, remember/recall, fence, egress, embeddings.

It never imports the UI (textual, rich, screens, gno_tui); tests/engine/test_engine_architecture.py
proves it for every module in a subprocess, and that engine modules import one another without
cycles. This package re-exports nothing: import from the module that defines a name
(engine.facade.factory.open_engine, engine.storage.store.MemoryEngine, ...)."""

from __future__ import annotations

import os

# Ranking multiplies one query vector by the fact matrix: memory-bound work where BLAS threads
# only add synchronisation (measured: 13 ms with threads vs 1.7 ms with one, 10k x 256, on a
# busy 2-core machine). Set before numpy loads; an explicit setting of the user's wins.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
