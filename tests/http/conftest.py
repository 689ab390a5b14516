"""Shared servers for the HTTP tests: one `gno-tui serve` per module on a home of its own,
with tokens of the grants the tests need (a server start costs about a second; most tests only
need a store and a token)."""

from collections.abc import Iterator

import pytest

# SharedServer lives in http_harness so that test modules can import it by a name that is not
# ambiguous for mypy (tests/conftest.py is `conftest` too); it stays importable from here.
from http_harness import SharedServer, make_token, serve

__all__ = ["SharedServer", "shared"]


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SharedServer]:
    home = tmp_path_factory.mktemp("http") / "home"
    home.mkdir()
    writer = make_token(home, "writer", "team:a", "user:alice", write=True, namespaces=["notes"])
    proposer = make_token(home, "proposer", "team:a", namespaces=["notes"])
    curator = make_token(home, "curator", "team:a", write=True, curate=True)
    outsider = make_token(home, "outsider", "team:b", write=True, namespaces=["other"])
    with serve(home) as server:
        yield SharedServer(server, home, writer, proposer, curator, outsider)
