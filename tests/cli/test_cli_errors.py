"""Bad input through the console script: its own code, a message that says how to fix it,
exit code 1, and nothing written (no fact file, no facts row). The fence through --receipt
and --derived-from.

The cases the contract names run through the installed console script, in parallel against one
prepared store (each is read-only for a correct CLI, and each case's text is unique, so a stray
write is attributed to its case). A few more variants run through `gno_tui.cli.main` in this
process, which is the same code minus the process start-up, to keep the suite fast."""

from __future__ import annotations

import copy
import json

import pytest


def add(text: str, *more: str) -> list[str]:
    """The argv of an add of `text` in scope s, with `more` arguments."""
    return ["remember", text, "--scope", "s", "--add", *more]


# (id, argv after --home, code, phrase of the fix in the message); {placeholders} are
# filled from the prepared store. Ids in IN_PROCESS run through main() instead of a process.
CASES: list[tuple[str, list[str], str, str]] = [
    ("empty text", add(""), "MEMORY_TEXT_REQUIRED", "gno-tui remember"),
    ("whitespace text", add("  \n "), "MEMORY_TEXT_REQUIRED", "gno-tui remember"),
    ("oversized text", add("oversized " + "x" * 4090), "MEMORY_TEXT_TOO_LARGE", "split"),
    ("no scopes", ["remember", "case no scopes", "--add"], "MEMORY_SCOPES_REQUIRED", "--scope"),
    (
        "nine scopes",
        [
            "remember",
            "case nine scopes",
            "--add",
            *[arg for i in range(9) for arg in ("--scope", f"s{i}")],
        ],
        "MEMORY_SCOPES_INVALID",
        "at most 8",
    ),
    (
        "malformed scope",
        ["remember", "case malformed scope", "--scope", "bad scope!", "--add"],
        "MEMORY_SCOPES_INVALID",
        "starts with a letter or digit",
    ),
    (
        "unknown collection",
        add("case unknown collection", "--collection", "nope"),
        "MEMORY_COLLECTION_NOT_FOUND",
        "gno-tui collection add nope",
    ),
    (
        "max-facts 0",
        ["recall", "tea", "--scope", "s", "--max-facts", "0"],
        "MEMORY_BUDGET_INVALID",
        "whole number from 1",
    ),
    (
        "max-tokens abc",
        ["recall", "tea", "--scope", "s", "--max-tokens", "abc"],
        "MEMORY_BUDGET_INVALID",
        "whole number from 1",
    ),
    ("empty query", ["recall", " ", "--scope", "s"], "MEMORY_QUERY_REQUIRED", "gno-tui recall"),
    ("recall without scope", ["recall", "tea"], "MEMORY_SCOPES_REQUIRED", "--scope"),
    (
        "supersede without hash",
        ["remember", "case no hash", "--supersede", "{uri}"],
        "MEMORY_PREDECESSOR_REQUIRED",
        "--predecessor-hash",
    ),
    (
        "supersede with stale hash",
        [
            "remember",
            "case stale hash",
            "--supersede",
            "{uri}",
            "--predecessor-hash",
            "{other_hash}",
        ],
        "MEMORY_PREDECESSOR_HASH_MISMATCH",
        "recall it again",
    ),
    (
        "supersede of unknown uri",
        [
            "remember",
            "case unknown uri",
            "--decision",
            "supersede",
            "--predecessor",
            "{uri_unknown}",
            "--predecessor-hash",
            "{hash}",
        ],
        "MEMORY_PREDECESSOR_NOT_FOUND",
        "recall it again",
    ),
    (
        "tampered receipt",
        add("case tampered receipt", "--receipt", "{tampered}"),
        "MEMORY_RECEIPT_INVALID",
        "unmodified",
    ),
    (
        "receipt not json",
        add("case receipt not json", "--receipt", "{not_json}"),
        "MEMORY_RECEIPT_INVALID",
        "gno-tui recall",
    ),
    (
        "receipt file missing",
        add("case receipt missing", "--receipt", "{missing}"),
        "MEMORY_RECEIPT_INVALID",
        "gno-tui recall",
    ),
    (
        "receipt file is null",
        add("case receipt null", "--receipt", "{null}"),
        "MEMORY_RECEIPT_INVALID",
        "gno-tui recall",
    ),
    (
        "add with decision supersede",
        add("case add and supersede", "--decision", "supersede"),
        "MEMORY_DECISION_INVALID",
        "pass one of them",
    ),
    (
        "add with supersede",
        add("case add plus supersede", "--supersede", "{uri}", "--predecessor-hash", "{hash}"),
        "MEMORY_DECISION_INVALID",
        "pass one of them",
    ),
    # The fence: the recalled text with the saved recall output, in the scope where it already
    # exists, so a fence that ran after the exact check would answer `existing` instead.
    (
        "fenced replay",
        add("Alice drinks green tea", "--receipt", "{saved_recall}"),
        "MEMORY_FENCED_REPLAY",
        "supersede",
    ),
    (
        "fenced replay of receipt object",
        ["remember", "Alice drinks green tea", "--scope", "other", "--receipt", "{saved_receipt}"],
        "MEMORY_FENCED_REPLAY",
        "supersede",
    ),
    (
        "fenced derived",
        add("Alice drinks green tea", "--derived-from", "{uri}"),
        "MEMORY_FENCED_DERIVED",
        "supersede",
    ),
    (
        "bad egress",
        ["recall", "tea", "--scope", "s", "--egress", "internet"],
        "MEMORY_POLICY_INVALID",
        "local_only, lan, remote",
    ),
]
IN_PROCESS = {
    "receipt file is null",
    "whitespace text",
    "empty query",
    "recall without scope",
    "receipt file missing",
    "add with supersede",
    "fenced replay of receipt object",
    "bad egress",
}


