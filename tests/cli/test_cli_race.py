"""Two processes supersede the same predecessor at the same moment: one wins, one conflicts,
and afterwards the index and the files agree."""

from __future__ import annotations

ROUNDS = 3


def test_racing_supersedes_give_one_winner_and_one_conflict(cli, home, probe, make_client):
    client = make_client(home)
    try:
        predecessors = [
            client.add(f"Carol lives in Paris, take {i}", "user:carol")["record"]
            for i in range(ROUNDS)
        ]
    finally:
        client.engine.db.dispose()

    for index, old in enumerate(predecessors):
        calls = [
            (
                "remember",
                f"Carol lives in {city}, take {index}",
                "--supersede",
                old["uri"],
                "--predecessor-hash",
                old["contentHash"],
                "--json",
            )
            for city in ("Lyon", "Berlin")
        ]
        # Both processes start back to back and reach the write after the same start-up time.
        first, second = cli.many(calls)
        outcomes = sorted(
            [(r.returncode, r.doc.get("outcome") or r.error["code"]) for r in (first, second)]
        )
        assert outcomes == [(0, "superseded"), (4, "MEMORY_SUPERSEDE_CONFLICT")], (
            first.stdout,
            second.stdout,
        )
        winner = first if first.returncode == 0 else second
        assert winner.doc["sync"] == {"status": "completed"}
        assert winner.doc["record"]["supersedes"] == [old["uri"]]
        heads = probe.query(
            "SELECT record_id FROM facts WHERE superseded_by IS NULL AND text LIKE ?",
            f"Carol lives in %, take {index}",
        )
        assert heads == [(winner.doc["record"]["recordId"],)]

    # One successor per round, no orphan file from the loser.
    assert probe.state() == (2 * ROUNDS, 2 * ROUNDS)
    report = cli("reindex", "--json")
    assert report.returncode == 0, (report.stdout, report.stderr)
    assert (report.doc["added"], report.doc["changed"], report.doc["removed"]) == (0, 0, 0)
    assert report.doc["problems"] == []
    assert len(probe.files()) == len(probe.rows()) == report.doc["indexed"]
