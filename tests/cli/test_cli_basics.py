"""The console script: --version, --help with an example on every command."""

from __future__ import annotations

import argparse

from gno_tui import __version__
from gno_tui.cli import build_parser


def command_paths(parser: argparse.ArgumentParser, prefix: tuple[str, ...] = ()) -> list[tuple]:
    """Every command and sub-command of the real parser, so a new one is covered too."""
    paths = [prefix]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                paths.extend(command_paths(sub, (*prefix, name)))
    return paths


def test_version(cli):
    result = cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"gno-tui {__version__}"


def test_every_command_has_help_with_an_example(cli):
    paths = command_paths(build_parser())
    assert {("remember",), ("recall",), ("reindex",), ("review",), ("collection", "add")} <= set(
        paths
    )
    results = cli.many([(*path, "--help") for path in paths])
    for path, result in zip(paths, results, strict=True):
        assert result.returncode == 0, (path, result.stderr)
        assert "example" in result.stdout.lower(), (path, result.stdout)
        assert "usage: gno-tui" in result.stdout


def test_usage_errors_are_exit_1_with_a_code(cli):
    result = cli("remember", "x", "--scope", "s", "--no-such-flag", "--json")
    assert result.returncode == 1
    assert result.error["code"] == "MEMORY_USAGE_INVALID"
    assert "--help" in result.error["message"]
