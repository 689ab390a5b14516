"""`gno-tui memory ...` through the installed console script: requests on stdin or from a
file, compact JSON responses, errors with their exit codes, and two processes racing one
if_revision update (one wins, one conflicts with exit 4)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from engine.contract.errors import exit_code_for
from engine.contract.validation import schema_errors

ROUNDS = 2


def start(cli: Any, *args: str, stdin: str | None = None) -> Any:
    """`gno-tui memory ARGS --json` in its own process (started, not awaited). Run directly
    rather than through `cli`, whose result check knows only GNO's own remember/recall."""
    process = subprocess.Popen(
        [cli.script, "--home", str(cli.home), "memory", *args, "--json"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli.env(home=cli.home),
    )
    return process, stdin


def finish(started: Any) -> tuple[int, Any, str]:
    """(exit code, parsed stdout, stdout); an error is the contract's object and exit code."""
    process, stdin = started
    stdout, _ = process.communicate(input=stdin, timeout=60)
    document = json.loads(stdout) if stdout.strip() else None
    if isinstance(document, dict) and "error" in document:
        assert set(document) == {"error"} and set(document["error"]) == {"code", "message"}
        assert process.returncode == exit_code_for(document["error"]["code"])
    return process.returncode, document, stdout


def memory(cli: Any, *args: str, stdin: str | None = None) -> tuple[int, Any, str]:
    return finish(start(cli, *args, stdin=stdin))


def memory_many(cli: Any, calls: list[tuple[tuple[str, ...], str | None]]) -> list[Any]:
    """Independent calls side by side (process start-up dominates a call's time)."""
    return [
        finish(process) for process in [start(cli, *args, stdin=stdin) for args, stdin in calls]
    ]


def ok(kind: str, result: tuple[int, Any, str]) -> Any:
    code, document, stdout = result
    assert code == 0, stdout
    assert not schema_errors(kind, document), document
    # Compact JSON, as max_bytes measures it.
    assert stdout == json.dumps(document, ensure_ascii=False, separators=(",", ":")) + "\n"
    return document


def test_remember_recall_search_get_history(cli, tmp_path):
    created = ok(
        "keyed_hit",
        memory(
            cli,
            "remember",
            stdin=json.dumps(
                {
                    "key": "pref/tea",
                    "memory": {
                        "content": "Alice prefers green tea",
                        "tags": ["Drinks"],
                        "topic": "alice",
                    },
                }
            ),
        ),
    )
    assert created["revision"] == 1 and created["memory"]["tags"] == ["drinks"]
    request = tmp_path / "update.json"
    request.write_text(
        json.dumps(
            {"key": "pref/tea", "if_revision": 1, "memory": {"content": "Alice prefers black tea"}}
        )
    )
    updated = ok("keyed_hit", memory(cli, "remember", "--request", str(request)))
    assert updated["revision"] == 2
    page = ok("keyed_recall", memory(cli, "recall", stdin='{"query": "TEA alice"}'))
    assert [item["memory"]["content"] for item in page["items"]] == ["Alice prefers black tea"]
    ranked = ok("keyed_search", memory(cli, "search", stdin='{"query": "black tea"}'))
    assert ranked["items"][0]["key"] == "pref/tea" and ranked["items"][0]["score"] > 0
    assert ok("keyed_hit", memory(cli, "get", "pref/tea")) == updated
    history = ok("keyed_history", memory(cli, "history", "pref/tea"))
    assert [item["revision"] for item in history["items"]] == [1, 2]
    other = ok(
        "keyed_hit",
        memory(
            cli,
            "remember",
            "--namespace",
            "team",
            stdin='{"key": "pref/tea", "memory": {"content": "x"}}',
        ),
    )
    assert other["revision"] == 1


def test_errors_have_codes_and_exit_codes(cli, tmp_path):
    memory(cli, "remember", stdin='{"key": "k", "memory": {"content": "one"}}')
    code, document, _ = memory(cli, "remember", stdin='{"key": "k", "memory": {"content": "2"}}')
    assert (code, document["error"]["code"]) == (4, "MEMORY_KEY_EXISTS")
    assert "revision 1" in document["error"]["message"]
    bad_recalls = (
        ("not json", "MEMORY_REQUEST_INVALID"),
        ('{"query": NaN}', "MEMORY_REQUEST_INVALID"),
        ('{"cursor": "forged"}', "MEMORY_CURSOR_INVALID"),
        ('{"since_ms": 5, "until_ms": 1}', "MEMORY_RANGE_INVALID"),
        ('{"max_bytes": 10}', "MEMORY_RESPONSE_TOO_LARGE"),
    )
    results = memory_many(
        cli,
        [
            (("remember",), json.dumps({"memory": {"content": "x" * 17 * 1024}})),
            (("search", "--request", str(tmp_path / "missing.json")), None),
            *[(("recall",), stdin) for stdin, _ in bad_recalls],
        ],
    )
    codes = [(code, document["error"]["code"]) for code, document, _ in results]
    assert codes == [(1, "MEMORY_CONTENT_TOO_LARGE"), (1, "MEMORY_REQUEST_INVALID")] + [
        (1, expected) for _, expected in bad_recalls
    ]
    assert "missing.json" in results[1][1]["error"]["message"]
    # Without --json an error is one line on stderr; the exit code is the same.
    plain = cli("memory", "remember", stdin='{"key": "k", "memory": {"content": "3"}}')
    assert plain.returncode == 4 and plain.stdout == ""
    assert plain.stderr.startswith("gno-tui: MEMORY_KEY_EXISTS: ")
    usage = cli("memory", "get", "--json")
    assert usage.returncode == 1 and usage.error["code"] == "MEMORY_USAGE_INVALID"


def test_two_processes_updating_one_revision_give_one_winner_and_one_conflict(cli, tmp_path):
    for round_ in range(ROUNDS):
        key = f"race/{round_}"
        ok(
            "keyed_hit",
            memory(
                cli,
                "remember",
                stdin=json.dumps({"key": key, "memory": {"content": f"start {round_}"}}),
            ),
        )
        files = []
        for city in ("Lyon", "Berlin"):
            path = Path(tmp_path / f"{round_}-{city}.json")
            path.write_text(
                json.dumps(
                    {"key": key, "if_revision": 1, "memory": {"content": f"Carol lives in {city}"}}
                )
            )
            files.append(path)
        # Both processes start back to back and reach the write after the same start-up time.
        results = memory_many(cli, [(("remember", "--request", str(path)), None) for path in files])
        outcomes = [
            (code, document["error"]["code"] if "error" in document else document["revision"])
            for code, document, _ in results
        ]
        assert sorted(outcomes) == [(0, 2), (4, "MEMORY_REVISION_CONFLICT")], outcomes
        history = ok("keyed_history", memory(cli, "history", key))
        assert [item["revision"] for item in history["items"]] == [1, 2]
