"""A team's servers on one PostgreSQL database: two `gno-tui serve` processes (two machines'
homes, one $GNO_TUI_DB), eight clients writing through both at once: adds, retries by
requestId (the same id through both servers), supersedes racing on one chain, keyed updates
racing on one key (each retried by its Idempotency-Key through the other server). Afterwards,
read by the CLI: every acknowledged write is there, each once; one head per chain; the key's
revisions one line. And `serve --workers 2` on such a store answers REST and MCP on every
worker.

Only on a server database (a server-mode run): the embedded store is one machine's."""

from __future__ import annotations

import json
import subprocess
import threading
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pg_homes
import pytest
from http_harness import CONSOLE_SCRIPT, RunningServer, assert_valid, child_env, cli, serve
from mcp_over_http import call, mcp_session, structured_ok

pytestmark = pytest.mark.slow

CLIENTS = 8
ADDS = 6  # per client
RACES = 4  # ids each sent by two clients at once, through the two servers
CHAIN_TRIES = 3  # supersede attempts per client
KEY_TRIES = 3  # keyed update attempts per client
CHAIN = "Chain marker heron"
KEY = "team/standup-room"


@pytest.fixture(autouse=True)
def only_on_a_server_database() -> None:
    if not pg_homes.server_mode():
        pytest.skip("a team's servers share a PostgreSQL database: a server-mode run only")


@dataclass
class Team:
    servers: tuple[RunningServer, RunningServer]
    home: Path
    env: dict[str, str]
    token: str


@pytest.fixture
def team(tmp_path: Path) -> Iterator[Team]:
    one, two = tmp_path / "machine-one", tmp_path / "machine-two"
    one.mkdir()
    two.mkdir()
    env = child_env(one)  # both machines' servers on the first home's database
    token = cli(
        one, "token", "create", "team-bot", "--scope", "team:a", "--namespace", "team",
        "--write", env=env,
    )["token"]  # fmt: skip
    with serve(one, env=env) as first, serve(two, env=env) as second:
        yield Team((first, second), one, env, str(token))


@dataclass
class Outcomes:
    adds: list[dict[str, Any]] = field(default_factory=list)  # acknowledged add results
    supersedes: list[dict[str, Any]] = field(default_factory=list)  # acknowledged ones
    updates: list[str] = field(default_factory=list)  # contents of acknowledged keyed updates
    refusals: Counter[str] = field(default_factory=Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)


def head_of_chain(http: httpx.Client) -> dict[str, Any]:
    response = http.post(
        "/api/memory/recall", json={"query": CHAIN, "scopes": ["team:a"], "maxFacts": 50}
    )
    assert response.status_code == 200, response.text
    heads = [f for f in assert_valid("recall", response.json())["facts"] if CHAIN in f["text"]]
    assert len(heads) == 1, heads  # recall serves one head of a chain, never two
    return heads[0]


def client_work(team: Team, index: int, barriers: list[threading.Barrier], out: Outcomes) -> None:
    mine, other = team.servers[index % 2], team.servers[1 - index % 2]
    with mine.client(team.token) as http, other.client(team.token) as retry_http:
        for n in range(ADDS):
            body = {
                "text": f"Team marker ibis: client {index} note {n}",
                "scopes": ["team:a"],
                "decision": "add",
                "requestId": f"team-add-{index}-{n}",
            }
            first = http.post("/api/memory/remember", json=body)
            assert first.status_code == 201, first.text
            with out.lock:
                out.adds.append(first.json())
            if n % 2 == 0:  # a retry through the other server answers the first result
                again = retry_http.post("/api/memory/remember", json=body)
                assert (again.status_code, again.json()) == (201, first.json())
        if index < 2 * RACES:  # one id, two clients, two servers, at once
            race = index % RACES
            body = {
                "text": f"Team marker jacana: raced {race}",
                "scopes": ["team:a"],
                "decision": "add",
                "requestId": f"team-race-{race}",
            }
            barriers[race].wait(timeout=60)
            raced = http.post("/api/memory/remember", json=body)
            assert raced.status_code == 201, raced.text
            with out.lock:
                out.adds.append(raced.json())
        for attempt in range(CHAIN_TRIES):
            head = head_of_chain(http)
            response = http.post(
                "/api/memory/remember",
                json={
                    "text": f"{CHAIN}: version by client {index} try {attempt}",
                    "scopes": ["team:a"],
                    "decision": "supersede",
                    "predecessorUri": head["uri"],
                    "predecessorHash": head["contentHash"],
                },
            )
            with out.lock:
                if response.status_code == 201:
                    out.supersedes.append(response.json())
                else:
                    assert response.status_code in (404, 409), response.text
                    out.refusals[response.json()["error"]["code"]] += 1
        for attempt in range(KEY_TRIES):
            current = http.get(f"/v1/namespaces/team/records/{KEY}")
            assert current.status_code == 200, current.text
            content = f"The standup room, as client {index} try {attempt} saw it"
            url = f"/v1/namespaces/team/records/{KEY}"
            update: dict[str, Any] = {"memory": {"content": content}}
            headers = {
                "If-Match": current.headers["etag"],
                "Idempotency-Key": f"team-key-{index}-{attempt}",
            }
            response = http.put(url, json=update, headers=headers)
            if response.status_code == 200:  # its retry through the other server: the same
                again = retry_http.put(url, json=update, headers=headers)
                assert (again.status_code, again.json()) == (200, response.json())
            with out.lock:
                if response.status_code == 200:
                    out.updates.append(content)
                else:
                    assert response.status_code == 409, response.text
                    out.refusals[response.json()["error"]["code"]] += 1


