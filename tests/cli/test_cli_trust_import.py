"""`gno-tui import` killed at any instant leaves the store as before it (or, once its rows are
committed, as after it), and a re-run imports every item exactly once; a bad item is refused in
the check phase of the dry run and the real run alike (docs/decisions.md, "Import safety")."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import pytest

from engine.storage.bulk.file_stager import CHILD_MIN_FILES
from engine.storage.crash_hook import CRASH_HOOK_ENV

COUNT = 300


def write_items(path: Path, count: int = COUNT) -> Path:
    # One scope per line: similar lines in one scope would be near duplicates of each other,
    # and an import sends those to the review queue.
    lines = (
        json.dumps({"text": f"Imported fact number {n} about topic {n % 17}", "scopes": [f"s{n}"]})
        for n in range(count)
    )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


# On a server, where there are no files, the import's rows go into its transaction a batch
# (1,000) at a time, so these points are the same instant as another case of their test
# (staged:300, staged:2000): run once there. `published` moves files, which a server lacks.
SAME_INSTANT_ON_A_SERVER = {"staged:1", "staged:150", "staged:1250"}


def skip_where_the_server_has_no_such_point(probe, point: str) -> None:
    if probe.server_mode and point.startswith("published"):
        pytest.skip("the server mode writes no files to publish: its rows are the facts")
    if probe.server_mode and point in SAME_INSTANT_ON_A_SERVER:
        pytest.skip("on a server, the same instant as another case of this test")


def staging_folders(home: Path) -> list[Path]:
    return sorted(home.rglob(".import-*"))


def temp_files(home: Path) -> list[Path]:
    return sorted(home.rglob(".tmp-*"))


def assert_imported_exactly_once(cli, probe, path: Path, count: int = COUNT) -> None:
    rerun = cli("import", str(path), "--json")
    assert rerun.returncode == 0, rerun.stderr
    assert rerun.doc["added"] + rerun.doc["skipped"] == count
    assert probe.state() == (count, count)
    assert staging_folders(cli.home) == [] and temp_files(cli.home) == []
    again = cli("import", str(path), "--json")
    assert (again.doc["added"], again.doc["skipped"]) == (0, count)
    report = cli("reindex", "--json")
    assert report.returncode == 0, report.stderr
    assert (report.doc["added"], report.doc["changed"], report.doc["removed"]) == (0, 0, 0)
    assert (report.doc["indexed"], report.doc["problems"]) == (count, [])
    texts = [text for _, text in probe.rows()]
    assert len(set(texts)) == len(texts) == count


@pytest.mark.parametrize(
    "point",
    [
        *("staged:0", "staged:1", "staged:150", f"staged:{COUNT}"),
        *("committed", "published:1", "published:150"),
    ],
)
def test_an_import_killed_in_its_write_phase_is_all_or_nothing(cli, probe, tmp_path, point):
    skip_where_the_server_has_no_such_point(probe, point)
    assert cli("collection", "list", "--json").returncode == 0  # the store exists
    path = write_items(tmp_path / "items.jsonl")
    killed = cli("import", str(path), "--json", env=cli.env(**{CRASH_HOOK_ENV: point}))
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr)
    if point.startswith("staged"):
        # Nothing is visible: no fact file where reindex looks, no row.
        assert probe.state() == (0, 0)
        if not probe.server_mode:  # on a server: the rows of a transaction never committed
            assert staging_folders(cli.home), "the kill happened before the staging folder went"
    else:
        assert len(probe.rows()) == COUNT  # the one transaction committed: rolled forward later
    assert_imported_exactly_once(cli, probe, path)


@pytest.mark.embedded_mode  # fact files moved into place
@pytest.mark.parametrize("point", ["published:1", "published:150"])
def test_an_import_killed_while_it_moves_files_into_a_folder_in_use_is_all_or_nothing(
    cli, probe, tmp_path, point
):
    # A fact written today first: its day folder exists, so the import moves its staged files
    # in one by one (into a new day folder it renames the staged folder whole).
    kept = cli("remember", "The office plant is a ficus", "--scope", "office", "--add", "--json")
    assert kept.returncode == 0, kept.stderr
    days = [folder.name for folder in cli.home.rglob("facts/*") if folder.is_dir()]
    path = write_items(tmp_path / "items.jsonl")
    killed = cli("import", str(path), "--json", env=cli.env(**{CRASH_HOOK_ENV: point}))
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr)
    moved = int(point.partition(":")[2])
    in_place = [p for p in probe.files() if p.parent.name in days]
    assert len(in_place) == 1 + moved  # killed between two moves: the rest wait, staged
    assert len(probe.rows()) == COUNT + 1
    rerun = cli("import", str(path), "--json")
    assert rerun.returncode == 0, rerun.stderr
    assert (rerun.doc["added"], rerun.doc["skipped"]) == (0, COUNT)
    assert probe.state() == (COUNT + 1, COUNT + 1)
    assert staging_folders(cli.home) == []
    assert "The office plant is a ficus" in probe.file_texts()


# staged:1000: on a server, between the transaction's first batch of rows and its second.
@pytest.mark.parametrize(
    "point", ["staged:1000", "staged:1250", f"staged:{CHILD_MIN_FILES}", "published:1250"]
)
def test_a_large_import_killed_while_a_child_writes_its_files_is_all_or_nothing(
    cli, probe, tmp_path, point
):
    # As many items as make the import stage its files in a child process
    # (engine/storage/bulk/file_stager.py): killed, the parent leaves the child's files staged only.
    # On a server (no files): killed with more than one batch of rows in its transaction.
    skip_where_the_server_has_no_such_point(probe, point)
    count = CHILD_MIN_FILES
    assert cli("collection", "list", "--json").returncode == 0
    path = write_items(tmp_path / "items.jsonl", count)
    killed = cli("import", str(path), "--json", env=cli.env(**{CRASH_HOOK_ENV: point}))
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr)
    if point.startswith("staged"):
        assert probe.state() == (0, 0)
    else:
        assert len(probe.rows()) == count
    assert_imported_exactly_once(cli, probe, path, count)


def test_reindex_after_a_kill_before_the_commit_sees_nothing(cli, probe, tmp_path):
    assert cli("collection", "list", "--json").returncode == 0
    path = write_items(tmp_path / "items.jsonl")
    killed = cli("import", str(path), "--json", env=cli.env(**{CRASH_HOOK_ENV: "staged:200"}))
    assert killed.returncode == -signal.SIGKILL
    report = cli("reindex", "--json")
    assert (report.doc["files"], report.doc["indexed"], report.doc["problems"]) == (0, 0, [])
    assert probe.state() == (0, 0)
    assert_imported_exactly_once(cli, probe, path)


@pytest.mark.embedded_mode  # killed once its staged files are seen
def test_an_import_killed_from_outside_mid_write_is_all_or_nothing(cli, probe, tmp_path):
    assert cli("collection", "list", "--json").returncode == 0
    count = 3000
    path = write_items(tmp_path / "items.jsonl", count)
    process = cli.start("import", str(path), "--json")
    deadline = time.monotonic() + 120
    staged: list[Path] = []
    while time.monotonic() < deadline and process.poll() is None:
        staged = [p for folder in staging_folders(cli.home) for p in folder.rglob("mem-*.md")]
        if len(staged) >= 40:
            break
        time.sleep(0.005)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=60)
    if process.returncode != -signal.SIGKILL:
        pytest.skip("the import finished before it could be killed")
    assert len(staged) >= 40
    rows = len(probe.rows())
    assert rows in (0, count)
    if rows == 0:
        assert probe.files() == []
    assert_imported_exactly_once(cli, probe, path, count)


def test_a_bad_item_is_refused_by_the_dry_run_and_the_real_run(cli, probe, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"text": "one fact", "scopes": ["a"]}\n'
        '{"text": "two fact", "scopes": ["a"], "workbench": {"expiresAt": "not-a-date"}}\n'
        '{"text": "three fact", "scopes": ["a"]}\n',
        encoding="utf-8",
    )
    for dry in (["--dry-run"], []):
        result = cli("import", str(path), *dry, "--json")
        assert result.returncode == 1, result.stdout
        assert result.error["code"] == "MEMORY_IMPORT_INVALID"
        assert f"{path}:2" in result.error["message"]
        assert "workbench.expiresAt" in result.error["message"]
    assert probe.state() == (0, 0)
    report = cli("reindex", "--json")
    assert report.returncode == 0 and report.doc["problems"] == []


def test_a_string_supersedes_is_refused_and_recall_keeps_working(cli, tmp_path):
    path = tmp_path / "sup.jsonl"
    path.write_text(
        '{"text": "sup fact", "scopes": ["a"], "supersedes": "gno://memory/x"}\n', encoding="utf-8"
    )
    result = cli("import", str(path), "--json")
    assert result.error["code"] == "MEMORY_IMPORT_INVALID"
    assert "supersedes" in result.error["message"]
    assert cli("recall", "sup fact", "--scope", "a", "--json").returncode == 0
