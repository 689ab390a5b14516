"""Input the CLI must not trust: fact text is never Rich markup in human output, and hostile or
broken input (deep JSON, bytes that are not UTF-8, unwritable or canonical paths, an
unreachable database, out-of-range numbers, invisible-only text) is a clear exit 1 (or 2 for
the store) with its own code, never MEMORY_INTERNAL, and leaves nothing behind."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pg_homes
import pytest

WIDE = {"COLUMNS": "250"}


def _env(cli, **extra: str) -> dict[str, str]:
    return cli.env(home=cli.home, **WIDE, **extra)


def _run_bytes(cli, *args: str | bytes, stdin: bytes | None = None) -> tuple[int, Any, str]:
    """The console script with raw bytes in argv or on stdin; (exit code, JSON doc, stderr)."""
    argv: list[str | bytes] = [cli.script, "--home", str(cli.home), *args]
    done = subprocess.run(argv, input=stdin, capture_output=True, env=_env(cli), timeout=60)
    out = done.stdout.decode("utf-8")
    return done.returncode, json.loads(out) if out.strip() else None, done.stderr.decode()


def _code(doc: Any) -> str:
    assert isinstance(doc, dict) and "error" in doc, doc
    return doc["error"]["code"]


# -- 11: fact text is not markup ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ("Deploy key is [/bold] rotated", "deploy key"),
        ("Look [black on black]hidden words[/] now", "hidden words"),
        ("A [link=https://evil.example]click[/link] :smile:", "click"),
        ("Tag [bold]loud[/bold] zebra", "zebra"),
    ],
)
def test_markup_in_a_fact_is_printed_literally(cli, text, query):
    env = _env(cli)
    added = cli("remember", text, "--scope", "s", "--add", env=env)
    assert added.returncode == 0, added.stderr
    assert text in added.stdout
    recalled = cli("recall", query, "--scope", "s", env=env)
    assert recalled.returncode == 0, recalled.stderr
    assert text in recalled.stdout
    proposed = cli("remember", text + " again", "--scope", "s", env=env)
    assert proposed.returncode == 0, proposed.stderr
    assert text in proposed.stdout  # the candidate's text


def test_terminal_escapes_in_a_fact_are_shown_not_obeyed(cli):
    env = _env(cli)
    added = cli("remember", "Plain \x1b[8mconcealed\x1b[0m text", "--scope", "s", "--add", env=env)
    assert added.returncode == 0, added.stderr
    recalled = cli("recall", "plain concealed", "--scope", "s", env=env)
    for result in (added, recalled):
        assert "\x1b" not in result.stdout
        assert "concealed" in result.stdout


def test_callers_and_paths_are_printed_literally(cli, tmp_path):
    env = _env(cli)
    if not pg_homes.server_mode():  # a server's collections have no folder
        root = tmp_path / "[red]root[/red]"
        made = cli("collection", "add", "work", "--path", str(root), env=env)
        assert made.returncode == 0, made.stderr
        assert "[red]root[/red]" in made.stdout
        listed = cli("collection", "list", env=env)
        assert "[red]root[/red]" in listed.stdout
    # A write an MCP client made on a propose-only server waits for review under its caller.
    from engine.facade import RememberRequest, open_service

    service = open_service(home=cli.home, model="/nonexistent/gno-tui-test-model")
    service.remember(
        RememberRequest(
            text="Queued [italic]fact[/italic]",
            scopes=["s"],
            caller="[bold]agent[/bold]",
            session="s1",
            decision="add",
        ),
        hold_writes=True,
        origin="mcp",
    )
    service.close()
    queue = cli("review", "--list", env=env)
    assert queue.returncode == 0, queue.stderr
    assert "[bold]agent[/bold]" in queue.stdout
    assert "Queued [italic]fact[/italic]" in queue.stdout


# -- 12: deep JSON --------------------------------------------------------------------------------


def _deep(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [40, 100_000])
def test_a_deep_keyed_request_is_request_invalid(cli, tmp_path, depth):
    raw = '{"key": "k", "memory": {"content": "x", "metadata": {"a": ' + _deep(depth) + "}}}"
    request = tmp_path / "request.json"
    request.write_text(raw, encoding="utf-8")
    done = cli.here("memory", "remember", "--request", str(request), "--json")
    assert _code(done.doc) == "MEMORY_REQUEST_INVALID" and done.returncode == 1


@pytest.mark.parametrize("depth", [40, 100_000])
def test_a_deep_receipt_is_receipt_invalid(cli, tmp_path, depth):
    receipt = tmp_path / "receipt.json"
    receipt.write_text('{"receipt": ' + _deep(depth) + "}", encoding="utf-8")
    done = cli.here("remember", "Some text", "--scope", "s", "--receipt", str(receipt), "--json")
    assert _code(done.doc) == "MEMORY_RECEIPT_INVALID" and done.returncode == 1


@pytest.mark.parametrize("fmt", ["jsonl", "mem0"])
def test_a_deep_import_is_import_invalid(cli, tmp_path, probe, fmt):
    source = tmp_path / f"deep.{'jsonl' if fmt == 'jsonl' else 'json'}"
    if fmt == "jsonl":
        body = '{"text": "a", "scopes": ["s"], "workbench": {"a": ' + _deep(100_000) + "}}\n"
    else:
        body = '{"results": ' + _deep(100_000) + "}"
    source.write_text(body, encoding="utf-8")
    before = probe.state()
    done = cli.here("import", str(source), "--format", fmt, "--json")
    assert _code(done.doc) == "MEMORY_IMPORT_INVALID" and done.returncode == 1
    assert probe.state() == before


# -- 12: not UTF-8 --------------------------------------------------------------------------------


def test_text_that_is_not_utf8_is_text_invalid(cli, probe):
    before = probe.state()
    code, doc, _ = _run_bytes(cli, "remember", b"bad \xff text", "--scope", "s", "--add", "--json")
    assert (code, _code(doc)) == (1, "MEMORY_TEXT_INVALID")
    assert "UTF-8" in doc["error"]["message"]
    code, doc, _ = _run_bytes(
        cli, "remember", "-", "--scope", "s", "--add", "--json", stdin=b"bad \xff stdin"
    )
    assert (code, _code(doc)) == (1, "MEMORY_TEXT_INVALID")
    assert "stdin" in doc["error"]["message"]
    code, doc, _ = _run_bytes(
        cli, "remember", "Fine text", "--scope", "s", "--add", "--caller", b"c\xffx", "--json"
    )
    assert (code, _code(doc)) == (1, "MEMORY_TEXT_INVALID")
    assert "--caller" in doc["error"]["message"]
    code, doc, stderr = _run_bytes(cli, "remember", b"bad \xff text", "--scope", "s", "--add")
    assert code == 1 and "MEMORY_TEXT_INVALID" in stderr
    assert probe.state() == before


def test_a_receipt_that_is_not_utf8_is_receipt_invalid(cli, tmp_path):
    receipt = tmp_path / "receipt.json"
    receipt.write_bytes(b'{"receipt": "\xff"}')
    done = cli("remember", "Some text", "--scope", "s", "--receipt", str(receipt), "--json")
    assert _code(done.doc) == "MEMORY_RECEIPT_INVALID" and "UTF-8" in done.error["message"]
    code, doc, _ = _run_bytes(
        cli, "remember", "Some text", "--scope", "s", "--receipt", "-", "--json", stdin=b"\xff{"
    )
    assert (code, _code(doc)) == (1, "MEMORY_RECEIPT_INVALID")
    lone = tmp_path / "lone.json"
    lone.write_text('{"receipt": {"caller": "\\ud800"}}', encoding="utf-8")
    done = cli("remember", "Some text", "--scope", "s", "--receipt", str(lone), "--json")
    assert _code(done.doc) == "MEMORY_RECEIPT_INVALID"


# -- 12: collection roots and export targets ------------------------------------------------------


@pytest.mark.embedded_mode  # a collection's folder
def test_an_unwritable_collection_root_leaves_no_collection(cli, tmp_path, home):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder", encoding="utf-8")
    for path in (blocker / "sub", Path("/proc/gno-tui-test")):
        done = cli.here("collection", "add", "work", "--path", str(path), "--json")
        assert _code(done.doc) == "MEMORY_COLLECTION_INVALID", done.doc
        assert str(path) in done.error["message"]
        listed = cli.here("collection", "list", "--json").doc
        assert [c["name"] for c in listed["collections"]] == ["memory"]
        assert "work" not in (home / "collections.yaml").read_text(encoding="utf-8")
    # The name is still free.
    assert cli.here("collection", "add", "work", "--json").returncode == 0


def _export_refused(cli, targets: dict[str, Path]) -> None:
    for what, target in targets.items():
        for fmt in ("jsonl", "ob1"):
            done = cli.here("export", "--format", fmt, "--output", str(target), "--json")
            assert done.returncode == 1, (what, done.stdout, done.stderr)
            assert _code(done.doc) == "MEMORY_USAGE_INVALID", (what, done.doc)
            assert "--output" in done.error["message"]


def test_export_refuses_a_missing_folder_or_a_folder(cli, tmp_path):
    cli.here("remember", "Exported fact", "--scope", "s", "--add")
    _export_refused(
        cli, {"missing folder": tmp_path / "no" / "such" / "out.jsonl", "a folder": tmp_path}
    )
    # An ordinary target still works.
    done = cli.here("export", "--output", str(tmp_path / "out.jsonl"), "--json")
    assert done.returncode == 0 and "Exported fact" in (tmp_path / "out.jsonl").read_text("utf-8")


@pytest.mark.embedded_mode  # the home's own files as targets
def test_export_refuses_the_homes_own_files(cli, tmp_path, home):
    cli.here("remember", "Exported fact", "--scope", "s", "--add")
    config = home / "collections.yaml"
    config_before = config.read_bytes()
    root = home / "collections" / "memory"
    files_before = sorted(p for p in root.rglob("*") if p.is_file())
    _export_refused(
        cli,
        {
            "collections.yaml": config,
            "in a collection root": root / "facts" / "export.jsonl",
            "the index": home / "index.sqlite",
        },
    )
    for target in (root, root / "facts", config):
        done = cli.here("export", "--format", "gno", "--output", str(target), "--json")
        assert _code(done.doc) == "MEMORY_USAGE_INVALID", (target, done.doc)
    assert config.read_bytes() == config_before
    assert sorted(p for p in root.rglob("*") if p.is_file()) == files_before


# -- 12: the database -----------------------------------------------------------------------------


def test_an_unreachable_database_is_query_failed_without_the_password(cli):
    url = "postgresql://bob:s3cret-pw@127.0.0.1:1/gno"
    done = cli("--db", url, "recall", "tea", "--scope", "s", "--json")
    assert done.returncode == 2 and _code(done.doc) == "MEMORY_QUERY_FAILED", done.doc
    message = done.error["message"]
    assert "127.0.0.1:1" in message and "bob" in message
    assert "s3cret-pw" not in message
    human = cli("--db", url, "recall", "tea", "--scope", "s")
    assert human.returncode == 2 and "MEMORY_QUERY_FAILED" in human.stderr
    assert "s3cret-pw" not in human.stderr


# -- 12: keyed numbers, invisible text --------------------------------------------------------


@pytest.mark.parametrize("field", ["since_ms", "until_ms"])
def test_a_keyed_range_above_uint64_is_refused(cli, tmp_path, field):
    request = tmp_path / "request.json"
    request.write_text(json.dumps({field: 2**64}), encoding="utf-8")
    done = cli.here("memory", "recall", "--request", str(request), "--json")
    assert _code(done.doc) == "MEMORY_REQUEST_INVALID" and done.returncode == 1
    assert "uint64" in done.error["message"]


@pytest.mark.parametrize("text", ["\u200b\u200d", "\ufeff", "\x01\x02"])
def test_invisible_only_text_is_refused(cli, probe, text):
    before = probe.state()
    done = cli.here("remember", text, "--scope", "s", "--add", "--json")
    assert _code(done.doc) == "MEMORY_TEXT_REQUIRED" and done.returncode == 1
    code, doc, _ = _run_bytes(
        cli, "remember", "-", "--scope", "s", "--add", "--json", stdin=b"\x00\x00\x00"
    )
    assert (code, _code(doc)) == (1, "MEMORY_TEXT_REQUIRED")
    assert probe.state() == before
