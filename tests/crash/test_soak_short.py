"""The soak's short form: benchmarks/soak.py's harness for a bounded amount of work (a count of
acknowledged writes, not a time), in both storage modes.

Writers on every surface at once (the console script, an MCP client over stdio, httpx to
`gno-tui serve` with a writing and a propose-only token, a person deciding proposals and
superseding chain heads through the façade) and a reader; the console-script writer, the MCP
client with its server, the HTTP server and the person are each SIGKILLed once and started
again; in the server mode PostgreSQL restarts halfway. The run goes on until every writer
hit by a kill or the restart has had a write acknowledged since. Then: every acknowledged
write is in the store (0 lost) and no chain, fact or key has two heads (0 forks).

The 30-minute run and its figures: `python benchmarks/soak.py`, benchmarks/results/soak.md."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.soak import KILLED_IN_TURN, Config, run

WRITES = 200


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["embedded", "server"])
def test_a_short_soak_loses_no_acknowledged_write_and_forks_nothing(
    mode: str, tmp_path: Path
) -> None:
    config = Config(
        mode=mode,
        writes=WRITES,
        kills=len(KILLED_IN_TURN),
        rate=0,
        model="none",
        sample_every=2,
        warmup=0,
    )
    result = run(config, tmp_path / "soak")
    verdict = result["verdict"]
    where = f"{mode} mode, work folder {tmp_path / 'soak'}"
    assert verdict.lost == [], f"{where}: acknowledged writes lost: {verdict.lost[:10]}"
    assert verdict.forks == [], f"{where}: forks: {verdict.forks[:10]}"
    assert verdict.acknowledged >= WRITES

    events = [event["event"] for event in result["events"]]
    assert [e for e in events if e.startswith("SIGKILL")] == [
        f"SIGKILL {role}" for role in KILLED_IN_TURN
    ]
    if mode == "server":
        assert any(e.startswith("PostgreSQL restart") for e in events), events
    else:
        assert result["reindex"]["problems"] == [] and result["reindex"]["forks"] == []
    # Every surface wrote, and went on writing after it was killed (the run waits for it).
    writers = verdict.writers
    assert all(writers[name]["acks"] > 0 for name in ("cli", "mcp", "http", "person")), writers
    outcomes = verdict.outcomes
    assert outcomes.get("supersede", 0) > 0 and outcomes.get("key", 0) > 0, outcomes
    assert outcomes.get("accept", 0) > 0 and outcomes.get("recalls", 0) > 0, outcomes


def test_the_soak_check_sees_a_lost_write_and_each_kind_of_fork(tmp_path: Path) -> None:
    """The check itself, on a store it is handed: a write acknowledged but missing, a
    supersede whose predecessor names another successor, a file gone, two successors of one
    fact, a chain with two heads, a key revision held twice."""
    from benchmarks.soak_check import verify
    from benchmarks.soak_writers import CHAINS, KEYS

    def row(record_id: str, **fields: object) -> dict[str, object]:
        base = {
            "record_id": record_id,
            "content_hash": f"h-{record_id}",
            "text": record_id,
            "scopes": ["soak"],
            "supersedes": [],
            "superseded_by": None,
            "retired_at": None,
            "kv_namespace": None,
            "kv_key": None,
            "kv_revision": None,
            "collection": "memory",
            "rel_path": f"facts/d/{record_id}.md",
        }
        return {**base, **fields}

    heads = [row(f"head-{chain}", scopes=[chain]) for chain in CHAINS]
    keys = [
        row(f"key-{n}", kv_namespace="default", kv_key=key, kv_revision=1)
        for n, key in enumerate(KEYS)
    ]
    sound = [*heads, *keys, row("a")]
    root = tmp_path / "memory"
    (root / "facts" / "d").mkdir(parents=True)
    for fact in sound:
        (root / str(fact["rel_path"])).write_text("x", encoding="utf-8")
    acks = {"w": [{"op": "add", "recordId": "a", "hash": "h-a", "t": 1.0}]}
    assert verify(acks, sound, {"memory": root}).passed

    lost = {"w": [*acks["w"], {"op": "add", "recordId": "b", "hash": "h-b", "t": 2.0}]}
    assert "w: add b is not in the store" in verify(lost, sound, {"memory": root}).lost
    moved = {
        "w": [
            {
                "op": "supersede",
                "recordId": "a",
                "hash": "h-a",
                "predecessor": "head-chain:c0",
                "t": 1.0,
            }
        ]
    }
    assert verify(moved, sound, {"memory": root}).lost  # c0's head names no successor
    (root / "facts" / "d" / "a.md").unlink()
    assert verify(acks, sound, {"memory": root}).lost == ["w: a's file is missing"]

    twice = [*sound, row("s1", supersedes=["gno://x/a"]), row("s2", supersedes=["gno://x/a"])]
    assert any("superseded by" in fork for fork in verify({}, twice, {}).forks)
    two_heads = [*sound, row("extra", scopes=[CHAINS[1]])]
    assert f"chain {CHAINS[1]} has 2 current heads" in verify({}, two_heads, {}).forks
    revision = [
        *sound,
        row("again", kv_namespace="default", kv_key=KEYS[0], kv_revision=1, superseded_by="x"),
    ]
    assert any("twice" in fork for fork in verify({}, revision, {}).forks)
