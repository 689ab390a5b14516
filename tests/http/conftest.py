"""Shared servers for the HTTP tests: one `gno-tui serve` per module on a home of its own,
with tokens of the grants the tests need (a server start costs about a second; most tests only
need a store and a token)."""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from http_harness import RunningServer, make_token, serve


@dataclass(frozen=True)
class SharedServer:
    server: RunningServer
    home: Path
    writer: str  # scopes team:a and user:alice, writes apply, namespace notes
    proposer: str  # scope team:a, writes held for a person
    curator: str  # scope team:a, writes apply, may decide reviews
    outsider: str  # scope team:b only


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