def exported(team: Team) -> list[dict[str, Any]]:
    """Every fact of the shared database, history included, by `gno-tui export`."""
    done = subprocess.run(
        [str(CONSOLE_SCRIPT), "--home", str(team.home), "export", "--format", "jsonl"],
        env=team.env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]


def test_two_servers_on_one_database_lose_nothing_acknowledged(team: Team) -> None:
    with team.servers[0].client(team.token) as http:
        root = http.post(
            "/api/memory/remember",
            json={"text": f"{CHAIN}: the first version", "scopes": ["team:a"], "decision": "add"},
        )
        assert root.status_code == 201, root.text
        created = http.put(
            f"/v1/namespaces/team/records/{KEY}",
            json={"memory": {"content": "The standup room is the first one"}},
            headers={"If-None-Match": "*"},
        )
        assert created.status_code == 201, created.text
    out = Outcomes()
    barriers = [threading.Barrier(2) for _ in range(RACES)]
    with ThreadPoolExecutor(max_workers=CLIENTS) as pool:
        futures = [pool.submit(client_work, team, i, barriers, out) for i in range(CLIENTS)]
        for future in futures:
            future.result()

    facts = exported(team)
    by_uri = {fact["uri"]: fact for fact in facts}
    # Every acknowledged add is stored, once; the retries and the races wrote nothing more.
    for result in out.adds:
        assert result["record"]["uri"] in by_uri, result
    ibis = [f for f in facts if f["text"].startswith("Team marker ibis")]
    assert len(ibis) == CLIENTS * ADDS == len({f["text"] for f in ibis})
    jacana = Counter(f["text"] for f in facts if f["text"].startswith("Team marker jacana"))
    assert jacana == {f"Team marker jacana: raced {race}": 1 for race in range(RACES)}

    # One chain, one head, no fork: every acknowledged supersede is a link of it.
    chain = [f for f in facts if f["text"].startswith(CHAIN)]
    assert len(chain) == 1 + len(out.supersedes)
    assert out.supersedes, "no supersede went through"
    for result in out.supersedes:
        assert result["record"]["uri"] in by_uri
    heads = [f for f in chain if not f.get("supersededBy")]
    assert len(heads) == 1, heads
    replaced = Counter(uri for f in chain for uri in f["supersedes"])
    assert all(count == 1 for count in replaced.values()), replaced
    assert len(replaced) == len(out.supersedes)
    # The chain walks from the head back to the first version without a gap.
    walked, current = 0, heads[0]
    while current["supersedes"]:
        current = by_uri[current["supersedes"][0]]
        walked += 1
    assert walked == len(out.supersedes)
    assert current["text"] == f"{CHAIN}: the first version"

    # The key's revisions are one line: the first, then every acknowledged update, once.
    history = cli(team.home, "memory", "history", KEY, "--namespace", "team", env=team.env)
    revisions = history["items"]
    assert [r["revision"] for r in revisions] == list(range(1, len(revisions) + 1))
    contents = [r["memory"]["content"] for r in revisions]
    assert contents[0] == "The standup room is the first one"
    assert sorted(contents[1:]) == sorted(out.updates)
    assert set(out.refusals) <= {
        "MEMORY_SUPERSEDE_CONFLICT",
        "MEMORY_PREDECESSOR_HASH_MISMATCH",
        "MEMORY_PREDECESSOR_NOT_FOUND",
        "MEMORY_REVISION_CONFLICT",
    }, out.refusals


async def test_serve_with_two_workers_answers_rest_and_mcp(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    token = cli(home, "token", "create", "pool", "--scope", "team:a", "--write")["token"]
    with serve(home, "--workers", "2") as server:
        assert "2 worker(s)" in "".join(server.log)
        sessions = set()
        for n in range(12):  # a new connection each: the workers take turns accepting
            with server.client(str(token)) as http:
                added = http.post(
                    "/api/memory/remember",
                    json={"text": f"Pool marker kiwi {n}", "scopes": ["team:a"],
                          "decision": "add"},
                )  # fmt: skip
                assert added.status_code == 201, added.text
                sessions.add(added.json()["record"]["session"])
        assert 1 <= len(sessions) <= 2
        for _ in range(3):  # each MCP request may reach either worker
            async with mcp_session(server, str(token)) as session:
                recalled = structured_ok(
                    await call(
                        session, "gno_recall",
                        {"query": "pool marker kiwi", "scopes": ["team:a"], "maxFacts": 20},
                    ),
                    "recall",
                )  # fmt: skip
                assert len(recalled["facts"]) == 12
