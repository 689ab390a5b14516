"""What a newcomer meets first (issue 17): the README's "Use" block run as written, in order,
with the installed console script; help texts without unexplained jargon or paths an
installed package lacks; piped output that does not wrap; a recall that finds nothing saying
why."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gno_tui.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
ACTIVATE = ". .venv/bin/activate"


def readme_block(heading: str, index: int = 0) -> list[str]:
    """The commands of the `index`-th sh block under `heading` (continuations joined)."""
    section = ROOT.joinpath("README.md").read_text(encoding="utf-8").split(f"\n{heading}\n")[1]
    section = section.split("\n## ", 1)[0]
    block = re.findall(r"```sh\n(.*?)```", section, re.S)[index]
    return [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def newcomer_env(script: str, home: Path) -> dict[str, str]:
    """A shell after `. .venv/bin/activate` and `export GNO_TUI_HOME=$(mktemp -d)`: the
    console script first on PATH, the bundled model, no other GNO_TUI_* variable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GNO_TUI_")}
    env.pop("COLUMNS", None)
    env["PATH"] = f"{Path(script).parent}{os.pathsep}{env.get('PATH', '')}"
    env["GNO_TUI_HOME"] = str(home)
    return env


def run_line(line: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", line], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )


def check_use_line(line: str, out: str, folder: Path, home: Path, script: str, valid: Any) -> None:
    """What each line of the Use block should print (by what the line runs)."""
    command = line.split("#", 1)[0]
    if "memory remember" in command or "memory get" in command:
        hit = json.loads(out)
        assert hit["key"] == "pref/tea" and hit["revision"] == 1
    elif "remember" in command:
        assert ("added #" if "--add" in command else "candidates: 0") in out, out
    elif "--format ob1" in command:
        valid("ob1_recall", json.loads(out))
    elif "recall" in command:
        doc = valid("recall", json.loads(out))
        assert [fact["text"] for fact in doc["facts"]] == ["Alice prefers green tea"]
    elif "collection" in command:
        assert "team" in out and str(home / "collections" / "team") in out
    elif "review --list" in command:
        assert json.loads(out) == {"proposals": []}
    elif "export" in command:
        (row,) = [json.loads(text) for text in (folder / "backup.jsonl").read_text().splitlines()]
        assert row["text"] == "Alice prefers green tea"
    elif "import" in command:
        assert "0 would be added, 1 skipped" in out
    elif "--print-config" in command:
        server = f"{script} --home {home.resolve()} mcp --allow-scope user:alice"
        assert out == f"claude mcp add --transport stdio --scope user gno-memory -- {server}\n"
    elif "reindex" in command:
        assert "indexed from" in out and "0 added, 0 changed, 0 removed" in out
    else:
        raise AssertionError(f"the test does not know what {line!r} should print")


@pytest.mark.embedded_mode  # the README's first minutes: a home of files, no server
def test_the_readme_use_block_runs_as_written(tmp_path: Path, cli: Any, valid: Any) -> None:
    lines = readme_block("## Use")
    assert lines[0].startswith(ACTIVATE), "the block starts by activating the virtualenv"
    assert all(line.startswith(("gno-tui ", "echo ")) for line in lines[1:]), lines
    home, folder = tmp_path / "home", tmp_path / "work"
    folder.mkdir()
    env = newcomer_env(cli.script, home)
    for line in lines[1:]:  # activation: the console script's folder first on PATH
        done = run_line(line, env, folder)
        assert done.returncode == 0, (line, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, (line, done.stderr)
        check_use_line(line, done.stdout, folder, home, cli.script, valid)
    # The supersede template after it, with the uri and contentHash a recall gives.
    (template,) = readme_block("## Use", 1)
    recalled = run_line("gno-tui recall 'green tea' --scope user:alice --json", env, folder)
    fact = json.loads(recalled.stdout)["facts"][0]
    line = template.replace("<uri>", fact["uri"]).replace("<contentHash>", fact["contentHash"])
    done = run_line(line, env, folder)
    assert done.returncode == 0 and done.stdout.startswith("superseded #"), done


# -- help texts -------------------------------------------------------------------------------


def every_parser() -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    found: list[tuple[tuple[str, ...], argparse.ArgumentParser]] = []

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
        found.append((path, parser))
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    walk(sub, (*path, name))

    walk(build_parser(), ())
    return found


def test_every_argument_is_described() -> None:
    missing = [
        f"{' '.join(path) or 'gno-tui'} {action.metavar or '/'.join(action.option_strings)}"
        for path, parser in every_parser()
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction) and not action.help
    ]
    assert not missing, missing


@pytest.fixture(scope="module")
def helps(tmp_path_factory: pytest.TempPathFactory, make_cli: Any) -> dict[tuple[str, ...], str]:
    """Every command's --help, printed by the console script to a pipe."""
    env = make_cli.env()
    env.pop("COLUMNS", None)
    home = tmp_path_factory.mktemp("helps")
    script = make_cli(home).script
    started = {
        path: subprocess.Popen(
            [script, "--home", str(home), *path, "--help"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for path, _parser in every_parser()
    }
    texts = {}
    for path, process in started.items():
        out, err = process.communicate(timeout=60)
        assert process.returncode == 0, (path, err)
        texts[path] = out
    return texts


def test_help_has_no_unexplained_jargon_or_missing_paths(helps: dict[Any, str]) -> None:
    for path, text in helps.items():
        for word in ("seed 0", "seed-0", "instantkv", "schemas/", "docs/"):
            assert word not in text.lower(), (path, word)


def test_recall_help_describes_the_scope_and_who_asks(helps: dict[Any, str]) -> None:
    text = helps[("recall",)]
    assert re.search(r"--scope S\s+a scope to recall from", text), text
    assert "who writes" not in text and "who asks" in text
    assert "(default memory)" not in text  # recall reads every collection unless told
    assert "who writes" in helps[("remember",)]


def test_keyed_help_describes_the_request_inline(helps: dict[Any, str]) -> None:
    assert '"memory": {"content": TEXT' in helps[("memory", "remember")]
    assert '"query": words that must all occur' in helps[("memory", "recall")]
    assert '"expand": true' in helps[("memory", "search")]


# -- piped output -----------------------------------------------------------------------------


@pytest.mark.embedded_mode  # long fact-file paths and collection roots: a home's files
def test_piped_output_does_not_wrap(tmp_path: Path, make_cli: Any) -> None:
    """stdout to a pipe (as subprocess captures it), no COLUMNS: a path is one line however
    long, and `collection list` shows every root whole."""
    home = tmp_path / ("a-home-folder-with-a-long-name-" * 3) / "store"
    cli = make_cli(home)
    env = cli.env()
    env.pop("COLUMNS", None)
    added = cli("remember", "Alice prefers green tea", "--scope", "user:alice", "--add", env=env)
    assert added.returncode == 0, added.stderr
    (path,) = [line for line in added.stdout.splitlines() if line.startswith("  file: ")]
    assert Path(path.removeprefix("  file: ")).is_file()
    assert len(path) > 120  # longer than any terminal guess, on one line
    cli("collection", "add", "team-with-a-rather-long-name", "--policy", "lan", env=env)
    listing = cli("collection", "list", env=env).stdout
    for name in ("memory", "team-with-a-rather-long-name"):
        root = str(home.resolve() / "collections" / name)
        assert any(root in line and "…" not in line for line in listing.splitlines()), listing


# -- a recall that finds nothing says why -----------------------------------------------------


def test_plain_recall_says_why_nothing_came_back(cli: Any) -> None:
    def why(*args: str) -> str:
        result = cli("recall", *args)
        assert result.returncode == 0, result.stderr
        return result.stdout.splitlines()[0]

    assert why("tea", "--scope", "user:alice") == (
        "Nothing is stored in scope user:alice: no current fact has that scope."
    )
    cli("remember", "Alice prefers green tea", "--scope", "user:alice", "--add")
    far = why("zebra stripes", "--scope", "user:alice")
    assert far.startswith("1 fact is stored in scope user:alice, but none is close enough")
    assert "Without the embedding model only shared words match" in far  # lexical here
    withheld = why("green tea", "--scope", "user:alice", "--egress", "lan")
    assert "the egress ceiling lan withheld it (1 withheld)" in withheld
    assert "its collection is local_only" in withheld
    budget = why("green tea", "--scope", "user:alice", "--max-tokens", "2")
    assert "none fits the budget of 2 tokens (the best match is ~6 tokens)" in budget
    cli("collection", "add", "team", "--policy", "lan")
    elsewhere = why("green tea", "--scope", "user:alice", "--collection", "team")
    assert elsewhere == (
        "Nothing is stored in scope user:alice in collection team: no current fact has that "
        "scope. 1 fact of those scopes in other collections matches."
    )
    cli("remember", "Alice owns a bicycle", "--scope", "user:alice", "--collection", "team",
        "--add")  # fmt: skip
    assert why("green tea", "--scope", "user:alice", "--collection", "team") == (
        "1 fact in scope user:alice matches, in other collections than team. Leave the "
        "collection out to recall from all of them."
    )
    other = why("green tea", "--scope", "user:bob")
    assert other.startswith("Nothing is stored in scope user:bob")
    assert "1 fact in other scopes matches the query" in other
    ob1 = cli("recall", "zebra", "--scope", "user:alice", "--format", "ob1").stdout
    assert "none is close enough" in ob1
    # --json keeps exactly the seed result (validated by the cli fixture), hint and all.
    result = cli("recall", "green tea", "--scope", "user:alice", "--egress", "lan", "--json")
    assert result.doc["facts"] == [] and "gno-tui remember" in result.doc["hint"]
