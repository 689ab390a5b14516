"""The retrieval backend is chosen in one place (engine/retrieval/registry.py): what
`$GNO_TUI_RETRIEVAL` accepts is the registry's choices, refused alike by the engine and the
cold sqlite3 read path; `gno-tui status` shows the chosen entry's declared name and
capabilities; and a registry handed to the opener (not a global) can carry one more backend,
chosen by its word."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from engine.contract.errors import MemoryFailure
from engine.facade import open_recall_service, open_service
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest
from engine.retrieval.embeddings import Embedder, EmbedderStatus, StaticModelEmbedder
from engine.retrieval.in_memory import InMemoryIndex
from engine.retrieval.registry import IN_MEMORY, POSTGRES, REGISTRY, Backend, Place, Registry
from engine.retrieval.seam import (
    BATCH_CANDIDATES,
    LEXICAL,
    RETRIEVAL_ENV,
    SEMANTIC,
    RetrievalIndex,
    Visibility,
    candidates_for,
)
from engine.retrieval.snapshot import Snapshot
from engine.storage.embedded.sqlite_reader import open_sqlite_store
from engine.storage.embedded.sqlite_settings import sqlite_url

LEXICAL_ONLY = EmbedderStatus(None, "lexical")


def _open_probe(
    backend: Backend, place: Place, embedder: Embedder | None, snapshot: Callable[[], Snapshot]
) -> Callable[[], RetrievalIndex]:
    # A real index over the store's snapshot, under the probe's own declaration.
    return lambda: InMemoryIndex(snapshot(), embedder, backend=backend)


PROBE = Backend(
    name="test-probe",
    choices=("probe",),
    capabilities=frozenset({LEXICAL}),  # no BATCH_CANDIDATES: callers loop
    applies=lambda place, insisted: True,
    opener=_open_probe,
    summary="a test's probe",
)


def remembered(home: Path) -> None:
    service = open_service(home=home, embedder_status=LEXICAL_ONLY)
    try:
        service.remember(
            RememberRequest("alice drinks green tea", ["s"], "w", "sess", decision="add")
        )
    finally:
        service.close()


def test_the_choices_are_the_registrys_in_table_order() -> None:
    assert REGISTRY.backends == (POSTGRES, IN_MEMORY)
    assert REGISTRY.choices == ("auto", "postgres", "memory")
    for choice in REGISTRY.choices:
        assert REGISTRY.chosen({RETRIEVAL_ENV: f" {choice.upper()} "}) == choice
    assert REGISTRY.chosen({}) == REGISTRY.chosen({RETRIEVAL_ENV: ""}) == "auto"
    with pytest.raises(MemoryFailure) as refused:
        REGISTRY.chosen({RETRIEVAL_ENV: "probe"})  # another registry's word
    assert refused.value.code == "MEMORY_USAGE_INVALID"
    assert "use one of auto, postgres, memory." in refused.value.message


def test_auto_takes_the_first_entry_that_applies() -> None:
    sqlite = Place("sqlite")
    assert REGISTRY.choose(sqlite, "auto") is IN_MEMORY  # PostgreSQL does not apply
    assert Registry((PROBE, *REGISTRY.backends)).choose(sqlite, "auto") is PROBE
    with pytest.raises(MemoryFailure) as refused:
        REGISTRY.choose(sqlite, "postgres")  # insisted on where it cannot be had
    assert refused.value.code == "MEMORY_QUERY_FAILED"
    assert "postgresql://" in refused.value.message


def test_an_unknown_choice_is_refused_alike_by_the_engine_and_the_read_path(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remembered(home)
    monkeypatch.setenv(RETRIEVAL_ENV, "bogus")
    said = "$GNO_TUI_RETRIEVAL is 'bogus'; use one of auto, postgres, memory."
    service = open_service(home=home, embedder_status=LEXICAL_ONLY)
    try:
        with pytest.raises(MemoryFailure) as by_engine:
            service.status()
    finally:
        service.close()
    with pytest.raises(MemoryFailure) as by_reader:
        open_recall_service(home=home, embedder_status=LEXICAL_ONLY)
    with pytest.raises(MemoryFailure) as by_sqlite3:
        open_sqlite_store(
            home, db_url=sqlite_url(home / "index.sqlite"), embedder_status=lambda: LEXICAL_ONLY
        )
    for refused in (by_engine, by_reader, by_sqlite3):
        assert refused.value.code == "MEMORY_USAGE_INVALID"
        assert refused.value.message == said


def test_status_shows_the_chosen_entrys_declaration(
    home: Path, tiny_embedder: StaticModelEmbedder
) -> None:
    for status, legs in ((LEXICAL_ONLY, {LEXICAL}), (EmbedderStatus(tiny_embedder), None)):
        service = open_service(home=home, embedder_status=status)
        try:
            service.remember(RememberRequest("bob likes tea", ["s"], "w", "sess", decision="add"))
            shown = service.status()["retrieval"]
            entry = next(b for b in REGISTRY.backends if b.name == shown["backend"])
            declared = entry.capabilities if legs is None else entry.usable(semantic=False)
            assert shown["capabilities"] == sorted(declared)
            assert service.engine.retrieval().capabilities == declared
            assert BATCH_CANDIDATES in declared and (SEMANTIC in declared) == (legs is None)
        finally:
            service.close()


def test_a_backend_of_a_registry_handed_to_the_opener_is_chosen_by_its_word(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remembered(home)
    registry = Registry((*REGISTRY.backends, PROBE))
    monkeypatch.setenv(RETRIEVAL_ENV, "probe")
    service = open_service(home=home, embedder_status=LEXICAL_ONLY, backends=registry)
    try:
        assert service.status()["retrieval"] == {
            "backend": "test-probe",
            "capabilities": ["lexical"],
        }
        index = service.engine.retrieval()
        seen = Visibility(["s"], None, service.engine.now())
        texts = ["alice drinks tea", "green tea"]
        assert candidates_for(index, texts, [seen, seen]) == [
            index.candidates(text, seen) for text in texts
        ]
    finally:
        service.close()
    # The cold read path chooses from the registry it is handed too.
    recall = open_recall_service(home=home, embedder_status=LEXICAL_ONLY, backends=registry)
    try:
        found = recall.recall(RecallRequest("green tea", ["s"], "w", "sess"))
        assert [fact["text"] for fact in found["facts"]] == ["alice drinks green tea"]
        assert recall._store.retrieval().name == "test-probe"
    finally:
        recall.close()
    # Nothing global: the default registry still refuses the word.
    with pytest.raises(MemoryFailure) as refused:
        open_recall_service(home=home, embedder_status=LEXICAL_ONLY)
    assert refused.value.code == "MEMORY_USAGE_INVALID"


def test_the_cli_help_lists_what_the_registry_holds(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`gno-tui status --help` names the choices from the registry, with what each backend
    is: a backend added to the table shows there without touching the CLI."""
    from gno_tui.cli import build_parser

    def status_help() -> str:
        with pytest.raises(SystemExit):
            build_parser().parse_args(["status", "--help"])
        return " ".join(capsys.readouterr().out.split())

    shown = status_help()
    assert "$GNO_TUI_RETRIEVAL chooses the backend: auto (the first of these that applies)" in shown
    for backend in REGISTRY.backends:
        assert f"{'|'.join(backend.choices)} ({backend.summary})" in shown
    probing = Registry((PROBE, *REGISTRY.backends))
    monkeypatch.setattr("engine.facade.RETRIEVAL_BACKENDS", probing)
    assert "probe (a test's probe), postgres (" in status_help()
