"""Import safety (docs/decisions.md, "Import safety"): every field of every item is checked in
the check phase, dry run and real run alike; a fact file that fails to parse is named; fact
files cannot expand past fixed bounds (YAML aliases refused); a failed or interrupted write
phase leaves the store as it was."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.contract.errors import MemoryFailure
from engine.contract.normalize import content_hash
from engine.facade.service import MemoryService
from engine.interop import transfer as interop
from engine.storage import bulk, crash_hook
from engine.storage.bulk import recovery as bulk_recovery
from engine.storage.embedded.factfiles import FactFileError, parse_fact_file

RID = "mem-00000000000000aa"


def jsonl(tmp_path: Path, *items: dict[str, Any], name: str = "in.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")
    return path


def fact_text(front: str, text: str = "a fact") -> str:
    return f"---\n{front}---\n\n{text}\n"


def memory_block(record_id: str = RID, text: str = "a fact") -> str:
    return (
        "memory:\n"
        f"  recordId: {record_id}\n"
        "  scopes: [a]\n"
        "  caller: c\n"
        "  session: s\n"
        "  createdAt: '2026-01-01T00:00:00.000Z'\n"
        f"  contentHash: {content_hash(text)}\n"
    )


def refused(engine, path: Path, **options: Any) -> str:
    """The import is refused in its check phase, dry run and real run alike; the message."""
    messages = []
    for dry_run in (True, False):
        with pytest.raises(MemoryFailure) as caught:
            interop.run_import(engine, path, dry_run=dry_run, **options)
        assert caught.value.code == "MEMORY_IMPORT_INVALID", caught.value.message
        assert "Nothing was imported" in caught.value.message
        messages.append(caught.value.message)
    assert messages[0] == messages[1]
    return messages[0]


def no_leftovers(home: Path) -> None:
    assert list(home.rglob(".import-*")) == []
    assert list(home.rglob(".tmp-*")) == []


# -- defect 1: the check phase checks every field -----------------------------------------

GOOD = {"text": "Alice likes green tea", "scopes": ["user:alice"]}


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"workbench": {"expiresAt": "not-a-date"}}, "workbench.expiresAt"),
        ({"workbench": {"retired": {"at": "yesterday", "by": "p", "reason": "r"}}}, "retired.at"),
        ({"workbench": {"retired": "yes"}}, "workbench.retired"),
        ({"workbench": {"freshness": {"staleAfter": 5}}}, "freshness.staleAfter"),
        ({"workbench": {"provenance": {"status": "made-up"}}}, "provenance.status"),
        ({"workbench": {"provenance": {"confidence": 7}}}, "provenance.confidence"),
        ({"workbench": {"provenance": {"confidence": True}}}, "provenance.confidence"),
        ({"workbench": {"usePolicy": {"canUseAsInstruction": "yes"}}}, "canUseAsInstruction"),
        ({"workbench": {"keyed": {"key": 5}}}, "keyed.key"),
        ({"workbench": {"keyed": {"key": "k", "revision": "2"}}}, "keyed.revision"),
        ({"workbench": {"keyed": {"key": "k", "tags": "a,b"}}}, "keyed.tags"),
        ({"workbench": {"expiresat": "2026-01-01T00:00:00Z"}}, "workbench.expiresat"),
        ({"workbench": {"docid": "#12345678"}}, "workbench.docid"),
        ({"createdAt": "soon"}, "createdAt"),
        ({"createdAt": 1700000000}, "createdAt"),
        ({"caller": 5}, "caller"),
        ({"session": ["s"]}, "session"),
        ({"source": {"a": 1}}, "source"),
        ({"recordId": 12}, "recordId"),
        ({"recordId": "mem-1"}, "recordId"),
        ({"docid": "nope"}, "docid"),
        ({"contentHash": "0" * 64}, "contentHash"),
        ({"collection": 3}, "collection"),
        ({"collection": "nowhere"}, "collection"),
        ({"supersededBy": 4}, "supersededBy"),
        ({"uri": "http://x"}, "uri"),
        ({"scopes": "user:alice"}, "scopes"),
        ({"scopes": ["Not A Scope!"]}, "scope"),
    ],
)
def test_every_jsonl_field_is_checked_before_anything_is_written(
    client, probe, tmp_path, extra, field
):
    path = jsonl(tmp_path, GOOD, {"text": "Bob likes coffee", "scopes": ["user:bob"], **extra})
    before = probe.state()
    message = refused(client.engine, path)
    assert f"{path}:2" in message
    assert field in message
    probe.assert_nothing_written(before)
    no_leftovers(client.engine.home)


def test_the_reported_bad_date_says_what_a_good_one_looks_like(client, tmp_path):
    path = jsonl(tmp_path, {**GOOD, "workbench": {"expiresAt": "not-a-date"}})
    message = refused(client.engine, path)
    assert "'not-a-date'" in message and "ISO 8601" in message
    assert "2026-01-02T03:04:05.000Z" in message


def test_reindex_still_works_after_a_refused_import(client, memory, tmp_path):
    path = jsonl(
        tmp_path,
        GOOD,
        {"text": "two", "scopes": ["a"], "workbench": {"expiresAt": "not-a-date"}},
        {"text": "three", "scopes": ["a"]},
    )
    refused(client.engine, path)
    report = memory.reindex()
    assert (report["files"], report["problems"]) == (0, [])


def test_duplicate_record_ids_in_one_import_are_refused(client, probe, tmp_path):
    first = {**GOOD, "recordId": RID}
    second = {"text": "Bob likes coffee", "scopes": ["user:bob"], "recordId": RID}
    path = jsonl(tmp_path, first, second)
    before = probe.state()
    message = refused(client.engine, path)
    assert f"{path}:2" in message and f"{path}:1" in message and RID in message
    probe.assert_nothing_written(before)


@pytest.mark.embedded_mode
def test_an_unindexed_file_with_the_same_record_id_is_not_overwritten(client, tmp_path):
    existing = client.engine.collection_root("memory") / f"facts/2026-01-01/{RID}.md"
    existing.parent.mkdir(parents=True)
    original = fact_text(memory_block())
    existing.write_text(original, encoding="utf-8")
    path = jsonl(tmp_path, {**GOOD, "recordId": RID, "createdAt": "2026-01-01T05:00:00Z"})
    report = interop.run_import(client.engine, path)
    assert report.count("add") == 0 and report.count("skip") == 1
    assert "reindex" in report.actions[0]["reason"]
    assert existing.read_text(encoding="utf-8") == original


def test_ob1_links_and_dates_are_checked(client, probe, tmp_path):
    client.add("Alice likes green tea", "user:alice")
    document = interop.export_ob1(client.engine)
    memory = document["memories"][0]
    memory["memory_id"] = "m1"
    memory["related_artifacts"] = [{"kind": "supersedes", "uri": "not-a-gno-uri"}]
    path = tmp_path / "ob1.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    before = probe.state()
    message = refused(client.engine, path, collection="memory")
    assert f"{path}#/memories/0" in message and "related_artifacts" in message
    probe.assert_nothing_written(before)


def test_mem0_fields_are_checked(client, probe, tmp_path):
    path = tmp_path / "mem0.json"
    document = {"results": [{"id": "1", "memory": "Alice likes tea", "user_id": ["alice"]}]}
    path.write_text(json.dumps(document), encoding="utf-8")
    message = refused(client.engine, path)
    assert f"{path}#/results/0" in message and "user_id" in message
    document = {"results": [{"id": "1", "memory": "Alice likes tea", "created_at": "later"}]}
    path.write_text(json.dumps(document), encoding="utf-8")
    message = refused(client.engine, path, scopes=["user:alice"])
    assert f"{path}#/results/0" in message and "created_at" in message


def test_a_gno_folder_with_a_bad_file_is_refused_naming_it(client, probe, tmp_path):
    folder = tmp_path / "gno" / "facts" / "2026-01-01"
    folder.mkdir(parents=True)
    good = folder / "mem-00000000000000ab.md"
    good.write_text(fact_text(memory_block("mem-00000000000000ab")), encoding="utf-8")
    bad = folder / f"{RID}.md"
    bad.write_text(
        fact_text(memory_block() + "workbench:\n  expiresAt: not-a-date\n"), encoding="utf-8"
    )
    before = probe.state()
    message = refused(client.engine, tmp_path / "gno")
    assert str(bad) in message and "workbench.expiresAt" in message
    probe.assert_nothing_written(before)


def test_deep_or_non_finite_json_is_refused(client, probe, tmp_path):
    before = probe.state()
    for nested in (60, 5000):  # 5000: past what the JSON decoder itself can nest
        path = tmp_path / f"deep{nested}.jsonl"
        line = '{"text": "x", "scopes": ["a"], "workbench": {"m": ' + "[" * nested
        path.write_text(line + "]" * nested + "}}\n", encoding="utf-8")
        message = refused(client.engine, path)
        assert f"{path}:1" in message and "nest" in message
    path = tmp_path / "nan.jsonl"
    path.write_text(
        '{"text": "x", "scopes": ["a"], "workbench": {"provenance": {"confidence": NaN}}}\n',
        encoding="utf-8",
    )
    assert "NaN" in refused(client.engine, path)
    probe.assert_nothing_written(before)


def test_a_long_source_is_refused(client, tmp_path):
    path = jsonl(tmp_path, {**GOOD, "source": "s" * (64 * 1024 + 1)})
    assert "source" in refused(client.engine, path)


def test_a_keyed_fact_may_be_as_long_as_the_keyed_api_allows(client, tmp_path):
    long = "word " * 2000  # 10 KB: more than remember's 4 KiB, within the keyed 16 KiB
    item = {"text": long, "scopes": ["kv:default"], "workbench": {"keyed": {"key": "k1"}}}
    assert interop.run_import(client.engine, jsonl(tmp_path, item)).count("add") == 1
    path = jsonl(tmp_path, {**item, "workbench": {}}, name="plain.jsonl")
    assert "4096" in refused(client.engine, path)


# -- fact files: errors name the file, dates are strict -----------------------------------


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ("workbench:\n  expiresAt: not-a-date\n", "workbench.expiresAt"),
        ("workbench:\n  retired: {at: never, by: p, reason: r}\n", "workbench.retired.at"),
        ("workbench:\n  freshness: {staleAfter: whenever}\n", "workbench.freshness.staleAfter"),
        ("workbench: [1, 2]\n", "workbench"),
        ("relations:\n  supersedes: gno://x\n", "relations.supersedes"),
        ("relations:\n  supersedes: [5]\n", "relations.supersedes"),
    ],
)
@pytest.mark.embedded_mode
def test_a_fact_file_with_a_bad_field_is_named_by_reindex(client, memory, extra, field):
    kept = client.add("Bob likes coffee", "user:bob")
    path = Path(kept["absPath"]).with_name(f"{RID}.md")
    path.write_text(fact_text(memory_block() + extra), encoding="utf-8")
    with pytest.raises(FactFileError) as caught:
        parse_fact_file(path.read_text(encoding="utf-8"), where=str(path))
    assert str(path) in str(caught.value) and field in str(caught.value)
    report = memory.reindex()
    assert (report["files"], report["indexed"]) == (2, 1)
    assert len(report["problems"]) == 1
    assert str(path) in report["problems"][0] and field in report["problems"][0]


def test_a_bad_created_at_is_refused_by_the_parser(tmp_path):
    front = memory_block().replace("'2026-01-01T00:00:00.000Z'", "'the first of May'")
    with pytest.raises(FactFileError) as caught:
        parse_fact_file(fact_text(front), where="x.md")
    assert "x.md: memory.createdAt" in str(caught.value)
    assert "ISO 8601" in str(caught.value)


def test_read_fact_file_names_the_path_for_every_failure(tmp_path):
    from engine.storage.embedded.factfiles import read_fact_file

    missing = tmp_path / "facts" / "2026-01-01" / f"{RID}.md"
    with pytest.raises(FactFileError) as caught:
        read_fact_file(missing)
    assert caught.value.path == missing and str(missing) in str(caught.value)
    missing.parent.mkdir(parents=True)
    missing.write_bytes(b"---\n\xff\xfe\n---\n\nx\n")
    with pytest.raises(FactFileError) as caught:
        read_fact_file(missing)
    assert str(missing) in str(caught.value) and "UTF-8" in str(caught.value)
    missing.write_text(fact_text(memory_block()), encoding="utf-8")
    assert read_fact_file(missing).record_id == RID


def test_unquoted_yaml_times_are_read_as_times():
    front = memory_block().replace("'2026-01-01T00:00:00.000Z'", "2026-01-01T00:00:00Z")
    front += "workbench:\n  expiresAt: 2027-01-01T00:00:00+01:00\n"
    parsed = parse_fact_file(fact_text(front), where="x.md")
    assert parsed.created_at == "2026-01-01T00:00:00.000Z"
    assert parsed.workbench["expiresAt"] == "2026-12-31T23:00:00.000Z"


# -- defect 3: an accepted item never poisons recall --------------------------------------


def test_a_string_supersedes_is_refused_not_split_into_characters(client, probe, tmp_path):
    path = jsonl(tmp_path, {**GOOD, "supersedes": "gno://memory/x"})
    before = probe.state()
    message = refused(client.engine, path)
    assert f"{path}:1" in message and "supersedes" in message and "list" in message
    probe.assert_nothing_written(before)


@pytest.mark.parametrize("uri", ["gno://memory", "memory/facts/x.md", ""])
def test_a_supersedes_entry_must_be_a_gno_uri(client, tmp_path, uri):
    path = jsonl(tmp_path, {**GOOD, "supersedes": [uri]})
    assert "supersedes" in refused(client.engine, path)


def test_what_an_import_accepts_recall_returns(client, tmp_path):
    path = jsonl(
        tmp_path,
        {
            **GOOD,
            "supersedes": ["gno://memory/facts/2025-01-01/mem-00000000000000ff.md"],
            "workbench": {
                "expiresAt": "2099-01-01T00:00:00+02:00",
                "freshness": {"staleAfter": None},
                "provenance": {"status": "observed", "confidence": 1},
            },
        },
    )
    report = interop.run_import(client.engine, path)
    assert report.count("add") == 1
    found = client.recall("green tea", ["user:alice"])
    assert [f["text"] for f in found["facts"]] == ["Alice likes green tea"]
    exported = interop.export_jsonl_items(client.engine)[0]
    assert exported["workbench"]["expiresAt"] == "2098-12-31T22:00:00.000Z"
    interop.export_ob1(client.engine)  # the OB1 shape validates too


# -- defect 4: a fact file cannot expand ---------------------------------------------------


def billion_laughs(levels: int = 9) -> str:
    lines = ['  l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for level in range(1, levels):
        refs = ",".join([f"*l{level - 1}"] * 9)
        lines.append(f"  l{level}: &l{level} [{refs}]")
    return "workbench:\n  bomb:\n" + "\n".join("  " + line for line in lines) + "\n"


def test_a_yaml_alias_bomb_is_refused_at_parse(tmp_path):
    content = fact_text(memory_block() + billion_laughs(9))
    assert len(content.encode("utf-8")) < 1000
    with pytest.raises(FactFileError) as caught:
        parse_fact_file(content, where="bomb.md")
    assert "bomb.md" in str(caught.value) and "alias" in str(caught.value)


@pytest.mark.embedded_mode
def test_reindex_and_import_refuse_an_alias_bomb_naming_the_file(client, memory, tmp_path):
    kept = client.add("Bob likes coffee", "user:bob")
    bomb = Path(kept["absPath"]).with_name(f"{RID}.md")
    bomb.write_text(fact_text(memory_block() + billion_laughs(4)), encoding="utf-8")
    report = memory.reindex()
    assert report["indexed"] == 1
    assert len(report["problems"]) == 1 and str(bomb) in report["problems"][0]
    assert "alias" in report["problems"][0]
    folder = tmp_path / "gno" / "facts" / "2026-01-01"
    folder.mkdir(parents=True)
    (folder / bomb.name).write_text(bomb.read_text(encoding="utf-8"), encoding="utf-8")
    assert "alias" in refused(client.engine, tmp_path / "gno")


def test_deep_nesting_is_refused():
    deep = "workbench:\n  deep: " + "[" * 200 + "]" * 200 + "\n"
    with pytest.raises(FactFileError) as caught:
        parse_fact_file(fact_text(memory_block() + deep), where="deep.md")
    assert "deep.md" in str(caught.value) and "nest" in str(caught.value)


def test_too_many_nodes_are_refused():
    wide = "workbench:\n  wide: [" + ",".join(["1"] * 60_000) + "]\n"
    assert len(wide) < 1024 * 1024
    with pytest.raises(FactFileError) as caught:
        parse_fact_file(fact_text(memory_block() + wide), where="wide.md")
    assert "wide.md" in str(caught.value) and "values" in str(caught.value)


def test_a_fact_file_over_one_mib_is_refused():
    big = fact_text(memory_block(), text="x" * (1024 * 1024 + 1))
    with pytest.raises(FactFileError) as caught:
        parse_fact_file(big, where="big.md")
    assert "big.md" in str(caught.value) and "MiB" in str(caught.value)


def test_an_oversized_workbench_in_an_import_is_refused(client, tmp_path):
    path = jsonl(tmp_path, {**GOOD, "workbench": {"keyed": {"key": "k", "metadata": {}}}})
    interop.run_import(client.engine, path, dry_run=True)  # a small one is fine
    wide = {"keyed": {"key": "k", "metadata": {"v": list(range(30_000))}}}
    path = jsonl(tmp_path, {**GOOD, "workbench": wide})
    assert "workbench" in refused(client.engine, path)
    large = {"keyed": {"key": "k", "metadata": {"v": "x" * (8 * 1024)}}}
    path = jsonl(tmp_path, {**GOOD, "workbench": large})
    assert "keyed.metadata" in refused(client.engine, path)
    retired = {"retired": {"at": "2026-01-01T00:00:00Z", "by": "p", "reason": "r" * 70_000}}
    path = jsonl(tmp_path, {**GOOD, "workbench": retired})
    assert "at most 65536" in refused(client.engine, path)
    deep: dict[str, Any] = {}
    for _ in range(30):  # as deep as the keyed API lets metadata nest: imported fine
        deep = {"d": deep}
    item = {**GOOD, "workbench": {"keyed": {"key": "k", "metadata": deep}}}
    assert interop.run_import(client.engine, jsonl(tmp_path, item)).count("add") == 1
    assert MemoryService(client.engine).reindex()["problems"] == []


# -- defect 2: the write phase is all or nothing -------------------------------------------


def test_a_failed_commit_leaves_no_file_no_row_no_staging(client, probe, tmp_path, monkeypatch):
    # One scope each: thirty facts, none a near-duplicate of another.
    path = jsonl(tmp_path, *({"text": f"fact number {n}", "scopes": [f"s{n}"]} for n in range(30)))
    before = probe.state()

    def broken(*_args: Any, **_kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(bulk.RowInserts, "commit", broken)
    with pytest.raises(OSError, match="disk full"):
        interop.run_import(client.engine, path)
    probe.assert_nothing_written(before)
    no_leftovers(client.engine.home)
    monkeypatch.undo()
    assert interop.run_import(client.engine, path).count("add") == 30
    assert probe.state() == (30, 30)


def _stage_by_hand(client, record_id: str, text: str) -> Path:
    """A staging folder as an import killed before its commit leaves it."""
    root = client.engine.collection_root("memory")
    staged = root / ".import-test" / "facts" / "2026-01-01" / f"{record_id}.md"
    staged.parent.mkdir(parents=True)
    staged.write_text(fact_text(memory_block(record_id, text), text), encoding="utf-8")
    (staged.parent / ".tmp-half.md").write_text("half a file", encoding="utf-8")
    return staged


@pytest.mark.embedded_mode
def test_a_leftover_staging_folder_without_rows_is_rolled_back(client, probe):
    _stage_by_hand(client, RID, "a fact")
    day = client.engine.collection_root("memory") / "facts" / "2026-01-02"
    day.mkdir(parents=True)
    (day / ".tmp-abcdef.md").write_text("a torn write", encoding="utf-8")
    done = bulk.recover_interrupted_writes(client.engine)
    assert done == {"rolledBack": 1, "rolledForward": 0, "tempFiles": 1}
    assert probe.state() == (0, 0)
    no_leftovers(client.engine.home)
    assert bulk.recover_interrupted_writes(client.engine) == {
        "rolledBack": 0,
        "rolledForward": 0,
        "tempFiles": 0,
    }


@pytest.mark.embedded_mode
@pytest.mark.parametrize("where", ["home", "fact folder"])
def test_a_torn_write_s_temp_file_alone_is_found_and_removed(client, where: str):
    """No staging folder, only the temp file a crash inside an atomic write left: the cheap
    look at open finds it wherever such a write puts one, and recovery removes it."""
    root = client.engine.collection_root("memory")
    folder = {
        "home": client.engine.home,
        "fact folder": root / "facts" / "2026-01-02",
    }[where]
    folder.mkdir(parents=True, exist_ok=True)
    assert not bulk_recovery.interrupted_writes_left(client.engine)
    (folder / ".tmp-abcdef.md").write_text("a torn write", encoding="utf-8")
    assert bulk_recovery.interrupted_writes_left(client.engine)
    assert bulk.recover_interrupted_writes(client.engine)["tempFiles"] == 1
    assert not bulk_recovery.interrupted_writes_left(client.engine)


@pytest.mark.embedded_mode
def test_a_leftover_staging_folder_whose_rows_committed_is_rolled_forward(client, probe, memory):
    staged = _stage_by_hand(client, RID, "a fact")
    fact = parse_fact_file(staged.read_text(encoding="utf-8"), where=str(staged))
    from engine.storage.reads.records import row_from_file

    row = row_from_file(
        fact,
        collection="memory",
        uri=f"gno://memory/facts/2026-01-01/{RID}.md",
        rel_path=f"facts/2026-01-01/{RID}.md",
        docid="#00000000",
    )
    bulk.RowInserts(client.engine, [bulk.PlannedFact(row, client.engine.home, b"")]).commit(None)
    done = bulk.recover_interrupted_writes(client.engine)
    assert (done["rolledForward"], done["rolledBack"]) == (1, 0)
    assert probe.state() == (1, 1)
    no_leftovers(client.engine.home)
    assert memory.reindex()["problems"] == []


@pytest.mark.embedded_mode
def test_an_import_recovers_what_an_interrupted_one_left(client, probe, tmp_path):
    _stage_by_hand(client, RID, "a fact")
    path = jsonl(tmp_path, GOOD)
    assert interop.run_import(client.engine, path).count("add") == 1
    assert probe.state() == (1, 1)
    no_leftovers(client.engine.home)


def test_the_crash_hook_is_inert_unless_named(monkeypatch):
    monkeypatch.delenv(crash_hook.CRASH_HOOK_ENV, raising=False)
    assert crash_hook.crash_points() is None
    monkeypatch.setenv(crash_hook.CRASH_HOOK_ENV, "staged:3")
    assert crash_hook.crash_points() == ("staged", 3)


@pytest.mark.embedded_mode
def test_opening_leaves_a_running_imports_staging_folder_alone(client, probe):
    import os

    staged = _stage_by_hand(client, RID, "a fact")
    live = staged.parents[2].with_name(f"{bulk_recovery.STAGING_PREFIX}{os.getpid()}-abcd")
    staged.parents[2].rename(live)
    assert bulk.recover_interrupted_writes(client.engine)["rolledBack"] == 0
    assert live.is_dir()
    # A bulk write holds the lock: no other import runs, so the folder is a leftover.
    assert bulk.recover_interrupted_writes(client.engine, skip_live=False)["rolledBack"] == 1
    no_leftovers(client.engine.home)
