"""Shared fixtures: schema checks, temporary stores, a tiny static model, and a CLI runner.

Every remember/recall result any test sees goes through `valid` (engine) or `cli` (CLI),
which assert that it validates against the seed schemas (docs/contract.md section 1)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pg_homes
import pytest

# The session's throwaway PostgreSQL (`pg_server`) and a fresh database on it (`pg_url`), for
# tests/pg and the server-mode tests of the other folders: one server per test session.
from pg_fixtures import pg_server, pg_url  # noqa: F401

from engine.contract.errors import ERROR_CODES
from engine.contract.validation import schema_errors
from engine.facade.factory import open_engine
from engine.facade.service import MemoryService
from engine.memory.recall import RecallRequest
from engine.memory.remember import RememberRequest
from engine.retrieval.embeddings import EmbedderStatus, StaticModelEmbedder
from engine.storage.store import MemoryEngine

TESTS = Path(__file__).parent
NO_MODEL_REASON = "no model in this test (lexical mode)"
CALLER = "test:agent"
SESSION = "test-session"

# The words the tiny model knows; anything else is dropped by its word-level tokenizer.
TINY_VOCAB = [
    *("[UNK]", "[PAD]", "alice", "bob", "carol", "drinks", "likes", "prefers", "green"),
    *("black", "tea", "coffee", "water", "lives", "in", "paris", "lyon", "berlin", "moved"),
    *("to", "the", "a", "deadline", "project", "is", "on", "friday", "monday", "zebra"),
    *("stripes", "savanna", "quiet", "note", "fact"),
]


# -- schema checks ----------------------------------------------------------------------------


def assert_valid(kind: str, document: Any) -> Any:
    """`kind` is remember, recall or ob1_recall; returns the document for chaining."""
    errors = schema_errors(kind, document)
    assert not errors, f"{kind} result breaks its schema: {errors}\n{document!r}"
    return document


@pytest.fixture
def valid() -> Callable[[str, Any], Any]:
    return assert_valid


# -- the tiny model ---------------------------------------------------------------------------


def build_tiny_model(dims: int = 16, seed: int = 7) -> Any:
    """A model2vec StaticModel over a word-level vocabulary with random vectors, built the way
    model2vec's own tests build theirs (no download, no teacher)."""
    from model2vec import StaticModel
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.normalizers import Lowercase
    from tokenizers.pre_tokenizers import Whitespace

    vocab = {word: index for index, word in enumerate(TINY_VOCAB)}
    tokenizer = Tokenizer(WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.normalizer = Lowercase()
    tokenizer.pre_tokenizer = Whitespace()
    vectors = np.random.default_rng(seed).standard_normal((len(vocab), dims)).astype(np.float32)
    return StaticModel(vectors=vectors, tokenizer=tokenizer, normalize=True)


@pytest.fixture(scope="session")
def tiny_model() -> Any:
    return build_tiny_model()


@pytest.fixture(scope="session")
def tiny_embedder(tiny_model: Any) -> StaticModelEmbedder:
    return StaticModelEmbedder(tiny_model, "tiny-test")


@pytest.fixture(scope="session")
def tiny_model_dir(tiny_model: Any, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny model saved as a model2vec folder, for CLI runs that test semantics."""
    folder = tmp_path_factory.mktemp("tiny-model")
    tiny_model.save_pretrained(str(folder))
    assert (folder / "model.safetensors").is_file()
    return folder


# -- engines ----------------------------------------------------------------------------------


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


# -- PostgreSQL: the same contract tests on a server database ---------------------------------
#
# With $GNO_TUI_TEST_PG set, every home an engine, CLI or MCP test uses gets a database of its
# own on that server (tests/pg_homes.py): here by the factory's default URL, in the processes a
# test starts by $GNO_TUI_DB.


@pytest.fixture(scope="module", autouse=True)
def postgres_per_home(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[None]:
    """Module-wide, so that a module's shared store (a module-scoped fixture, set up before
    any of its tests) is on the server too; its databases are dropped after the module.

    Every test that is not skipped must have run on the server: a SQLite file written in the
    test folders while the module ran means that some process opened a home without the
    home's database, and tested the embedded mode a second time."""
    path = Path(str(request.path))
    if not pg_homes.PG_SERVER or not path.is_relative_to(TESTS):
        yield
        return
    if path.relative_to(TESTS).parts[0] not in pg_homes.CONTRACT_SUITES:
        yield
        return
    started = time.time()
    databases = pg_homes.HomeDatabases(pg_homes.PG_SERVER)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            "engine.facade.factory.sqlite_url", lambda index: databases.url_for(index.parent)
        )
        patch.setattr(pg_homes, "active", databases)
        yield
    databases.drop_all()
    folder = tmp_path_factory.getbasetemp()
    written = sorted(
        str(p.relative_to(folder)) for p in folder.rglob("*.sqlite") if p.stat().st_mtime >= started
    )
    assert written == [], f"SQLite used on the server run by {path.name}: {written}"


