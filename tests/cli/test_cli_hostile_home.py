"""A home the store cannot use as it expects (issue 39, items 1, 2, 4 and 6), through the
installed console script: a coded error that says what is wrong, where and how to fix it, with
the contract's exit code; nothing written or lost; reads wherever they can work.

- A read-only home: really read-only, since root ignores permission bits: a read-only bind
  mount in a private mount namespace (`unshare --mount`), or the home `chmod -R a-w` and the
  CLI run without the capabilities that let root write anyway (`setpriv`; an unprivileged
  user cannot reach this machine's interpreter under /root). Each is skipped, saying why,
  where the machine does not allow it.
- `--home` that is a file, a device, a path below a file, or empty.
- A collections.yaml that does not parse, with and without an index.
- A home copied (`cp -a`) or moved: it writes into itself, old homes with absolute roots too."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from read_only_homes import (
    ReadOnlyHome,
    read_only_prefix,
    read_only_unavailable,
    run_cli_on,
    tree,
)

# Most tests are of the embedded mode's own machinery (the home's files, its mount, its
# collections.yaml); a --home that cannot be a folder is refused in either mode.
embedded = pytest.mark.embedded_mode


@pytest.fixture(params=["mount", "permissions"])
def make_read_only(
    request: pytest.FixtureRequest, cli: Any
) -> Iterator[Callable[[Path], ReadOnlyHome]]:
    way: str = request.param
    reason = read_only_unavailable(way)
    if reason is not None:
        pytest.skip(reason)
    made: list[Path] = []

    def make(home: Path) -> ReadOnlyHome:
        if way == "permissions":
            subprocess.run(["chmod", "-R", "a-w", str(home)], check=True)
            made.append(home)
        return ReadOnlyHome(cli, way, home)

    yield make
    for home in made:  # so that the temporary folder can be removed
        subprocess.run(["chmod", "-R", "u+w", str(home)], check=True)


def _ok(result: Any) -> Any:
    assert result.returncode == 0, (result.args, result.stdout, result.stderr)
    return result


def _refused(result: Any, code: str, *words: str) -> str:
    """A coded refusal (check_cli_output checked the exit code against the contract); its
    message names `words` and is never a traceback or MEMORY_INTERNAL."""
    assert result.error is not None, (result.args, result.stdout, result.stderr)
    assert result.error["code"] == code, (result.args, result.error)
    message = result.error["message"]
    for word in words:
        assert word in message, (word, message)
    assert "Traceback" not in result.stderr
    return message


def _texts(recall: Any) -> list[str]:
    return [fact["text"] for fact in recall.doc["facts"]]


# -- 1: a read-only home -----------------------------------------------------------------------


def _seed(cli, tmp_path: Path) -> dict[str, str]:
    """A home with a fact, a keyed memory and an import behind it; the files the calls use."""
    added = _ok(cli("remember", "Alice drinks green tea", "--scope", "s", "--add", "--json"))
    keyed = tmp_path / "keyed.json"
    keyed.write_text(json.dumps({"key": "k1", "memory": {"content": "Bob lives in Lyon"}}))
    _ok(cli("memory", "remember", "--request", str(keyed), "--json"))
    query = tmp_path / "query.json"
    query.write_text(json.dumps({"query": "Lyon"}))
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"text": "Carol moved to Berlin", "scopes": ["s"]}) + "\n")
    return {
        "uri": added.doc["record"]["uri"],
        "hash": added.doc["record"]["contentHash"],
        "keyed": str(keyed),
        "query": str(query),
        "items": str(items),
    }


@embedded
def test_a_read_only_home_answers_reads_and_refuses_every_write(
    cli, home: Path, tmp_path: Path, make_read_only
) -> None:
    seeded = _seed(cli, tmp_path)
    before = tree(home)
    run = make_read_only(home)

    # Reads: what an indexed home holds, as on a writable one.
    assert _texts(_ok(run("recall", "green tea", "--scope", "s", "--json"))) == [
        "Alice drinks green tea"
    ]
    assert "Alice drinks green tea" in _ok(run("recall", "green tea", "--scope", "s")).stdout
    proposed = _ok(run("remember", "Alice drinks green tea daily", "--scope", "s", "--json"))
    assert proposed.doc["outcome"] == "candidates"
    assert [c["uri"] for c in proposed.doc["candidates"]] == [seeded["uri"]]
    keyed = _ok(run("memory", "recall", "--request", seeded["query"], "--json"))
    assert [item["memory"]["content"] for item in keyed.doc["items"]] == ["Bob lives in Lyon"]
    status = _ok(run("status", "--json")).doc
    assert status["readOnly"] is True and status["readOnlyReason"]
    assert [c["name"] for c in _ok(run("collection", "list", "--json")).doc["collections"]] == [
        "memory"
    ]
    assert _ok(run("import", seeded["items"], "--dry-run", "--json")).doc["added"] == 1
    assert "Alice drinks green tea" in _ok(run("export", "--format", "jsonl")).stdout

    # Writes: each refused with the store's code, exit 2, naming the home and the way out.
    writes: list[Sequence[str]] = [
        ("remember", "Carol drinks water", "--scope", "s", "--add", "--json"),
        ("remember", "Dan drinks milk", "--scope", "s", "--decision", "add", "--json"),
        (
            *("remember", "Alice drinks black tea", "--supersede", seeded["uri"]),
            *("--predecessor-hash", seeded["hash"], "--json"),
        ),
        ("memory", "remember", "--request", seeded["keyed"], "--json"),
        ("import", seeded["items"], "--json"),
        ("reindex", "--json"),
        ("collection", "set-policy", "memory", "lan", "--json"),
        ("collection", "add", "extra", "--json"),
    ]
    for args in writes:
        _refused(run(*args), "MEMORY_HOME_READ_ONLY", str(home), "read-only", "--home")
    human = run("remember", "Carol drinks water", "--scope", "s", "--add")
    assert human.returncode == 2 and "MEMORY_HOME_READ_ONLY" in human.stderr
    assert "Traceback" not in human.stderr

    # Still all there, and nothing written.
    assert tree(home) == before


@embedded
def test_a_never_opened_read_only_home_is_read_from_its_files(
    cli, home: Path, tmp_path: Path, make_read_only
) -> None:
    """A folder of fact files and collections.yaml and no index (copied without it, or a
    checkout): answered from an index built in memory, and nothing is written there."""
    _ok(cli("remember", "Alice drinks green tea", "--scope", "s", "--add", "--json"))
    for leftover in (*home.glob("index.sqlite*"), home / ".write.lock", home / ".inflight"):
        shutil.rmtree(leftover) if leftover.is_dir() else leftover.unlink(missing_ok=True)
    before = tree(home)
    run = make_read_only(home)

    assert _texts(_ok(run("recall", "green tea", "--scope", "s", "--json"))) == [
        "Alice drinks green tea"
    ]
    status = _ok(run("status", "--json")).doc
    assert status["readOnly"] is True
    assert any("built in memory from the fact files" in note for note in status["notes"])
    query = tmp_path / "query.json"
    query.write_text('{"query": "tea"}')
    _ok(run("memory", "recall", "--request", str(query), "--json"))
    _refused(
        run("remember", "Carol drinks water", "--scope", "s", "--add", "--json"),
        "MEMORY_HOME_READ_ONLY",
        str(home),
    )
    assert tree(home) == before

    empty = tmp_path / "empty-home"
    empty.mkdir()
    run_empty = make_read_only(empty)
    nothing = _ok(run_empty("recall", "tea", "--scope", "s", "--json")).doc
    assert nothing["facts"] == [] and "gno-tui remember" in nothing["hint"]
    _refused(
        run_empty("collection", "set-policy", "memory", "lan", "--json"),
        "MEMORY_HOME_READ_ONLY",
        str(empty),
    )
    assert list(empty.iterdir()) == []
    # A home that does not exist yet, in a folder that refuses writes: it cannot be made.
    new = empty / "new"
    prefix = read_only_prefix(run_empty.way, empty)
    cannot = run_cli_on(
        cli, ("recall", "tea", "--scope", "s", "--json"), home=str(new), prefix=prefix
    )
    _refused(cannot, "MEMORY_HOME_READ_ONLY", f"Cannot create the home folder {new}")
    assert list(empty.iterdir()) == []


@embedded
def test_a_read_only_index_file_in_a_writable_home_refuses_writes(cli, home: Path) -> None:
    """Only the index is read-only (chmod a-w index.sqlite), as root-proof as the home."""
    reason = read_only_unavailable("permissions")
    if reason is not None:
        pytest.skip(reason)
    _ok(cli("remember", "Alice drinks green tea", "--scope", "s", "--add", "--json"))
    index = home / "index.sqlite"
    index.chmod(0o444)
    try:
        run = ReadOnlyHome(cli, "permissions", home)
        assert _texts(_ok(run("recall", "green tea", "--scope", "s", "--json"))) == [
            "Alice drinks green tea"
        ]
        message = _refused(
            run("remember", "Carol drinks water", "--scope", "s", "--add", "--json"),
            "MEMORY_HOME_READ_ONLY",
            "index.sqlite",
        )
        assert "not writable" in message
        assert len(_facts_under(home)) == 1
    finally:
        index.chmod(0o644)


# -- 2: --home that is not a folder ------------------------------------------------------------

_COMMANDS: list[tuple[str, ...]] = [
    ("recall", "x", "--scope", "a", "--json"),
    ("remember", "x", "--scope", "a", "--json"),
    ("remember", "x", "--scope", "a", "--add", "--json"),
    ("status", "--json"),
    ("reindex", "--json"),
    ("collection", "list", "--json"),
    ("collection", "set-policy", "memory", "lan", "--json"),
    ("export", "--format", "jsonl", "--json"),
    ("review", "--list", "--json"),
]


@pytest.mark.parametrize("kind", ["a file", "/dev/null", "below a file"])
def test_a_home_that_is_not_a_folder_is_refused_on_every_command(
    cli, tmp_path: Path, kind: str
) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("my notes\n")
    target = {"a file": notes, "/dev/null": Path("/dev/null"), "below a file": notes / "sub"}[kind]
    blocker = Path("/dev/null") if kind == "/dev/null" else notes
    before = tree(tmp_path)
    for args in _COMMANDS:
        message = _refused(cli(*args, home=target), "MEMORY_HOME_INVALID", str(blocker), "--home")
        assert "not a folder" in message
    mcp = cli("mcp", home=target)  # the server does not start
    assert mcp.returncode == 1 and "MEMORY_HOME_INVALID" in mcp.stderr, mcp.stderr
    assert tree(tmp_path) == before  # the file untouched, nothing made beside it


def test_an_empty_home_is_refused_rather_than_the_default_store(cli, tmp_path: Path) -> None:
    data = tmp_path / "xdg-data"  # where the default (user data folder) store would go
    env = cli.env(XDG_DATA_HOME=str(data))
    query = tmp_path / "query.json"
    query.write_text('{"query": "tea"}')
    for args in [*_COMMANDS, ("memory", "recall", "--request", str(query), "--json")]:
        _refused(run_cli_on(cli, args, home="", env=env), "MEMORY_HOME_INVALID", "--home is empty")
    assert not data.exists()


# -- 4: a collections.yaml that does not parse -------------------------------------------------

_BROKEN = (
    "collections:\n- name: memory\n  root: collections/memory\n  policy: local_only\n"
    "   policySource: config_default\n"
)


@embedded
def test_a_broken_collections_yaml_without_an_index_is_refused_and_changes_nothing(
    cli, home: Path
) -> None:
    _ok(cli("remember", "Alice drinks green tea", "--scope", "s", "--add", "--json"))
    for index in home.glob("index.sqlite*"):
        index.unlink()
    listing = home / "collections.yaml"
    good = listing.read_text()
    listing.write_text(_BROKEN)
    before = tree(home)
    for args in [
        ("recall", "green tea", "--scope", "s", "--json"),
        ("reindex", "--json"),
        ("status", "--json"),
        ("remember", "Carol drinks water", "--scope", "s", "--add", "--json"),
        ("collection", "set-policy", "memory", "lan", "--json"),
        ("memory", "recall", "--json"),
    ]:
        message = _refused(
            cli(*args, stdin='{"query": "tea"}'),
            "MEMORY_HOME_DAMAGED",
            f"{listing}, line 5",
            "not valid YAML",
        )
        assert "Fix that line" in message
        assert tree(home) == before  # no index made, the file as it was

    listing.write_text(good)  # fixed by hand: the store is whole again, never empty
    assert _texts(_ok(cli("recall", "green tea", "--scope", "s", "--json"))) == [
        "Alice drinks green tea"
    ]


@embedded
@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ("collections:\n- name: memory\n  root: collections/memory\n", 2, "policy None"),
        (
            "collections:\n- name: memory\n  root: x\n  policy: local_only\n- name: Bad!\n",
            5,
            "name",
        ),
        ("collections: []\n", 1, "lists the collections"),
        ("- just\n- a list\n", 1, "lists the collections"),
    ],
)
def test_a_collections_yaml_with_a_wrong_entry_names_its_line(
    cli, home: Path, text: str, line: int, words: str
) -> None:
    home.mkdir()
    (home / "collections.yaml").write_text(text)
    _refused(
        cli("recall", "tea", "--scope", "s", "--json"),
        "MEMORY_HOME_DAMAGED",
        f"collections.yaml, line {line}",
        words,
    )
    assert sorted(p.name for p in home.iterdir()) == ["collections.yaml"]


@embedded
def test_an_index_left_without_collections_comes_back_from_the_files(cli, home: Path) -> None:
    """What an earlier gno-tui left after refusing a broken collections.yaml with a traceback:
    an index with tables and no collection. Once the file is right, the facts are back (the
    store used to answer `{"facts": []}` for good)."""
    _ok(cli("remember", "Alice drinks green tea", "--scope", "s", "--add", "--json"))
    with sqlite3.connect(home / "index.sqlite") as db:
        for table in ("fact_scopes", "embeddings", "facts", "collections"):
            db.execute(f"DELETE FROM {table}")
    assert _texts(_ok(cli("recall", "green tea", "--scope", "s", "--json"))) == [
        "Alice drinks green tea"
    ]
    assert [c["name"] for c in _ok(cli("collection", "list", "--json")).doc["collections"]] == [
        "memory"
    ]


@embedded
def test_a_broken_collections_yaml_beside_a_sound_index_keeps_reads_and_refuses_changes(
    cli, home: Path
) -> None:
    _ok(cli("remember", "Alice drinks green tea", "--scope", "s", "--add", "--json"))
    _ok(cli("collection", "add", "notes", "--json"))
    listing = home / "collections.yaml"
    listing.write_text(_BROKEN)
    assert _texts(_ok(cli("recall", "green tea", "--scope", "s", "--json"))) == [
        "Alice drinks green tea"
    ]
    for args in [
        ("collection", "set-policy", "notes", "lan", "--json"),
        ("collection", "add", "extra", "--json"),
        ("reindex", "--json"),
    ]:
        _refused(cli(*args), "MEMORY_HOME_DAMAGED", f"{listing}, line 5")
    assert listing.read_text() == _BROKEN  # not written over
    listed = _ok(cli("collection", "list", "--json")).doc["collections"]
    assert [(c["name"], c["policy"]) for c in listed] == [
        ("memory", "local_only"),
        ("notes", "local_only"),
    ]


# -- 6: a copied or moved home -----------------------------------------------------------------


def _facts_under(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.rglob("mem-*.md"))


def _roots(cli, home: Path) -> dict[str, str]:
    listed = _ok(cli("collection", "list", "--json", home=home)).doc["collections"]
    return {c["name"]: c["root"] for c in listed}


@embedded
def test_a_copied_home_writes_into_itself(cli, home: Path, tmp_path: Path) -> None:
    _ok(cli("remember", "Alice drinks green tea", "--scope", "s", "--add", "--json"))
    outside = tmp_path / "shared-notes"
    _ok(cli("collection", "add", "shared", "--path", str(outside), "--json"))
    _ok(cli("collection", "add", "inner", "--path", str(home / "inner"), "--json"))
    original = tree(home)

    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(home), str(copy)], check=True)
    added = _ok(
        cli("remember", "Bob drinks coffee", "--scope", "s", "--add", "--json", home=copy)
    ).doc
    assert Path(added["absPath"]).is_relative_to(copy)
    inner = _ok(
        cli(
            *("remember", "Inner note", "--scope", "s", "--collection", "inner", "--add"),
            "--json",
            home=copy,
        )
    )
    assert Path(inner.doc["absPath"]).is_relative_to(copy / "inner")
    assert tree(home) == original  # the original got nothing
    assert _roots(cli, copy) == {
        "inner": str(copy / "inner"),
        "memory": str(copy / "collections" / "memory"),
        "shared": str(outside),  # deliberately outside the home: stays where it is
    }
    assert _texts(_ok(cli("recall", "drinks", "--scope", "s", "--json"))) == [
        "Alice drinks green tea"
    ]
    assert sorted(_texts(_ok(cli("recall", "drinks", "--scope", "s", "--json", home=copy)))) == [
        "Alice drinks green tea",
        "Bob drinks coffee",
    ]
    report = _ok(cli("reindex", "--json", home=copy)).doc
    assert (report["added"], report["removed"], report["changed"]) == (0, 0, 0)
    listing = (copy / "collections.yaml").read_text()  # roots in the home: relative to it
    assert "root: collections/memory" in listing and "root: inner" in listing
    assert f"root: {outside}" in listing

    moved = tmp_path / "moved"
    copy.rename(moved)
    _ok(cli("remember", "Carol drinks water", "--scope", "s", "--add", "--json", home=moved))
    assert len(_facts_under(moved / "collections")) == 3
    assert _roots(cli, moved)["memory"] == str(moved / "collections" / "memory")


def _as_before_relative_roots(home: Path) -> None:
    """collections.yaml as gno-tui wrote it before roots relative to the home: absolute."""
    listing = home / "collections.yaml"
    text = listing.read_text().replace("root: collections/", f"root: {home}/collections/")
    listing.write_text(text)
    assert f"root: {home}/collections/memory" in text


@embedded
@pytest.mark.parametrize("index", ["kept", "deleted"])
def test_a_copied_home_with_absolute_roots_writes_into_itself(
    cli, home: Path, tmp_path: Path, index: str
) -> None:
    """An existing home, from before roots were relative: its own use keeps working, and a
    copy (with its index, or only its files) is pointed at its own folders."""
    _ok(cli("remember", "Alice drinks green tea", "--scope", "s", "--add", "--json"))
    _as_before_relative_roots(home)
    _ok(cli("remember", "Bob drinks coffee", "--scope", "s", "--add", "--json"))
    assert len(_facts_under(home)) == 2  # the old home still works in place
    original = tree(home)

    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(home), str(copy)], check=True)
    if index == "deleted":
        for path in copy.glob("index.sqlite*"):
            path.unlink()
    added = _ok(cli("remember", "Carol drinks water", "--scope", "s", "--add", "--json", home=copy))
    assert Path(added.doc["absPath"]).is_relative_to(copy)
    assert tree(home) == original
    assert _roots(cli, copy) == {"memory": str(copy / "collections" / "memory")}
    assert "root: collections/memory" in (copy / "collections.yaml").read_text()
    assert len(_facts_under(copy)) == 3
    recalled = _texts(_ok(cli("recall", "drinks", "--scope", "s", "--json", home=copy)))
    assert len(recalled) == 3


@embedded
def test_a_read_only_copy_reads_its_own_files(
    cli, home: Path, tmp_path: Path, make_read_only
) -> None:
    _ok(cli("remember", "Alice drinks green tea", "--scope", "s", "--add", "--json"))
    _as_before_relative_roots(home)
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-a", str(home), str(copy)], check=True)
    shutil.rmtree(home)  # the original is gone: the copy must not need it
    run = make_read_only(copy)
    listed = _ok(run("collection", "list", "--json")).doc["collections"]
    assert listed[0]["root"] == str(copy / "collections" / "memory")
    assert _texts(_ok(run("recall", "green tea", "--scope", "s", "--json"))) == [
        "Alice drinks green tea"
    ]
