"""An import's likely duplicates go to the review queue in the transaction that commits its
facts: `gno-tui import` killed before that commit leaves neither facts nor proposals, killed
after it leaves both, and a re-run queues no proposal twice."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from engine.storage.crash_hook import CRASH_HOOK_ENV

FACTS = 12


def write_items(path: Path) -> Path:
    """FACTS facts, each in its own scope, then each again with a final period: a likely
    duplicate of the fact before it, which the import queues for a person."""
    texts = [f"Guest number {n} prefers the window table" for n in range(FACTS)]
    lines = [{"text": text, "scopes": [f"guest:{n}"]} for n, text in enumerate(texts)]
    lines += [{"text": text + ".", "scopes": [f"guest:{n}"]} for n, text in enumerate(texts)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def proposal_texts(probe) -> list[str]:
    return sorted(text for (text,) in probe.query("SELECT text FROM proposals"))


@pytest.mark.parametrize("point", ["staged:0", f"staged:{FACTS}", "committed", "published:3"])
def test_a_killed_import_leaves_its_facts_and_their_proposals_together(cli, probe, tmp_path, point):
    if probe.server_mode and point.startswith("published"):
        pytest.skip("the server mode writes no files to publish: its rows are the facts")
    assert cli("collection", "list", "--json").returncode == 0
    path = write_items(tmp_path / "items.jsonl")
    killed = cli("import", str(path), "--json", env=cli.env(**{CRASH_HOOK_ENV: point}))
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr)
    expected = sorted(f"Guest number {n} prefers the window table." for n in range(FACTS))
    if point.startswith("staged"):
        assert probe.state() == (0, 0)
        assert proposal_texts(probe) == []
    else:
        assert len(probe.rows()) == FACTS
        assert proposal_texts(probe) == expected
    rerun = cli("import", str(path), "--json")
    assert rerun.returncode == 0, rerun.stderr
    assert probe.state() == (FACTS, FACTS)
    # A re-run proposes the same duplicates again, and the queue keeps one of each.
    assert proposal_texts(probe) == expected


def test_an_import_of_only_likely_duplicates_queues_them(cli, probe, tmp_path):
    """No fact to add: the proposals are committed on their own."""
    path = write_items(tmp_path / "items.jsonl")
    assert cli("import", str(path), "--json").returncode == 0
    again = tmp_path / "again.jsonl"
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    variants = [{**row, "text": row["text"].rstrip(".") + "!"} for row in rows[:FACTS]]
    again.write_text("".join(json.dumps(v) + "\n" for v in variants), encoding="utf-8")
    report = cli("import", str(again), "--json")
    assert report.returncode == 0, report.stderr
    assert (report.doc["added"], report.doc["proposed"]) == (0, FACTS)
    assert len(proposal_texts(probe)) == 2 * FACTS
