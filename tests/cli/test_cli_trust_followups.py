"""`gno-tui reindex` without --json tells a person what `--json` reports: a record id held by
two files, a chain forked by two successors, and the notes on what was repaired (escaped:
a path or a note cannot drive the terminal)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from engine.contract.normalize import content_hash


def _remember(cli, text: str, *extra: str) -> dict:
    result = cli("remember", text, "--scope", "user:gus", *extra, "--json")
    assert result.returncode == 0, result.stderr
    return result.doc


def _copy_as(original: Path, folder: Path, old: str, new: str, *, record_id: str | None = None):
    """A copy of a fact file in another day folder, its text (and hash) changed."""
    folder.mkdir(parents=True, exist_ok=True)
    text = original.read_text(encoding="utf-8").replace(old, new)
    text = text.replace(content_hash(old), content_hash(new))
    name = original.name
    if record_id is not None:
        text = text.replace(original.stem, record_id)
        text = text.replace(f"#{original.stem[4:12]}", f"#{record_id[4:12]}")  # its docid
        name = f"{record_id}.md"
    (folder / name).write_text(text, encoding="utf-8")
    return folder / name


@pytest.mark.embedded_mode  # fact files copied by hand
def test_plain_reindex_names_a_record_id_held_by_two_files(cli, home):
    fact = _remember(cli, "Gus likes chess", "--add")
    original = Path(fact["absPath"])
    record_id = fact["record"]["recordId"]
    # The copy's folder name carries an escape sequence: shown escaped, never sent raw.
    copy = _copy_as(
        original, original.parent.parent / "2001-01-01\x1b[2J", "Gus likes chess", "Gus likes go"
    )

    as_json = cli("reindex", "--json")
    assert as_json.doc["duplicates"] == [
        {"recordId": record_id, "kept": str(original), "ignored": [str(copy)]}
    ]

    shown = cli("reindex")
    assert shown.returncode == 0, shown.stderr
    out = shown.stdout
    assert "\x1b" not in out, out
    flat = " ".join(out.split())  # Rich wraps long lines
    assert f"duplicate record id {record_id}" in flat, out
    assert str(original) in flat
    assert str(copy).replace("\x1b", "\\x1b") in flat, out
    assert "ignored" in flat and "remove" in flat
    assert re.search(r"\d+ facts indexed from 2 files", flat), out
    # The one kept is the one recalled.
    recalled = cli("recall", "gus likes", "--scope", "user:gus", "--json")
    assert [f["text"] for f in recalled.doc["facts"]] == ["Gus likes chess"]


@pytest.mark.embedded_mode  # a fork made by editing fact files
def test_plain_reindex_names_a_fork_and_the_notes(cli, home):
    old = _remember(cli, "Ivy lives in Paris", "--add")
    new = _remember(
        cli,
        "Ivy lives in Rome",
        *("--supersede", old["record"]["uri"]),
        *("--predecessor-hash", old["record"]["contentHash"]),
    )
    assert new["outcome"] == "superseded"
    successor = Path(new["absPath"])
    # A second successor of the same predecessor, as a file synced from elsewhere would be.
    rival = _copy_as(
        successor,
        successor.parent,
        "Ivy lives in Rome",
        "Ivy lives in Oslo",
        record_id="mem-00000000000000ff",
    )
    (home / "index.sqlite").unlink()  # and no index to say which one was acknowledged
    for leftover in home.glob("index.sqlite-*"):
        leftover.unlink()

    as_json = cli("reindex", "--json")
    forks = as_json.doc["forks"]
    assert len(forks) == 1 and forks[0]["predecessor"] == old["record"]["uri"], forks
    notes = as_json.doc["notes"]
    assert notes, as_json.doc

    (home / "index.sqlite").unlink()
    for leftover in home.glob("index.sqlite-*"):
        leftover.unlink()
    shown = cli("reindex")
    assert shown.returncode == 0, shown.stderr
    flat = " ".join(shown.stdout.split())
    assert f"fork: two or more facts supersede {old['record']['uri']}" in flat, shown.stdout
    kept, not_kept = forks[0]["kept"], forks[0]["notKept"]
    assert f"kept {kept}" in flat
    assert all(uri in flat for uri in not_kept)
    assert forks[0]["reason"] in flat
    assert {kept, *not_kept} == {new["record"]["uri"], _uri_of(rival, new["record"]["uri"])}
    assert "note: " in flat and "missing" in flat, shown.stdout


def _uri_of(path: Path, sibling_uri: str) -> str:
    return sibling_uri.rsplit("/", 1)[0] + "/" + path.name