@pytest.fixture(scope="module")
def batch(tmp_path_factory, make_cli, make_probe, make_client):
    """Prepare one store, run every case in parallel, and hand back the results."""
    home = tmp_path_factory.mktemp("cli-errors") / "home"
    client = make_client(home)
    try:
        tea = client.add("Alice drinks green tea", "s")["record"]
        other = client.add("Bob likes black coffee", "s")["record"]
    finally:
        client.engine.db.dispose()
    cli = make_cli(home)
    saved = cli("recall", "green tea", "--scope", "s", "--json")
    assert saved.returncode == 0
    assert [f["recordId"] for f in saved.doc["facts"]] == [tea["recordId"]]
    files = home.parent
    (files / "recall.json").write_text(saved.stdout, encoding="utf-8")
    (files / "receipt.json").write_text(json.dumps(saved.doc["receipt"]), encoding="utf-8")
    tampered = copy.deepcopy(saved.doc)
    tampered["receipt"]["memoryIds"][0] = other["recordId"]  # digest kept as issued
    (files / "tampered.json").write_text(json.dumps(tampered), encoding="utf-8")
    (files / "not.json").write_text("memoryIds: [mem-1]\n", encoding="utf-8")
    (files / "null.json").write_text("null\n", encoding="utf-8")
    values = {
        "uri": tea["uri"],
        "hash": tea["contentHash"],
        "other_hash": other["contentHash"],
        "uri_unknown": tea["uri"].replace(tea["recordId"], "mem-0000000000000000"),
        "saved_recall": str(files / "recall.json"),
        "saved_receipt": str(files / "receipt.json"),
        "tampered": str(files / "tampered.json"),
        "not_json": str(files / "not.json"),
        "null": str(files / "null.json"),
        "missing": str(files / "missing.json"),
    }
    probe = make_probe(home)
    before = probe.state()
    receipts_before = probe.query("SELECT count(*) FROM receipts")
    calls = {
        case: [arg.format(**values) for arg in argv] + ["--json"] for case, argv, _, _ in CASES
    }
    in_process = {case: cli.here(*calls[case]) for case in IN_PROCESS}
    spawned = [case for case in calls if case not in IN_PROCESS]
    results = dict(zip(spawned, cli.many([calls[case] for case in spawned]), strict=True))
    results.update(in_process)
    return {
        "probe": probe,
        "before": before,
        "receipts_before": receipts_before,
        "results": results,
        "calls": calls,
    }


@pytest.mark.slow  # the batch fixture starts 16 console-script processes: about 15 s
@pytest.mark.parametrize(
    ("case", "code", "hint"), [(c[0], c[2], c[3]) for c in CASES], ids=[c[0] for c in CASES]
)
def test_bad_input_is_refused_with_its_code(batch, case, code, hint):
    result = batch["results"][case]
    assert result.error is not None, (result.stdout, result.stderr)
    assert result.error["code"] == code, result.error
    assert hint.lower() in result.error["message"].lower(), result.error["message"]
    assert result.returncode == 1
    # Nothing written by this case (its text appears in no file and no row).
    argv = batch["calls"][case]
    if argv[0] == "remember" and argv[1].strip() and argv[1] != "Alice drinks green tea":
        text = argv[1]
        assert text not in batch["probe"].file_texts()
        assert text not in {row_text for _, row_text in batch["probe"].rows()}


@pytest.mark.slow  # the batch fixture
def test_the_batch_wrote_nothing_at_all(batch):
    probe = batch["probe"]
    assert probe.state() == batch["before"] == (2, 2)
    assert probe.query("SELECT count(*) FROM receipts") == batch["receipts_before"]


def test_errors_without_json_go_to_stderr(cli):
    result = cli.here("remember", "", "--scope", "s", "--add")
    assert result.returncode == 1
    assert result.stdout == ""
    assert "MEMORY_TEXT_REQUIRED" in result.stderr
    assert "gno-tui remember" in result.stderr
