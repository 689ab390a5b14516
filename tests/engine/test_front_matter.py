"""The front matter written without PyYAML's representer reads back to the same values as
yaml.dump's would, for anything a fact file holds; what it is not sure of goes to yaml.dump."""

from __future__ import annotations

from typing import Any

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from engine.storage.embedded.factfiles import FactFile
from engine.storage.embedded.front_matter import emit

LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Texts as agents write them, and the awkward ones: YAML words, numbers, dates, quotes,
# colons, comments, leading dashes, unicode, control characters, line separators.
AWKWARD = st.sampled_from(
    ["yes", "no", "on", "null", "~", "1.5", "0x1F", "1e3", "2026-12-01", "12:30", "- x",
     "a: b", "a #b", "'q'", '"q"', "", " lead", "trail ", "tab\there", "line\nbreak",
     "\u2028", "\x85", "\x7f", "é café", "🙂", "#docid", "@mention", "key: value", "[x]", "{y}"]
)  # fmt: skip
STRINGS = st.one_of(AWKWARD, st.text(max_size=30))
SCALARS = st.one_of(
    STRINGS, st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False), st.just(0.5)
)
TREES = st.recursive(
    st.one_of(SCALARS, st.lists(SCALARS, max_size=4)),
    lambda inner: st.dictionaries(STRINGS, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=400)
@given(front=st.dictionaries(STRINGS, TREES, min_size=1, max_size=6))
def test_what_is_emitted_reads_back_as_itself(front: dict[str, Any]) -> None:
    text = emit(front)
    if text is not None:
        assert yaml.load(text, Loader=LOADER) == front, text


def test_an_ordinary_fact_takes_the_fast_path_and_reads_back() -> None:
    fact = FactFile(
        record_id="mem-0123456789abcdef",
        scopes=["user:alice", "team:ops"],
        caller="mcp:claude-code",
        session="mcp-1a2b3c4d5e6f",
        created_at="2026-12-01T15:00:00.000Z",
        content_hash="ab" * 32,
        text="Alice prefers green tea: no sugar, #1 choice",
        source="chat 2026-11-30",
        supersedes=["gno://memory/facts/2026-11-01/mem-00000000000000aa.md"],
        workbench={
            "docid": "#1a2b3c",
            "provenance": {"createdBy": "agent", "confidence": 0.5, "verified": False},
            "usePolicy": {"canUseAsEvidence": True, "canUseAsInstruction": False},
        },
    )
    front = {
        "title": fact.text,
        "memory": {
            "recordId": fact.record_id,
            "scopes": fact.scopes,
            "caller": fact.caller,
            "session": fact.session,
            "createdAt": fact.created_at,
            "contentHash": fact.content_hash,
            "source": fact.source,
        },
        "relations": {"supersedes": fact.supersedes},
        "workbench": fact.workbench,
    }
    assert emit(front) is not None
    header = fact.render().split("---\n")[1]
    assert yaml.load(header, Loader=LOADER) == front


def test_what_yaml_would_read_otherwise_is_left_to_yaml_dump() -> None:
    assert emit({"x": 1e20}) is None  # YAML 1.1 reads 1e+20 as a string
    assert emit({"x": [{"a": 1}]}) is None  # a list of mappings
    assert emit({"x": "bell \x07"}) is None  # a character YAML's reader refuses


HEX = st.text(alphabet="0123456789abcdef", min_size=1, max_size=70)


@settings(max_examples=600)
@given(
    value=st.one_of(
        HEX,
        st.builds(lambda tail: "0b" + tail, st.text(alphabet="01_", max_size=8)),
        st.builds(lambda tail: "0x" + tail, HEX),
        st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z\Z"),
    )
)
def test_hashes_and_times_are_written_as_the_resolver_would_have_them(value: str) -> None:
    """The shortcut for hex words and the engine's times gives yaml's reading of the value:
    plain only where it reads back as the same string, quoted where it would be a number, a
    binary integer or a timestamp."""
    written = emit({"k": value})
    assert written is not None
    assert yaml.load(written, Loader=LOADER) == {"k": value}, written
    resolved = yaml.resolver.Resolver().resolve(yaml.ScalarNode, value, (True, False))
    plain = written == f"k: {value}\n"
    assert plain == (resolved == "tag:yaml.org,2002:str"), (value, resolved, written)


@settings(max_examples=400)
@given(
    text=STRINGS.filter(lambda t: t.strip() != ""),
    scopes=st.lists(STRINGS, max_size=3),
    caller=STRINGS,
    source=st.one_of(st.none(), STRINGS),
    supersedes=st.lists(STRINGS, max_size=2),
    workbench=st.dictionaries(STRINGS, TREES, max_size=4),
    created_at=st.sampled_from(["2026-12-01T15:00:00.000Z", "yes", "1.5"]),
    content_hash=st.one_of(HEX, STRINGS),
)
def test_a_fact_file_written_field_by_field_is_the_whole_tree_written(
    text, scopes, caller, source, supersedes, workbench, created_at, content_hash
) -> None:
    """FactFile.render writes its front matter field by field; what it writes is what the
    whole tree gives (emit, or yaml.dump where emit is unsure), byte for byte."""
    fact = FactFile(
        record_id="mem-0123456789abcdef",
        scopes=scopes,
        caller=caller,
        session="s",
        created_at=created_at,
        content_hash=content_hash,
        text=text,
        source=source,
        supersedes=supersedes,
        workbench=workbench,
    )
    assert fact.render() == f"---\n{fact.general_header()}---\n\n{text.strip()}\n"