@pytest.fixture(autouse=True)
def server_mode_skips(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the server, the tests of the embedded mode's own machinery are skipped."""
    if pg_homes.active is None:
        return
    if request.node.get_closest_marker("sqlite_only"):
        pytest.skip("reads or replaces the SQLite index file itself")
    if request.node.get_closest_marker("embedded_mode"):
        pytest.skip("the embedded mode's own machinery (files canonical, journal, home lock)")
    if "pg_url" in request.fixturenames:
        pytest.skip("a server-mode test on a server of its own: it ran in the default run")
    if request.node.get_closest_marker("in_memory_index"):
        # It tests the in-process index itself: keep it, where the server could rank.
        monkeypatch.setenv("GNO_TUI_RETRIEVAL", "memory")


def _open(home: Path, status: EmbedderStatus) -> MemoryEngine:
    return open_engine(home=home, embedder_status=status)


@pytest.fixture
def engine(home: Path) -> Iterator[MemoryEngine]:
    """A lexical-mode engine (no model) on a temporary home."""
    store = _open(home, EmbedderStatus(None, NO_MODEL_REASON))
    yield store
    store.db.dispose()


@pytest.fixture
def semantic_engine(home: Path, tiny_embedder: StaticModelEmbedder) -> Iterator[MemoryEngine]:
    store = _open(home, EmbedderStatus(tiny_embedder))
    yield store
    store.db.dispose()


@pytest.fixture
def memory(engine: MemoryEngine) -> MemoryService:
    """The façade over the `engine` fixture (the same store)."""
    return MemoryService(engine)


@pytest.fixture
def semantic_memory(semantic_engine: MemoryEngine) -> MemoryService:
    """The façade over the `semantic_engine` fixture (the same store)."""
    return MemoryService(semantic_engine)


class Client:
    """Calls the façade with test defaults and validates every result against its schema.
    `engine` is the storage beneath, for tests that hand it to engine functions; assigning
    it (a rebuilt store) moves the façade onto that store too."""

    def __init__(self, engine: MemoryEngine) -> None:
        self.memory = MemoryService(engine)

    @property
    def engine(self) -> MemoryEngine:
        return self.memory.engine

    @engine.setter
    def engine(self, engine: MemoryEngine) -> None:
        self.memory = MemoryService(engine)

    def remember(
        self,
        text: str | None,
        scopes: Sequence[str] | None = ("s",),
        *,
        decision: str = "add",
        hold_writes: bool = False,
        origin: str = "cli",
        **fields: Any,
    ) -> dict[str, Any]:
        fields.setdefault("caller", CALLER)
        fields.setdefault("session", SESSION)
        request = RememberRequest(
            text=text,
            scopes=list(scopes) if scopes is not None else None,
            decision=decision,
            **fields,
        )
        result = self.memory.remember(request, hold_writes=hold_writes, origin=origin)
        return assert_valid("remember", result)

    def add(self, text: str, *scopes: str, **fields: Any) -> dict[str, Any]:
        result = self.remember(text, scopes or ("s",), **fields)
        assert result["outcome"] == "added", result
        assert result["sync"] == {"status": "completed"}
        return result

    def supersede(
        self, old: dict[str, Any], text: str, scopes: Sequence[str] | None = None, **fields: Any
    ) -> dict[str, Any]:
        record = old.get("record", old)
        return self.remember(
            text,
            scopes,
            decision="supersede",
            predecessor=record["uri"],
            predecessor_hash=record["contentHash"],
            **fields,
        )

    def recall(self, query: str, scopes: Sequence[str] = ("s",), **fields: Any) -> dict[str, Any]:
        fields.setdefault("caller", CALLER)
        fields.setdefault("session", SESSION)
        result = self.memory.recall(RecallRequest(query=query, scopes=list(scopes), **fields))
        return assert_valid("recall", result)


@pytest.fixture
def client(engine: MemoryEngine) -> Client:
    return Client(engine)


@pytest.fixture
def semantic_client(semantic_engine: MemoryEngine) -> Client:
    return Client(semantic_engine)


# -- looking at a store from the outside ------------------------------------------------------


@dataclass
class StoreProbe:
    """The fact files a user sees and the index's rows, read without the store's own engine.

    The fact files are mode-aware: in the embedded mode the home's canonical files; in the
    server mode (an engine test on PostgreSQL) the mirror `export --format gno` renders from
    the rows, written afresh beside the home at each call. Either way a test that reads them
    checks the fields a user would find in the file."""

    home: Path

    @property
    def server_mode(self) -> bool:
        return pg_homes.server_mode()

    def files(self) -> list[Path]:
        return pg_homes.fact_files(self.home)

    def abs_path(self, record: dict[str, Any], collection: str = "memory") -> str:
        """A remember result's absPath for `record`: its fact file in the home (embedded), or
        its uri (server mode, where no file is written)."""
        if self.server_mode:
            return str(record["uri"])
        day = record["createdAt"][:10]
        path = self.home / "collections" / collection / "facts" / day / f"{record['recordId']}.md"
        return str(path.resolve())

    def file_texts(self) -> str:
        return "\n".join(path.read_text(encoding="utf-8") for path in self.files())

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """`?` placeholders, as sqlite3 takes them; under PostgreSQL they become psycopg's."""
        url = pg_homes.database_of(self.home)
        if url is not None:
            import psycopg

            with psycopg.connect(url.replace("postgresql+psycopg", "postgresql")) as connection:
                return [tuple(r) for r in connection.execute(sql.replace("?", "%s"), params)]
        db = self.home / "index.sqlite"
        if not db.exists():
            return []
        with sqlite3.connect(db, timeout=10) as connection:
            return connection.execute(sql, params).fetchall()

    def rows(self) -> list[tuple[str, str]]:
        """(record_id, text) of every row of the facts table."""
        return [tuple(r) for r in self.query("SELECT record_id, text FROM facts")]

    def state(self) -> tuple[int, int]:
        return len(self.files()), len(self.rows())

    def assert_nothing_written(self, before: tuple[int, int], text: str | None = None) -> None:
        assert self.state() == before, "a rejected call wrote a fact file or an index row"
        if text:
            assert text not in self.file_texts()
            assert all(text != row_text for _, row_text in self.rows())


@pytest.fixture
def probe(home: Path) -> StoreProbe:
    return StoreProbe(home)


# -- the CLI ----------------------------------------------------------------------------------


def console_script() -> str:
    beside = Path(sys.executable).parent / "gno-tui"
    if beside.is_file():
        return str(beside)
    found = shutil.which("gno-tui")
    assert found, "the gno-tui console script is not installed"
    return found


@dataclass
class CliResult:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    doc: Any = field(default=None)

    @property
    def error(self) -> dict[str, str] | None:
        if isinstance(self.doc, dict) and "error" in self.doc:
            return self.doc["error"]
        return None


def cli_env(
    model: str | Path | None = None, *, home: Path | None = None, **extra: str
) -> dict[str, str]:
    """A console script's environment: none of this shell's GNO_TUI_* settings, no model (or
    `model`), the test's caller and session; with `home`, the server database that home uses
    when the test runs on PostgreSQL (tests/pg_homes.py)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GNO_TUI_")}
    env["GNO_TUI_MODEL"] = str(model) if model else "/nonexistent/gno-tui-test-model"
    env["GNO_TUI_CALLER"] = CALLER
    env["GNO_TUI_SESSION"] = SESSION
    env.update(pg_homes.database_env(home))
    env.update(extra)
    return env


def check_cli_output(args: Sequence[str], returncode: int, stdout: str, stderr: str) -> CliResult:
    """Parse --json output; every remember/recall result is validated, every error is the
    contract's `{"error": {code, message}}` with the exit code its code maps to."""
    from engine.contract.errors import exit_code_for

    result = CliResult(list(args), returncode, stdout, stderr)
    if "--json" not in args or not stdout.strip():
        return result
    result.doc = json.loads(stdout)
    if result.error is not None:
        assert set(result.doc) == {"error"}
        assert set(result.error) == {"code", "message"}
        assert result.error["code"] in ERROR_CODES
        assert result.error["message"].strip()
        assert returncode == exit_code_for(result.error["code"]), (returncode, result.doc)
        return result
    command = next((a for a in args if a in ("memory", "remember", "recall")), None)
    if command == "memory":  # the keyed API has response schemas of its own
        verb = next(a for a in args if a in ("remember", "recall", "search", "get", "history"))
        assert_valid(
            {"remember": "keyed_hit", "get": "keyed_hit"}.get(verb, f"keyed_{verb}"), result.doc
        )
    elif command == "remember":
        assert_valid("remember", result.doc)
    elif command == "recall":
        ob1 = "--format" in args and args[list(args).index("--format") + 1] == "ob1"
        assert_valid("ob1_recall" if ob1 else "recall", result.doc)
    return result


class Cli:
    env = staticmethod(cli_env)

    def __init__(self, home: Path) -> None:
        self.home = home
        self.script = console_script()

    def argv(self, args: Sequence[str], home: Path | None) -> list[str]:
        return [self.script, "--home", str(home or self.home), *args]

    def env_for(
        self, args: Sequence[str], home: Path | None, env: dict[str, str] | None
    ) -> dict[str, str]:
        """`env` (else cli_env()), plus the home's server database when the test runs on
        PostgreSQL, unless the call names a database itself."""
        env = dict(env or cli_env())
        if "--db" not in args and "GNO_TUI_DB" not in env:
            env.update(pg_homes.database_env(home or self.home))
        return env

    def __call__(
        self,
        *args: str,
        home: Path | None = None,
        env: dict[str, str] | None = None,
        stdin: str | None = None,
        timeout: float = 60,
    ) -> CliResult:
        argv = self.argv(args, home)
        done = subprocess.run(
            argv,
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env_for(args, home, env),
            timeout=timeout,
            check=False,
        )
        return check_cli_output(args, done.returncode, done.stdout, done.stderr)

    def start(
        self, *args: str, home: Path | None = None, env: dict[str, str] | None = None
    ) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(args, home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=self.env_for(args, home, env),
        )

    @staticmethod
    def finish(
        args: Sequence[str], process: subprocess.Popen[str], timeout: float = 60
    ) -> CliResult:
        stdout, stderr = process.communicate(timeout=timeout)
        return check_cli_output(args, process.returncode, stdout, stderr)

    def here(
        self, *args: str, home: Path | None = None, env: dict[str, str] | None = None
    ) -> CliResult:
        """The same command through `gno_tui.cli.main` in this process (no start-up cost);
        the environment is the one a process would get, for the duration of the call."""
        import contextlib
        import io

        from gno_tui.cli import main

        saved = dict(os.environ)
        out, err = io.StringIO(), io.StringIO()
        os.environ.clear()
        os.environ.update(self.env_for(args, home, env))
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = main(self.argv(args, home)[1:])
        finally:
            os.environ.clear()
            os.environ.update(saved)
        return check_cli_output(args, code, out.getvalue(), err.getvalue())

    def many(
        self, calls: Sequence[Sequence[str]], env: dict[str, str] | None = None
    ) -> list[CliResult]:
        """Run independent calls in parallel (each is its own process); results in order."""
        started = [(call, self.start(*call, env=env)) for call in calls]
        return [self.finish(call, process) for call, process in started]


@pytest.fixture
def cli(home: Path) -> Cli:
    return Cli(home)


# -- factories for module-scoped setups -------------------------------------------------------


@pytest.fixture(scope="session")
def make_cli() -> type[Cli]:
    return Cli


@pytest.fixture(scope="session")
def make_probe() -> type[StoreProbe]:
    return StoreProbe


@pytest.fixture(scope="session")
def make_client() -> Callable[[Path], Client]:
    """A lexical-mode Client on `home` (the caller disposes `client.engine.db`)."""

    def make(home: Path) -> Client:
        return Client(_open(home, EmbedderStatus(None, NO_MODEL_REASON)))

    return make


@pytest.fixture(scope="session")
def client_over() -> Callable[[MemoryEngine], Client]:
    """A Client over a store the test opened itself. Test modules take it from here, not with
    `from conftest import Client`: at run time `conftest` is whichever conftest.py pytest
    imported last (tests/mcp and tests/snapshots have their own)."""
    return Client


# -- slow tests -------------------------------------------------------------------------------

# Modules marked `slow` as a whole (pytest -m "not slow" skips them; the default run keeps
# them): the multi-process stress and race tests. They do not import pytest themselves, so the
# marker is added here rather than with @pytest.mark.slow in the module.
SLOW_MODULES = (
    "tests/mcp/test_stress.py",
    "tests/cli/test_cli_race.py",
    "tests/cli/test_cli_trust_import.py",
)


# Modules that test the in-process index itself (its rebuilds, its snapshot): on a PostgreSQL
# server with pgvector they still rank in process (marker `in_memory_index`).
IN_MEMORY_INDEX_MODULES = ("tests/engine/test_incremental_index.py",)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The server-mode run's template database goes with the session (tests/pg_homes.py)."""
    pg_homes.drop_template()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.as_posix().endswith(SLOW_MODULES):
            item.add_marker(pytest.mark.slow)
        if item.path.as_posix().endswith(IN_MEMORY_INDEX_MODULES):
            item.add_marker(pytest.mark.in_memory_index)
