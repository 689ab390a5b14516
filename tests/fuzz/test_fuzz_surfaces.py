"""Fuzzing every input surface: whatever comes in, the answer is a result or a coded error, and
a refused call writes nothing.

Surfaces and the inputs fuzzed (hypothesis, a bounded number of examples each):

- `remember` (text, scopes, decision, predecessor, hash, source, receipt, derivedFrom,
  collection), `recall` (query, scopes, budgets, egress, collection, format), `collection
  add/set-policy`, the keyed `memory remember|recall|search` requests and `memory get|history`,
  and `import` (JSONL lines, and whole documents in the other formats): through the façade in
  this process (most examples), through `gno_tui.cli.main` in this process with the standard
  streams a real process has (strict UTF-8 over bytes), and (slow) through the installed
  console script on raw argv and stdin bytes;
- every MCP tool: through the official SDK client over the in-memory transport, on a
  propose-only, a write-enabled and a scope-bound server, and on a real `gno-tui mcp` process
  spoken to in raw JSON-RPC lines (what the SDK client refuses to send: lone surrogates, NaN).

The inputs are what each surface can be handed: for argv, any text but NUL, with lone
surrogates only in U+DC80..U+DCFF (how Python decodes bytes that are not UTF-8); for JSON
(MCP arguments, keyed requests, import lines, receipt files), any value, with control
characters, lone surrogates, huge strings, deep nesting, NaN, big integers and wrong types.
Each input is well-formed but for a field or two (`few_off`), with the seeded store's real
uri, hash, receipt, key and cursor, so that every check is reached with the ones before it
passing; `--hypothesis-show-statistics` shows how often each code was answered.

Every answer must be either a success (validated against its schema; an MCP result against
the output schema its tool declares) or an error `{"error": {"code": "MEMORY_...", "message":
...}}` whose code is a contract code other than MEMORY_INTERNAL, with its exit code on the CLI
(docs/contract.md section 10), as one printable line on stderr without --json; never a
traceback, and over MCP never no answer at all. After an error, the store is as it was: fact
files, facts and their scopes, proposals, receipts, collections, decisions and
collections.yaml (`store_state`). A propose-only server never writes a fact; a bound one never
shows or writes one of another scope. Inputs the fuzzing found are kept as fixed cases
(`FOUND_ON_THE_CLI`, `FOUND_ON_THE_WIRE`)."""

from __future__ import annotations

import contextlib
import copy
import gc
import io
import json
import math
import os
import re
import select
import sqlite3
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import mcp_types as types
import pytest
from hypothesis import HealthCheck, currently_in_test_context, event, given, note, settings
from hypothesis import strategies as st
from jsonschema.validators import validator_for
from mcp import Client

from engine.contract.errors import ERROR_CODES, exit_code_for
from engine.contract.validation import schema_errors
from engine.facade import (
    ImportRequest,
    MemoryFailure,
    MemoryService,
    RecallRequest,
    RememberRequest,
    open_service,
)
from engine.retrieval.embeddings import EmbedderStatus
from gno_tui.cli import main as cli_main
from gno_tui.mcp_registry import TOOLS, TOOLS_BY_NAME
from gno_tui.mcp_server import GnoMcp

CALLER = "fuzz:agent"
SECRET = "Alice's locker code is 4471"  # in user:alice and s, never shown to a user:bob server
SESSION = "fuzz-session"
FUZZ = settings(
    deadline=None,
    print_blob=True,  # a failure prints @reproduce_failure(...) for the falsifying example
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,  # one store per test, shared by its examples
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
        HealthCheck.filter_too_much,
    ],
)


def tally(name: str) -> None:
    """Count `name` for --hypothesis-show-statistics (outside hypothesis, nothing)."""
    if currently_in_test_context():
        event(name)


def fuzz(examples: int) -> settings:
    return settings(FUZZ, max_examples=examples)


# -- what a surface can be handed -------------------------------------------------------------

# Hypothesis's text() merges character strategies and drops lone surrogates from what it
# draws, so texts here are lists of characters joined (`chars_text`), and the characters that
# are rare among all code points but matter most are also drawn on purpose.
SURROGATES = st.characters(categories=["Cs"])
# argv: any text but NUL; lone surrogates only as Python decodes bytes that are not UTF-8.
ARGV_CHARS = st.one_of(
    st.characters(exclude_categories=["Cs"], exclude_characters="\x00"),
    st.characters(min_codepoint=0xDC80, max_codepoint=0xDCFF, categories=["Cs"]),
    st.sampled_from(["\udc80", "\udcff", "\x1b", "\u200b", "\u202e", "\ufeff", "\r", "\n"]),
)
# JSON: anything: NUL, control characters and lone surrogates included.
JSON_CHARS = st.one_of(
    st.characters(exclude_categories=[]),
    SURROGATES,
    st.sampled_from(["\x00", "\x1b", "\u200b", "\u202e", "\ufeff", "\u2028", "\x85", "\r"]),
)


def chars_text(
    chars: st.SearchStrategy[str], *, min_size: int = 0, max_size: int = 60
) -> st.SearchStrategy[str]:
    return st.lists(chars, min_size=min_size, max_size=max_size).map("".join)


ODD_CHARS = st.characters(categories=["Cc", "Cf", "Zs", "Zl", "Zp", "Mn", "Co"])
PLAIN = st.sampled_from(
    [
        "Alice prefers green tea",
        "Bob lives in Lyon",
        "the project deadline is friday",
        "zebra stripes on the savanna",
        "  Alice   prefers green tea  ",
        "ALICE PREFERS GREEN TEA",
        "- [ ] [bold]markup[/bold] <b>html</b> `code`",
        "\x1b[31mred\x1b[0m escape",
    ]
)


def text_in(chars: st.SearchStrategy[str], max_size: int = 60) -> st.SearchStrategy[str]:
    """Plain texts, random ones, odd characters, plain texts with odd ones, and huge texts."""
    return st.one_of(
        PLAIN,
        chars_text(chars, max_size=max_size),
        chars_text(ODD_CHARS, max_size=12),
        st.builds(
            lambda a, b, c: a + b + c,
            chars_text(ODD_CHARS, max_size=3),
            PLAIN,
            chars_text(chars, max_size=4),
        ),
        st.builds(
            lambda unit, times: unit * times,
            chars_text(chars, min_size=1, max_size=3),
            st.integers(1000, 6000),
        ),
    )


ARGV_TEXT = text_in(ARGV_CHARS)
JSON_TEXT = text_in(JSON_CHARS)


def nested(depth: int, kind: str) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


JSON_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),  # NaN and infinities included
    chars_text(JSON_CHARS, max_size=20),
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(chars_text(JSON_CHARS, max_size=10), inner, max_size=4)
    ),
    max_leaves=12,
)
# Deep enough to break a recursive reader or validator; shallow enough for the SDK's transport.
DEEP_MCP = st.builds(nested, st.integers(30, 150), st.sampled_from(["list", "dict"]))
DEEP = st.builds(nested, st.integers(50, 5000), st.sampled_from(["list", "dict"]))
ANY_JSON = st.one_of(JSON_VALUES, DEEP_MCP)


def deep_text(depth: int, kind: str) -> bytes:
    """JSON nested `depth` deep, as text (json.dumps itself cannot write it)."""
    if kind == "list":
        return b"[" * depth + b"1" + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


DEEP_TEXT = st.builds(deep_text, st.integers(50, 100_000), st.sampled_from(["list", "dict"]))


def json_document(values: st.SearchStrategy[Any]) -> st.SearchStrategy[bytes]:
    """JSON text as a file or stdin holds it: escaped or raw UTF-8 (raw lone surrogates make
    it not UTF-8), deeply nested, bytes that are not UTF-8, or not JSON at all."""

    def encode(value: Any, ascii_only: bool) -> bytes:
        return json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")

    return st.one_of(
        st.builds(encode, values, st.booleans()),
        DEEP_TEXT,
        st.binary(max_size=60),
        st.sampled_from([b"", b"null", b"NaN", b"[1, Infinity]", b"{", b"\xff\xfe{}", b"1e999"]),
    )


SCOPE_LIKE = st.one_of(
    st.sampled_from(
        ["user:alice", "s", "user:bob", "kv:default", " USER:Alice ", "a" * 64, "a" * 65]
    ),
    st.text(st.sampled_from("abcAZ09:/._@- "), min_size=0, max_size=70),
)
HEX64 = st.text(st.sampled_from("0123456789abcdef"), min_size=64, max_size=64)
POLICY_LIKE = st.one_of(
    st.sampled_from(["local_only", "lan", "remote", "LAN", " lan", ""]),
    chars_text(ARGV_CHARS, max_size=12),
)
NAME_LIKE = st.one_of(
    st.sampled_from(["memory", "work", "new-one", "nope", "Work", "-x", "a" * 65]),
    chars_text(ARGV_CHARS, max_size=20),
)
BUDGET_LIKE = st.one_of(
    st.integers(-5, 70000).map(str),
    st.sampled_from(["", "+3", " 8", "8.0", "1e3", "²", "٣", "0x10", "99999999999999999999999"]),
    chars_text(ARGV_CHARS, max_size=6),
)


# -- the store --------------------------------------------------------------------------------


@dataclass
class Seeded:
    """A store with facts to supersede, a receipt to present, a key and a second collection."""

    home: Path
    service: MemoryService
    fact: Mapping[str, Any]  # a current fact's record
    recall: Mapping[str, Any]  # a recall result (its receipt is stored)
    cursor: str | None  # a keyed recall cursor

    @property
    def receipt(self) -> dict[str, Any]:
        return dict(self.recall["receipt"])


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[Seeded]:
    home = tmp_path / "home"
    service = open_service(home=home, embedder_status=EmbedderStatus(None, "fuzz"))
    service.add_collection("work", policy="lan")

    def add(text: str, scopes: list[str], collection: str | None = None) -> Mapping[str, Any]:
        request = RememberRequest(
            text=text,
            scopes=scopes,
            caller=CALLER,
            session=SESSION,
            decision="add",
            collection=collection,
        )
        return service.remember(request)["record"]

    fact = add(SECRET, ["user:alice", "s"])
    add("Bob lives in Lyon", ["user:bob", "s"])
    add("The project deadline is friday", ["s"], "work")
    recall = service.recall(
        RecallRequest(
            query="alice locker code", scopes=["user:alice"], caller=CALLER, session=SESSION
        )
    )
    for index in range(3):
        service.keyed.remember(
            {"key": f"pref/{index}", "memory": {"content": f"green tea {index}", "tags": ["tea"]}},
            caller=CALLER,
            session=SESSION,
        )
    page = service.keyed.recall({"query": "tea", "limit": 1})
    yield Seeded(home, service, fact, recall, page.get("next_cursor"))
    service.close()


STATE_QUERIES = {
    "facts": "SELECT record_id, superseded_by, retired_at FROM facts ORDER BY record_id",
    "fact_scopes": "SELECT count(*) FROM fact_scopes",
    "proposals": "SELECT id, state FROM proposals ORDER BY id",
    "receipts": "SELECT count(*) FROM receipts",
    "collections": "SELECT name, root, policy, policy_source, policy_revision FROM collections "
    "ORDER BY name",
    "decisions": "SELECT count(*) FROM decisions",
}


def store_state(home: Path) -> dict[str, Any]:
    """Everything a refused call must leave as it was."""
    state: dict[str, Any] = {
        "files": sorted(str(p.relative_to(home)) for p in home.rglob("mem-*.md")),
        "collections.yaml": (home / "collections.yaml").read_text(encoding="utf-8"),
    }
    with sqlite3.connect(home / "index.sqlite", timeout=10) as connection:
        for name, sql in STATE_QUERIES.items():
            state[name] = connection.execute(sql).fetchall()
    return state


def assert_unchanged(before: dict[str, Any], after: dict[str, Any], what: str) -> None:
    changed = {k: (before[k], after[k]) for k in before if before[k] != after[k]}
    assert not changed, f"{what} was refused but changed the store: {sorted(changed)}"


def assert_coded(code: str, message: str, what: str) -> None:
    tally(code)  # --hypothesis-show-statistics: how often each code was answered
    assert code in ERROR_CODES, f"{what}: {code} is not a contract code"
    assert code != "MEMORY_INTERNAL", f"{what}: MEMORY_INTERNAL ({message})"
    assert isinstance(message, str) and message.strip(), f"{what}: {code} without a message"
    assert "Traceback" not in message, f"{what}: a traceback in the message"


@contextmanager
def refused_or_valid(seeded: Seeded, what: str) -> Iterator[list[Any]]:
    """Runs a façade call: a MemoryFailure must be coded and leave the store unchanged; any
    other exception would reach the caller as MEMORY_INTERNAL. The call appends its result to
    the yielded list (or nothing)."""
    before = store_state(seeded.home)
    out: list[Any] = []
    try:
        yield out
        tally("success")
    except MemoryFailure as failure:
        assert_coded(failure.code, failure.message, what)
        assert_unchanged(before, store_state(seeded.home), f"{what} ({failure.code})")
    except Exception as exc:
        raise AssertionError(
            f"{what}: {type(exc).__name__} escaped the engine (MEMORY_INTERNAL for the caller): "
            f"{exc!s:.300}"
        ) from exc


def valid(kind: str, document: Any, what: str) -> None:
    errors = schema_errors(kind, document)
    assert not errors, f"{what}: the result breaks the {kind} schema: {errors}"


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """`good` three times in four: so that the checks after this field's are reached too."""
    return st.one_of(good, good, good, bad)


GOOD_SCOPES = st.lists(
    st.sampled_from(["user:alice", "s", "user:bob", "work"]), min_size=1, max_size=3
)
SCOPE_LISTS = mostly(
    GOOD_SCOPES,
    st.lists(st.one_of(SCOPE_LIKE, chars_text(JSON_CHARS, max_size=8)), max_size=10),
)


def mutated_receipts(receipt: dict[str, Any]) -> st.SearchStrategy[Any]:
    """The real receipt, or with one field changed, removed or added, or any JSON."""

    def change(field: str, value: Any, how: str) -> dict[str, Any]:
        changed = copy.deepcopy(receipt)
        if how == "drop":
            changed.pop(field, None)
        else:
            changed[field] = value
        return changed

    fields = st.sampled_from([*receipt, "extra"])
    return st.one_of(
        st.just(receipt),
        st.just({"receipt": receipt}),
        st.builds(change, fields, ANY_JSON, st.sampled_from(["set", "drop"])),
        ANY_JSON,
    )


OMIT = object()  # a field left out of the arguments


def few_off(
    good: dict[str, st.SearchStrategy[Any]], bad: dict[str, st.SearchStrategy[Any]], most: int = 2
) -> st.SearchStrategy[dict[str, Any]]:
    """Every field drawn from `good` except up to `most` fields, chosen at random, drawn from
    `bad`: each check is reached with the checks before it passing. A field drawn as OMIT is
    left out."""

    def build(off: list[str]) -> st.SearchStrategy[dict[str, Any]]:
        fields = {name: bad[name] if name in off else good[name] for name in good}
        return st.fixed_dictionaries(fields).map(
            lambda drawn: {k: v for k, v in drawn.items() if v is not OMIT}
        )

    return st.lists(st.sampled_from(sorted(bad)), max_size=most, unique=True).flatmap(build)


WORD = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz"), min_size=3, max_size=10)
# Texts that pass every check on their own: new ones (added), plain ones (existing after the
# first time) and the seeded fact's in disguise (fenced with the receipt).
GOOD_TEXT = st.one_of(
    st.builds(lambda a, b: f"fuzz fact {a} {b}", WORD, WORD),
    PLAIN,
    st.sampled_from(
        [SECRET, f"  {SECRET.upper()}  ", f"\u200b{SECRET}.", SECRET.replace("A", "\u0410")]
    ),
)
BAD_TEXT = st.one_of(st.none(), JSON_TEXT)
BAD_IDENTITY = st.one_of(st.sampled_from(["", " ", None]), chars_text(JSON_CHARS, max_size=10))


def decisions(fact: Mapping[str, Any]) -> st.SearchStrategy[tuple[Any, Any, Any]]:
    """(decision, predecessor, predecessorHash) that fit together."""
    return st.one_of(
        st.sampled_from([("add", None, None), ("propose", None, None), (None, None, None)]),
        st.builds(
            lambda ref: ("supersede", ref, fact["contentHash"]),
            st.sampled_from([fact["uri"], fact["recordId"], fact["docid"]]),
        ),
    )


# -- remember and recall through the façade ---------------------------------------------------


def remember_fields(seeded: Seeded) -> st.SearchStrategy[dict[str, Any]]:
    fact = seeded.fact
    good = {
        "text": GOOD_TEXT,
        "scopes": GOOD_SCOPES,
        "caller": st.just(CALLER),
        "session": st.just(SESSION),
        "decision": decisions(fact),
        "collection": st.sampled_from([None, "memory", "work"]),
        "source": maybe(PLAIN),
        "receipt": st.sampled_from([None, seeded.receipt, {"receipt": seeded.receipt}]),
        "derived_from": st.sampled_from([None, "https://example.com/chat/1"]),
    }
    bad = {
        "text": BAD_TEXT,
        "scopes": st.one_of(st.none(), SCOPE_LISTS),
        "caller": BAD_IDENTITY,
        "session": BAD_IDENTITY,
        "decision": st.tuples(
            maybe(chars_text(JSON_CHARS, max_size=10)),
            maybe(st.one_of(st.sampled_from([fact["uri"], "gno://memory/x"]), JSON_TEXT)),
            maybe(st.one_of(HEX64, JSON_TEXT)),
        ),
        "collection": st.one_of(NAME_LIKE, chars_text(JSON_CHARS, max_size=10)),
        "source": JSON_TEXT,
        "receipt": mutated_receipts(seeded.receipt),
        "derived_from": st.one_of(st.just(fact["uri"]), JSON_TEXT),
    }
    return few_off(good, bad)


@fuzz(150)
@given(data=st.data())
def test_remember_through_the_facade(seeded: Seeded, data: st.DataObject) -> None:
    fields = data.draw(remember_fields(seeded), "fields")
    decision, predecessor, predecessor_hash = fields.pop("decision")
    request = RememberRequest(
        **fields,
        decision=decision,
        predecessor=predecessor,
        predecessor_hash=predecessor_hash,
    )
    hold = data.draw(st.booleans(), "hold_writes")
    with refused_or_valid(seeded, "remember") as out:
        out.append(
            seeded.service.remember(request, hold_writes=hold, origin="mcp" if hold else "cli")
        )
    if out:
        valid("remember", out[0], "remember")
        tally(f"outcome {out[0]['outcome']}")


GOOD_QUERY = st.sampled_from(["alice locker code", "tea", "lyon", "deadline friday", "zebra"])


@fuzz(120)
@given(data=st.data())
def test_recall_through_the_facade(seeded: Seeded, data: st.DataObject) -> None:
    good = {
        "query": GOOD_QUERY,
        "scopes": GOOD_SCOPES,
        "caller": st.just(CALLER),
        "session": st.just(SESSION),
        "max_facts": st.sampled_from([8, "8", 1, 256, "3"]),
        "max_tokens": st.sampled_from([512, "512", 1, 65536, "40"]),
        "collection": st.sampled_from([None, "memory", "work"]),
        "egress": st.sampled_from([None, "local_only", "lan", "remote"]),
    }
    budget = st.one_of(BUDGET_LIKE, st.integers(-3, 70000), st.just(True))
    bad = {
        "query": BAD_TEXT,
        "scopes": st.one_of(st.none(), SCOPE_LISTS),
        "caller": BAD_IDENTITY,
        "session": BAD_IDENTITY,
        "max_facts": budget,
        "max_tokens": budget,
        "collection": st.one_of(NAME_LIKE, chars_text(JSON_CHARS, max_size=10)),
        "egress": POLICY_LIKE,
    }
    request = RecallRequest(**data.draw(few_off(good, bad), "fields"))
    ob1 = data.draw(st.booleans(), "ob1")
    with refused_or_valid(seeded, "recall") as out:
        out.append(seeded.service.recall_ob1(request) if ob1 else seeded.service.recall(request))
    if out:
        valid("ob1_recall" if ob1 else "recall", out[0], "recall")


@fuzz(80)
@given(data=st.data())
def test_collections_through_the_facade(seeded: Seeded, data: st.DataObject) -> None:
    """`collection add NAME --path DIR --policy P` and `set-policy NAME P` (argv text). The
    roots are folders of the test's own or none (under the home): the names are fuzzed, not
    where folders may be created on this machine."""
    roots = seeded.home.parent / "roots"
    fields = data.draw(
        few_off(
            {
                "name": st.one_of(st.sampled_from(["work", "memory"]), WORD.map("new-{}".format)),
                "policy": st.sampled_from(["local_only", "lan", "remote"]),
                "path": st.one_of(st.none(), WORD.map(lambda w: str(roots / w))),
            },
            {
                "name": NAME_LIKE,
                "policy": POLICY_LIKE,
                "path": chars_text(ARGV_CHARS, min_size=1, max_size=12).map(
                    lambda f: str(roots / f.replace("/", "_").replace("..", "_"))
                ),
            },
        ),
        "fields",
    )
    if data.draw(st.booleans(), "add"):
        with refused_or_valid(seeded, "collection add") as out:
            out.append(seeded.service.add_collection(**fields))
    else:
        with refused_or_valid(seeded, "collection set-policy") as out:
            seeded.service.collection(fields["name"])
            out.append(seeded.service.set_policy(fields["name"], fields["policy"], actor=CALLER))


# -- the keyed API ----------------------------------------------------------------------------

LABEL = mostly(
    st.sampled_from(["tea", "TEA ", "green", "drinks"]),
    st.one_of(st.sampled_from(["a" * 65, ""]), chars_text(JSON_CHARS, max_size=12), JSON_VALUES),
)
UINT_LIKE = mostly(
    st.integers(0, 10**6),
    st.one_of(st.integers(-2, 2**65), st.sampled_from([0, 1, 2, 2**64 - 1, 2**64]), JSON_VALUES),
)
GOOD_LABEL = st.sampled_from(["tea", "TEA ", "green", "drinks"])
KEYED_MEMORY = few_off(
    {
        "content": GOOD_TEXT,
        "topic": st.one_of(st.just(OMIT), GOOD_LABEL),
        "tags": st.one_of(st.just(OMIT), st.lists(GOOD_LABEL, max_size=3)),
        "metadata": st.one_of(
            st.just(OMIT), st.dictionaries(WORD, st.one_of(WORD, st.integers()), max_size=2)
        ),
        "occurred_at_ms": st.one_of(st.just(OMIT), st.integers(0, 2_000_000_000_000)),
    },
    {
        "content": st.one_of(
            JSON_TEXT,
            st.builds(
                lambda unit, n: unit * n,
                chars_text(JSON_CHARS, min_size=1, max_size=2),
                st.integers(8000, 17000),
            ),
            JSON_VALUES,
        ),
        "topic": LABEL,
        "tags": st.one_of(st.lists(LABEL, max_size=10), JSON_VALUES),
        "metadata": st.one_of(
            st.dictionaries(chars_text(JSON_CHARS, max_size=8), JSON_VALUES, max_size=4),
            st.builds(lambda n: {"blob": "x" * n}, st.integers(8000, 9000)),
            DEEP_MCP,
            JSON_VALUES,
        ),
        "occurred_at_ms": UINT_LIKE,
    },
)
KEYED_REMEMBER = few_off(
    {
        "memory": KEYED_MEMORY,
        "key": st.one_of(
            st.just(OMIT),
            st.sampled_from(["pref/0", "pref/1"]),
            st.builds(lambda w: f"new/{w}", WORD),
        ),
        "if_revision": st.sampled_from([OMIT, OMIT, 1, 2]),
        "ttl_seconds": st.sampled_from([OMIT, OMIT, 60, 86400]),
    },
    {
        "memory": st.one_of(JSON_VALUES, DEEP_MCP),
        "key": st.one_of(
            st.sampled_from(["", "k" * 257]), chars_text(JSON_CHARS, max_size=20), JSON_VALUES
        ),
        "if_revision": UINT_LIKE,
        "ttl_seconds": UINT_LIKE,
    },
)


def keyed_query(cursor: str | None, *, search: bool = True) -> st.SearchStrategy[dict[str, Any]]:
    """A keyed search request, or without `search` a recall request (which has no `expand`
    or `expansion_terms`: those are among its fuzzed fields instead)."""
    good, bad = _keyed_query_fields(cursor)
    if search:  # a search needs words
        good["query"] = st.sampled_from(["tea", "green tea", "locker", "what does alice drink"])
    else:
        good = {k: v for k, v in good.items() if k not in ("expand", "expansion_terms")}
    return few_off(good, bad)


def _keyed_query_fields(
    cursor: str | None,
) -> tuple[dict[str, st.SearchStrategy[Any]], dict[str, st.SearchStrategy[Any]]]:
    return (
        {
            "query": st.one_of(st.just(OMIT), st.sampled_from(["tea", "green tea", "locker"])),
            "tag": st.one_of(st.just(OMIT), GOOD_LABEL),
            "topic": st.one_of(st.just(OMIT), GOOD_LABEL),
            "since_ms": st.one_of(st.just(OMIT), st.integers(0, 10**12)),
            "until_ms": st.one_of(st.just(OMIT), st.integers(10**12, 2 * 10**12)),
            "limit": st.one_of(st.just(OMIT), st.integers(1, 100)),
            "max_bytes": st.one_of(st.just(OMIT), st.integers(500, 20000)),
            "cursor": st.sampled_from([OMIT, OMIT, cursor]),
            "expand": st.sampled_from([OMIT, True, False]),
            "expansion_terms": st.one_of(st.just(OMIT), st.lists(GOOD_LABEL, max_size=3)),
        },
        {
            "query": st.one_of(
                st.text(st.sampled_from("tea green x "), max_size=300), JSON_TEXT, JSON_VALUES
            ),
            "tag": LABEL,
            "topic": LABEL,
            "since_ms": UINT_LIKE,
            "until_ms": UINT_LIKE,
            "limit": UINT_LIKE,
            "max_bytes": st.one_of(st.integers(0, 2**21), JSON_VALUES),
            "cursor": st.one_of(chars_text(JSON_CHARS, max_size=30), JSON_VALUES),
            "expand": JSON_VALUES,
            "expansion_terms": st.one_of(st.lists(LABEL, max_size=10), JSON_VALUES),
        },
    )


KEYED_RESULT_KINDS = {"remember": "keyed_hit", "recall": "keyed_recall", "search": "keyed_search"}


@fuzz(200)
@given(data=st.data())
def test_keyed_requests_through_the_facade(seeded: Seeded, data: st.DataObject) -> None:
    verb = data.draw(st.sampled_from(["remember", "recall", "search"]), "verb")
    shaped = (
        KEYED_REMEMBER
        if verb == "remember"
        else keyed_query(seeded.cursor, search=verb == "search")
    )
    extra = st.builds(lambda r, v: {**r, "extra": v}, shaped, JSON_VALUES)
    request = data.draw(st.one_of(*[shaped] * 6, extra, ANY_JSON, DEEP), "request")
    namespace = data.draw(
        maybe(
            st.one_of(
                st.sampled_from(["default", "Team-A", "", "kv:x"]),
                chars_text(JSON_CHARS, max_size=12),
            )
        ),
        "namespace",
    )
    keyed = seeded.service.keyed
    with refused_or_valid(seeded, f"memory {verb}") as out:
        if verb == "remember":
            out.append(keyed.remember(request, namespace=namespace, caller=CALLER, session=SESSION))
        else:
            out.append(
                (keyed.recall if verb == "recall" else keyed.search)(request, namespace=namespace)
            )
    if out:
        valid(KEYED_RESULT_KINDS[verb], out[0], f"memory {verb}")


@fuzz(60)
@given(data=st.data())
def test_keyed_get_and_history_through_the_facade(seeded: Seeded, data: st.DataObject) -> None:
    """`memory get|history KEY [--namespace NAME]` (argv text) and the façade's get/history."""
    fields = data.draw(
        few_off(
            {
                "key": st.sampled_from(["pref/0", "pref/1", "nope"]),
                "namespace": st.sampled_from([None, "default", "Default"]),
            },
            {
                "key": st.one_of(
                    st.sampled_from(["", "k" * 300]), chars_text(ARGV_CHARS, max_size=20)
                ),
                "namespace": chars_text(ARGV_CHARS, max_size=12),
            },
        ),
        "fields",
    )
    key, namespace = fields["key"], fields["namespace"]
    history = data.draw(st.booleans(), "history")
    keyed = seeded.service.keyed
    with refused_or_valid(seeded, "memory get/history") as out:
        out.append((keyed.history if history else keyed.get)(key, namespace=namespace))
    if out:
        valid("keyed_history" if history else "keyed_hit", out[0], "memory get/history")


# -- import -----------------------------------------------------------------------------------

IMPORT_ITEM = few_off(
    {
        "text": st.builds(lambda a, b: f"imported {a} {b}", WORD, WORD),
        "scopes": GOOD_SCOPES,
        "collection": st.sampled_from([OMIT, "memory", "work"]),
        "caller": st.sampled_from([OMIT, "import:other"]),
        "session": st.sampled_from([OMIT, "import-session"]),
        "source": st.one_of(st.just(OMIT), PLAIN),
        "createdAt": st.sampled_from([OMIT, "2026-11-30T12:00:00.000Z", "2026-11-30T12:00:00Z"]),
        "recordId": st.one_of(
            st.just(OMIT),
            st.text(st.sampled_from("0123456789abcdef"), min_size=16, max_size=16).map(
                "mem-{}".format
            ),
        ),
        "workbench": st.sampled_from([OMIT, {}]),
    },
    {
        "text": st.one_of(JSON_TEXT, JSON_VALUES),
        "scopes": st.one_of(st.lists(st.one_of(SCOPE_LIKE, JSON_VALUES), max_size=10), JSON_VALUES),
        "collection": st.one_of(NAME_LIKE, JSON_VALUES),
        "caller": st.one_of(chars_text(JSON_CHARS, max_size=10), JSON_VALUES),
        "session": st.one_of(chars_text(JSON_CHARS, max_size=10), JSON_VALUES),
        "source": st.one_of(chars_text(JSON_CHARS, max_size=10), JSON_VALUES),
        "createdAt": st.one_of(
            st.sampled_from(["2026-13-40", "", "2026-11-30", "yesterday"]), JSON_VALUES
        ),
        "recordId": st.one_of(st.sampled_from(["mem-XYZ", ""]), JSON_VALUES),
        "workbench": st.one_of(
            st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=3), JSON_VALUES, DEEP_MCP
        ),
    },
)
# Fields an item may also carry, each wrong in some way.
IMPORT_EXTRA = {
    "docid": st.one_of(st.sampled_from(["#01234567", ""]), JSON_VALUES),
    "contentHash": st.one_of(HEX64, JSON_VALUES),
    "supersedes": st.one_of(
        st.lists(chars_text(JSON_CHARS, max_size=30), max_size=2),
        chars_text(JSON_CHARS, max_size=30),
        JSON_VALUES,
    ),
    "supersededBy": JSON_VALUES,
    "uri": JSON_VALUES,
    "unknown": JSON_VALUES,
}


def jsonl_lines() -> st.SearchStrategy[bytes]:
    """A JSONL file: mostly good items (one bad line refuses the whole file), items with a
    field or two fuzzed or added, any JSON, broken lines."""

    def encode(item: Any, ascii_only: bool) -> bytes:
        return json.dumps(item, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")

    good = st.builds(
        lambda text, scopes: {"text": text, "scopes": scopes},
        st.builds(lambda a, b: f"imported {a} {b}", WORD, WORD),
        GOOD_SCOPES,
    )
    extra = st.sampled_from(sorted(IMPORT_EXTRA)).flatmap(
        lambda name: st.builds(
            lambda item, value: {**item, name: value}, IMPORT_ITEM, IMPORT_EXTRA[name]
        )
    )
    line = mostly(
        st.builds(encode, good, st.just(True)),
        st.one_of(
            st.builds(encode, IMPORT_ITEM, st.booleans()),
            st.builds(encode, extra, st.booleans()),
            st.builds(encode, JSON_VALUES, st.booleans()),
            st.sampled_from([b"", b"   ", b"{", b"\xff", b"NaN", b"1e999"]),
            DEEP_TEXT,
        ),
    )
    return st.builds(lambda lines: b"\n".join(lines), st.lists(line, min_size=1, max_size=6))


@fuzz(80)
@given(data=st.data())
def test_import_through_the_facade(seeded: Seeded, data: st.DataObject) -> None:
    fmt = data.draw(st.sampled_from(["jsonl", "jsonl", "jsonl", "ob1", "mem0", None]), "format")
    content = data.draw(
        jsonl_lines() if fmt in ("jsonl", None) else json_document(ANY_JSON), "file"
    )
    path = seeded.home.parent / f"import.{'jsonl' if fmt in ('jsonl', None) else 'json'}"
    path.write_bytes(content)
    request = ImportRequest(
        path,
        fmt=fmt,
        scopes=data.draw(mostly(maybe(GOOD_SCOPES), st.lists(SCOPE_LIKE, max_size=3)), "scopes"),
        collection=data.draw(
            mostly(st.sampled_from([None, "memory", "work"]), NAME_LIKE), "collection"
        ),
        dry_run=data.draw(st.booleans(), "dry_run"),
        caller="import:fuzz",
    )
    with refused_or_valid(seeded, "import") as out:
        out.append(seeded.service.interop.import_file(request).to_json())
    if out:
        report = out[0]
        assert report["items"] == report["added"] + report["skipped"] + report["proposed"]


# -- the CLI in this process ------------------------------------------------------------------


@dataclass
class Ran:
    argv: list[str]
    code: int | None
    stdout: str
    stderr: str
    crash: str | None  # the traceback a real process would have printed


def cli_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GNO_TUI_")}
    env.update(
        GNO_TUI_MODEL="/nonexistent/gno-tui-test-model",
        GNO_TUI_CALLER=CALLER,
        GNO_TUI_SESSION=SESSION,
    )
    return env


def run_main(home: Path, argv: list[str], stdin: bytes = b"") -> Ran:
    """`gno_tui.cli.main` with the standard streams a process has in a UTF-8 locale: text over
    bytes, strict UTF-8 (so a lone surrogate that a process could not print fails here too)."""
    out, err = io.BytesIO(), io.BytesIO()
    wrappers = (
        io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8", errors="strict"),
        io.TextIOWrapper(out, encoding="utf-8", errors="strict", write_through=True),
        io.TextIOWrapper(err, encoding="utf-8", errors="strict", write_through=True),
    )
    streams = (sys.stdin, sys.stdout, sys.stderr)
    environment = dict(os.environ)
    sys.stdin, sys.stdout, sys.stderr = wrappers
    os.environ.clear()
    os.environ.update(cli_env())
    crash = None
    code: int | None = None
    try:
        code = cli_main(["--home", str(home), *argv])
    except SystemExit as exit_:  # --help and --version exit from argparse, as a process does
        code = 0 if exit_.code is None else exit_.code if isinstance(exit_.code, int) else 1
        if code != 0:
            crash = traceback.format_exc()
    except BaseException:  # noqa: BLE001 - what escapes main is a traceback in a process
        crash = traceback.format_exc()
    finally:
        sys.stdin, sys.stdout, sys.stderr = streams
        os.environ.clear()
        os.environ.update(environment)
    for wrapper in wrappers:
        with contextlib.suppress(ValueError):  # a write failed half-way: the rest is kept
            wrapper.flush()
        wrapper.detach()
    return Ran(
        argv,
        code,
        out.getvalue().decode("utf-8", "replace"),
        err.getvalue().decode("utf-8", "replace"),
        crash,
    )


ERROR_LINE = re.compile(r"^gno-tui: (MEMORY_[A-Z_]+): (.+)$", re.DOTALL)
JSON_RESULT_KINDS = {"remember": "remember", "recall": "recall"}


def check_ran(ran: Ran, before: dict[str, Any], after: dict[str, Any]) -> None:
    what = f"gno-tui {ran.argv!r:.300}"
    assert ran.crash is None, f"{what} raised out of main (a traceback):\n{ran.crash[-2000:]}"
    assert "Traceback" not in ran.stdout + ran.stderr, f"{what}: a traceback\n{ran.stderr[-2000:]}"
    wants_json = "--json" in ran.argv
    if ran.code == 0:
        tally("exit 0")
        if ran.stdout.startswith("usage: "):
            return  # -h, --help or an abbreviation of it: the help, which is text
        if wants_json and ran.argv[0] in JSON_RESULT_KINDS and ran.stdout.strip():
            doc = json.loads(ran.stdout)
            kind = (
                "ob1_recall"
                if "ob1" in ran.argv and ran.argv[0] == "recall"
                else JSON_RESULT_KINDS[ran.argv[0]]
            )
            if not (kind == "ob1_recall" and "--format" not in ran.argv):
                valid(kind, doc, what)
        return
    if wants_json:
        try:
            doc = json.loads(ran.stdout)
        except ValueError:
            raise AssertionError(
                f"{what}: exit {ran.code} without a JSON error: "
                f"{ran.stdout[:300]!r} {ran.stderr[-500:]!r}"
            ) from None
        assert isinstance(doc, dict) and set(doc) == {"error"}, f"{what}: {doc!r:.300}"
        assert set(doc["error"]) == {"code", "message"}, f"{what}: {doc!r:.300}"
        code, message = doc["error"]["code"], doc["error"]["message"]
    else:
        # Warnings may come first; the error is the last record, and it is one line.
        start = ran.stderr.rfind("gno-tui: MEMORY_")
        record = ran.stderr[start:].rstrip("\n") if start >= 0 else ""
        match = ERROR_LINE.match(record)
        assert match, f"{what}: exit {ran.code} without an error line: {ran.stderr[-500:]!r}"
        assert "\n" not in record, f"{what}: the error is not one line: {record[:300]!r}"
        controls = sorted({c for c in record if ord(c) < 32 or 0x7F <= ord(c) < 0xA0})
        assert not controls, f"{what}: the error line holds control characters {controls!r}"
        code, message = match.group(1), match.group(2)
    assert_coded(code, message, what)
    assert ran.code == exit_code_for(code), f"{what}: {code} exited {ran.code}"
    assert_unchanged(before, after, f"{what} ({code})")


def flag(name: str, values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    return st.one_of(st.just([]), st.builds(lambda v: [name, v], values))


def scope_flags(values: st.SearchStrategy[str]) -> st.SearchStrategy[list[str]]:
    return st.lists(values, max_size=9).map(
        lambda scopes: [a for s in scopes for a in ("--scope", s)]
    )


def joined(parts: dict[str, list[str]], order: list[str]) -> list[str]:
    return [arg for name in order for arg in parts.get(name, [])]


def argv_remember(seeded: Seeded, receipt_file: Path) -> st.SearchStrategy[tuple[list[str], bytes]]:
    """`remember` argv, good but for a part or two, and the bytes that are both the receipt
    file and stdin (for TEXT `-` or `--receipt -`)."""
    fact = seeded.fact
    refs = st.sampled_from([fact["uri"], fact["recordId"], fact["docid"]])
    good = {
        "text": st.one_of(st.builds(lambda t: [t], GOOD_TEXT), st.just(["-"])),
        "scopes": GOOD_SCOPES.map(lambda scopes: [a for s in scopes for a in ("--scope", s)]),
        "decision": st.one_of(
            st.sampled_from([[], ["--add"], ["--decision", "add"], ["--decision", "propose"]]),
            st.builds(
                lambda ref: ["--supersede", ref, "--predecessor-hash", fact["contentHash"]], refs
            ),
            st.builds(
                lambda ref: [
                    "--decision",
                    "supersede",
                    "--predecessor",
                    ref,
                    "--predecessor-hash",
                    fact["contentHash"],
                ],
                refs,
            ),
        ),
        "source": st.sampled_from([[], ["--source", "the chat of monday"]]),
        "derived": st.sampled_from([[], ["--derived-from", "https://example.com/chat/1"]]),
        "collection": st.sampled_from([[], ["--collection", "memory"], ["--collection", "work"]]),
        "identity": st.sampled_from([[], ["--caller", "cli:fuzz", "--session", "s1"]]),
        "receipt": st.sampled_from([[], ["--receipt", str(receipt_file)], ["--receipt", "-"]]),
        "json": st.sampled_from([["--json"], ["--json"], []]),
    }
    uris = st.one_of(refs, ARGV_TEXT)
    bad = {
        "text": st.one_of(st.builds(lambda t: [t], ARGV_TEXT), st.just([])),
        "scopes": scope_flags(st.one_of(SCOPE_LIKE, chars_text(ARGV_CHARS, max_size=8))),
        "decision": st.tuples(
            st.sampled_from([[], ["--add"], ["--decision", "supersede"], ["--decision", "maybe"]]),
            flag("--supersede", uris),
            flag("--predecessor", uris),
            flag("--predecessor-hash", st.one_of(HEX64, chars_text(ARGV_CHARS, max_size=8))),
        ).map(lambda parts: [a for part in parts for a in part]),
        "source": flag("--source", ARGV_TEXT),
        "derived": flag("--derived-from", st.one_of(st.just(fact["uri"]), ARGV_TEXT)),
        "collection": flag("--collection", NAME_LIKE),
        "identity": st.tuples(
            flag("--caller", st.one_of(st.just(""), chars_text(ARGV_CHARS, max_size=8))),
            flag("--session", st.one_of(st.just(""), chars_text(ARGV_CHARS, max_size=8))),
        ).map(lambda parts: [*parts[0], *parts[1]]),
        "receipt": st.just(["--receipt", "/nonexistent/r.json"]),
        "json": st.just(["--json"]),
    }
    order = list(good)
    good_input = st.one_of(
        st.just(json.dumps(seeded.receipt).encode()),
        st.just(json.dumps(seeded.recall).encode()),
        st.builds(lambda t: t.encode(), GOOD_TEXT),
    )
    bad_input = st.one_of(
        st.builds(lambda r: json.dumps(r).encode(), mutated_receipts(seeded.receipt)),
        json_document(ANY_JSON),
        st.builds(lambda t: t.encode("utf-8", "surrogateescape"), ARGV_TEXT),
        st.binary(max_size=20),
    )
    return st.builds(
        lambda parts, stdin: (["remember", *joined(parts, order)], stdin),
        few_off(good, bad),
        mostly(good_input, bad_input),
    )


def argv_recall() -> st.SearchStrategy[list[str]]:
    good = {
        "query": GOOD_QUERY.map(lambda q: [q]),
        "scopes": GOOD_SCOPES.map(lambda scopes: [a for s in scopes for a in ("--scope", s)]),
        "max_facts": st.sampled_from([[], ["--max-facts", "3"], ["--max-facts", "256"]]),
        "max_tokens": st.sampled_from([[], ["--max-tokens", "40"], ["--max-tokens", "65536"]]),
        "egress": st.sampled_from([[], ["--egress", "lan"], ["--egress", "remote"]]),
        "collection": st.sampled_from([[], ["--collection", "work"]]),
        "format": st.sampled_from([[], ["--format", "gno"], ["--format", "ob1"]]),
        "json": st.sampled_from([["--json"], ["--json"], []]),
    }
    bad = {
        "query": st.one_of(st.builds(lambda t: [t], ARGV_TEXT), st.just([])),
        "scopes": scope_flags(SCOPE_LIKE),
        "max_facts": flag("--max-facts", BUDGET_LIKE),
        "max_tokens": flag("--max-tokens", BUDGET_LIKE),
        "egress": flag("--egress", POLICY_LIKE),
        "collection": flag("--collection", NAME_LIKE),
        "format": flag("--format", st.sampled_from(["xml", ""])),
        "json": st.just(["--json"]),
    }
    order = list(good)
    return few_off(good, bad).map(lambda parts: ["recall", *joined(parts, order)])


def argv_collection(home: Path) -> st.SearchStrategy[list[str]]:
    folders = chars_text(ARGV_CHARS, min_size=1, max_size=10).map(
        lambda f: str(home.parent / "roots" / f.replace("/", "_").replace("..", "_"))
    )
    add = st.builds(
        lambda name, path, policy, js: ["collection", "add", name, *path, *policy, *js],
        NAME_LIKE,
        flag("--path", folders),
        flag("--policy", POLICY_LIKE),
        st.sampled_from([["--json"], []]),
    )
    set_policy = st.builds(
        lambda name, policy, js: ["collection", "set-policy", name, policy, *js],
        NAME_LIKE,
        POLICY_LIKE,
        st.sampled_from([["--json"], []]),
    )
    other = st.sampled_from(
        [["collection"], ["collection", "list", "--json"], ["collection", "drop", "x", "--json"]]
    )
    return st.one_of(add, set_policy, other)


def argv_memory(seeded: Seeded) -> st.SearchStrategy[tuple[list[str], bytes]]:
    def encode(request: Any, ascii_only: bool) -> bytes:
        return json.dumps(request, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")

    def shaped(verb: str) -> st.SearchStrategy[Any]:
        good = (
            KEYED_REMEMBER
            if verb == "remember"
            else keyed_query(seeded.cursor, search=verb == "search")
        )
        return mostly(st.builds(encode, good, st.booleans()), json_document(ANY_JSON))

    keyed = st.sampled_from(["remember", "recall", "search"]).flatmap(
        lambda verb: st.builds(
            lambda ns, js, stdin: (["memory", verb, *ns, *js], stdin),
            mostly(
                st.sampled_from([[], ["--namespace", "default"], ["--namespace", "Team-A"]]),
                flag("--namespace", st.one_of(st.just(""), chars_text(ARGV_CHARS, max_size=10))),
            ),
            st.sampled_from([["--json"], ["--json"], []]),
            shaped(verb),
        )
    )
    lookup = st.builds(
        lambda v, key, js: (["memory", v, key, *js], b""),
        st.sampled_from(["get", "history"]),
        st.one_of(
            st.sampled_from(["pref/0", "nope", "k" * 300]),
            chars_text(ARGV_CHARS, min_size=1, max_size=12),
        ),
        st.sampled_from([["--json"], []]),
    )
    return st.one_of(keyed, keyed, lookup, st.just((["memory", "--json"], b"")))


def argv_import(home: Path) -> st.SearchStrategy[tuple[list[str], bytes]]:
    target = home.parent / "cli-import.jsonl"
    return st.builds(
        lambda fmt, scopes, collection, dry, js, content: (
            [
                "import",
                str(target),
                *fmt,
                *[a for s in scopes for a in ("--scope", s)],
                *collection,
                *dry,
                *js,
            ],
            content,
        ),
        st.sampled_from(
            [
                [],
                ["--format", "jsonl"],
                ["--format", "mem0"],
                ["--format", "ob1"],
                ["--format", "csv"],
            ]
        ),
        st.lists(SCOPE_LIKE, max_size=3),
        flag("--collection", NAME_LIKE),
        st.sampled_from([[], ["--dry-run"]]),
        st.sampled_from([["--json"], ["--json"], []]),
        st.one_of(jsonl_lines(), json_document(ANY_JSON)),
    )


@fuzz(150)
@given(data=st.data())
def test_cli_commands_in_process(seeded: Seeded, data: st.DataObject) -> None:
    """The CLI's own code (argument parsing, receipt and request reading, output, exit codes)
    on fuzzed argv, stdin and files; the store is the seeded one."""
    receipt_file = seeded.home.parent / "receipt.json"
    command = data.draw(
        st.sampled_from(["remember", "recall", "collection", "memory", "import", "garbage"]),
        "command",
    )
    stdin = b""
    if command == "remember":
        argv, stdin = data.draw(argv_remember(seeded, receipt_file), "argv")
        receipt_file.write_bytes(stdin)
    elif command == "recall":
        argv = data.draw(argv_recall(), "argv")
    elif command == "collection":
        argv = data.draw(argv_collection(seeded.home), "argv")
    elif command == "memory":
        argv, stdin = data.draw(argv_memory(seeded), "argv")
    elif command == "import":
        argv, content = data.draw(argv_import(seeded.home), "argv")
        Path(argv[1]).write_bytes(content)
    else:  # options after a command that opens no workbench and serves nothing
        head = data.draw(
            st.sampled_from(
                [["recall"], ["remember"], ["collection", "list"], ["reindex"], ["memory", "get"]]
            ),
            "head",
        )
        argv = [
            *head,
            *data.draw(
                st.lists(
                    st.one_of(
                        st.sampled_from(
                            ["--json", "--scope", "--add", "--max-facts", "-", "--", "--help"]
                        ),
                        chars_text(ARGV_CHARS, max_size=10),
                    ),
                    max_size=6,
                ),
                "rest",
            ),
        ]
    note(f"argv={argv!r} stdin={stdin[:200]!r}")
    before = store_state(seeded.home)
    ran = run_main(seeded.home, argv, stdin)
    check_ran(ran, before, store_state(seeded.home))
    gc.collect()  # each main() opened the store: let its connections go


# -- MCP tools, through the server's code -----------------------------------------------------


def tool_arguments(seeded: Seeded, tool: str) -> st.SearchStrategy[dict[str, Any]]:
    """A tool's arguments: well-formed but for a field or two, sometimes with an argument the
    tool does not take (identity included), sometimes any JSON object."""
    fact = seeded.fact
    shaped: st.SearchStrategy[dict[str, Any]]
    if tool == "gno_remember":
        shaped = few_off(
            {
                "text": GOOD_TEXT,
                "scopes": GOOD_SCOPES,
                "decision": decisions(fact),
                "collection": st.sampled_from([OMIT, "memory", "work"]),
                "source": st.one_of(st.just(OMIT), PLAIN),
                "receipt": st.sampled_from([OMIT, seeded.receipt]),
                "derivedFrom": st.sampled_from([OMIT, "https://example.com/chat/1"]),
            },
            {
                "text": st.one_of(JSON_TEXT, ANY_JSON),
                "scopes": st.one_of(SCOPE_LISTS, ANY_JSON),
                "decision": st.tuples(ANY_JSON, ANY_JSON, st.one_of(HEX64, ANY_JSON)),
                "collection": st.one_of(NAME_LIKE, ANY_JSON),
                "source": st.one_of(JSON_TEXT, ANY_JSON),
                "receipt": mutated_receipts(seeded.receipt),
                "derivedFrom": st.one_of(st.just(fact["uri"]), JSON_TEXT, ANY_JSON),
            },
        ).map(_spread_decision)
    elif tool == "gno_recall":
        shaped = few_off(
            {
                "query": GOOD_QUERY,
                "scopes": GOOD_SCOPES,
                "maxFacts": st.sampled_from([OMIT, 1, 8, 256]),
                "maxTokens": st.sampled_from([OMIT, 1, 512, 65536]),
                "collection": st.sampled_from([OMIT, "memory", "work"]),
                "egress": st.sampled_from([OMIT, "local_only", "lan", "remote"]),
            },
            {
                "query": st.one_of(JSON_TEXT, ANY_JSON),
                "scopes": st.one_of(SCOPE_LISTS, ANY_JSON),
                "maxFacts": st.one_of(
                    st.integers(-3, 70000), st.sampled_from([257, 1.0, 2.5, True]), ANY_JSON
                ),
                "maxTokens": st.one_of(
                    st.integers(-3, 70000), st.sampled_from([65537, 1.0, True]), ANY_JSON
                ),
                "collection": st.one_of(NAME_LIKE, ANY_JSON),
                "egress": st.one_of(POLICY_LIKE, ANY_JSON),
            },
        )
    elif tool == "memory_remember":
        shaped = KEYED_REMEMBER
    else:
        shaped = keyed_query(seeded.cursor, search=tool == "memory_search")
    extra = st.builds(
        lambda arguments, name, value: {**arguments, name: value},
        shaped,
        st.one_of(
            st.sampled_from(["caller", "session", "scope", "Text"]),
            chars_text(JSON_CHARS, max_size=8),
        ),
        ANY_JSON,
    )
    anything = st.dictionaries(chars_text(JSON_CHARS, max_size=12), ANY_JSON, max_size=4)
    return st.one_of(shaped, shaped, shaped, shaped, extra, anything)


def _spread_decision(arguments: dict[str, Any]) -> dict[str, Any]:
    """The drawn (decision, predecessor, predecessorHash) as three arguments (None: left out)."""
    decision, predecessor, predecessor_hash = arguments.pop("decision")
    for name, value in (
        ("decision", decision),
        ("predecessor", predecessor),
        ("predecessorHash", predecessor_hash),
    ):
        if value is not None:
            arguments[name] = value
    return arguments


ToolCaller = Callable[[str, dict[str, Any]], types.CallToolResult]
BOUND_TO = ["user:bob"]  # the scope-bound server's one scope; the seeded Alice fact is not in it


def json_safe(value: Any) -> Any:
    """The value with lone surrogates replaced: what the SDK's client agrees to send (it refuses
    the rest; the raw-wire test below sends them)."""
    if isinstance(value, str):
        return "".join("\ufffd" if 0xD800 <= ord(c) <= 0xDFFF else c for c in value)
    if isinstance(value, list):
        return [json_safe(item) for item in value]
    if isinstance(value, dict):
        return {json_safe(k): json_safe(v) for k, v in value.items()}
    return value


@contextmanager
def in_process_server(
    service: MemoryService, *, enable_write: bool, allowed_scopes: list[str] | None = None
) -> Iterator[ToolCaller]:
    """A GnoMcp server and an official-SDK client over the in-memory transport, in a thread
    with its own event loop; yields a blocking call_tool."""
    app = GnoMcp(
        service,
        enable_write=enable_write,
        session_id="mcp-fuzz00000000",
        allowed_scopes=allowed_scopes,
    )
    client = Client(app.server, client_info=types.Implementation(name="fuzz-agent", version="1"))
    with (
        anyio.from_thread.start_blocking_portal() as portal,
        portal.wrap_async_context_manager(client) as connected,
    ):

        def call(tool: str, arguments: dict[str, Any]) -> types.CallToolResult:
            return portal.call(connected.call_tool, tool, arguments)

        yield call


def check_tool_result(
    tool: str,
    result: types.CallToolResult,
    before: dict[str, Any],
    after: dict[str, Any],
    what: str,
    *,
    enable_write: bool,
    bound: list[str] | None = None,
) -> None:
    """Success: the structured result fits the output schema the tool declares (for this
    mode) and the text block repeats it. Error: coded, the store unchanged. On a propose-only
    server no fact is ever written; on a bound one nothing of another scope is shown or
    written."""
    text = "".join(getattr(block, "text", "") for block in result.content)
    assert "Traceback" not in text, f"{what}: a traceback in the tool result"
    document = result.structured_content
    assert isinstance(document, dict), f"{what}: no structured content: {text[:300]!r}"
    if result.is_error:
        assert set(document) == {"error"} and set(document["error"]) == {"code", "message"}, (
            f"{what}: {document!r:.300}"
        )
        assert_coded(document["error"]["code"], document["error"]["message"], what)
        assert_unchanged(before, after, f"{what} ({document['error']['code']})")
    else:
        tally("success")
        schema = TOOLS_BY_NAME[tool].listing(enable_write=enable_write).output_schema
        assert schema is not None
        errors = [e.message for e in validator_for(schema)(schema).iter_errors(document)]
        assert not errors, f"{what}: the result breaks the tool's output schema: {errors[:3]}"
        assert json.loads(text) == document, f"{what}: the text block is not the structured result"
    if not enable_write:
        # A propose-only agent writes no fact, whatever it calls: its writes wait for a person.
        for part in ("files", "facts", "fact_scopes"):
            assert before[part] == after[part], f"{what}: a propose-only server wrote {part}"
    if bound is not None:
        # Nothing of another scope is shown, in a result or an error, and nothing is written
        # outside the bound scopes.
        assert SECRET not in text, f"{what}: a bound server showed a fact of another scope"
        for fact in [*document.get("facts", []), *document.get("candidates", [])]:
            assert set(fact["scopes"]) & set(bound), f"{what}: shown out of scope: {fact}"
        record = document.get("record")
        if document.get("outcome") in ("added", "superseded") and record:
            assert set(record["scopes"]) <= set(bound), f"{what}: written out of scope: {record}"


MODES = ("propose-only", "write-enabled", "bound")


@pytest.fixture
def servers(seeded: Seeded) -> Iterator[dict[str, ToolCaller]]:
    """A propose-only, a write-enabled and a write-enabled server bound to BOUND_TO, over the
    seeded store, one connection each for the whole test."""
    service = seeded.service
    with (
        in_process_server(service, enable_write=False) as propose_only,
        in_process_server(service, enable_write=True) as write_enabled,
        in_process_server(service, enable_write=True, allowed_scopes=BOUND_TO) as bound,
    ):
        yield {"propose-only": propose_only, "write-enabled": write_enabled, "bound": bound}


@fuzz(250)
@given(data=st.data())
def test_mcp_tool_arguments_in_process(
    seeded: Seeded, servers: dict[str, ToolCaller], data: st.DataObject
) -> None:
    """Every tool of TOOLS, with fuzzed arguments (the SDK client's JSON: no lone surrogates)."""
    mode = data.draw(st.sampled_from(MODES), "server")
    tool = data.draw(st.sampled_from([t.name for t in TOOLS]), "tool")
    arguments = json_safe(data.draw(tool_arguments(seeded, tool), "arguments"))
    before = store_state(seeded.home)
    result = servers[mode](tool, arguments)
    check_tool_result(
        tool,
        result,
        before,
        store_state(seeded.home),
        f"{tool} on a {mode} server",
        enable_write=mode != "propose-only",
        bound=BOUND_TO if mode == "bound" else None,
    )


# A server answers a tool call in milliseconds; one that has not answered after this long never
# will (a hang guard, not a timing assertion; short, because a shrinking failure meets it often).
WIRE_TIMEOUT_S = 5
# The first answer (initialize) waits for the server process to start too: Python's imports
# alone took over 5 s on a loaded CI machine. Also a hang guard only.
START_TIMEOUT_S = 120


def nesting(value: Any) -> int:
    """How deep arrays and objects nest in `value` (a scalar: 0)."""
    if isinstance(value, dict):
        return 1 + max((nesting(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((nesting(v) for v in value), default=0)
    return 0


class RawServer:
    """A `gno-tui mcp` process spoken to in raw JSON-RPC lines: what the SDK's client refuses
    to send (lone surrogates as \\u escapes, NaN) reaches the server as a wire would carry it."""

    def __init__(self, home: Path, log: Path) -> None:
        self.log_path = log
        self._log = log.open("w", encoding="utf-8")
        self.process = subprocess.Popen(
            [console_script(), "--home", str(home), "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            env=cli_env(),
        )
        self.next_id = 0
        self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "fuzz-raw", "version": "1"},
            },
            timeout=START_TIMEOUT_S,
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        # ensure_ascii: a lone surrogate goes out as a \u escape; NaN goes out as NaN.
        self.process.stdin.write(json.dumps(message, ensure_ascii=True).encode() + b"\n")
        self.process.stdin.flush()

    def request(
        self, method: str, params: dict[str, Any], *, timeout: float = WIRE_TIMEOUT_S
    ) -> dict[str, Any]:
        """The answer to one request; a server that never answers fails the test (at once
        when its log says it dropped the request)."""
        self.next_id += 1
        logged = self.log_path.stat().st_size
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while True:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.05)
            if not ready:
                with self.log_path.open(encoding="utf-8", errors="replace") as log:
                    log.seek(logged)
                    news = log.read()
                assert "dropped" not in news, (
                    f"the server dropped {method} {params!r:.300} without an answer: {news!r:.500}"
                )
                assert time.monotonic() < deadline, (
                    f"no answer within {timeout} s to {method} {params!r:.300}"
                )
                continue
            line = self.process.stdout.readline()
            assert line, f"the server closed its stdout after {method} {params!r:.300}"
            message = json.loads(line)
            if message.get("id") == self.next_id:
                return dict(message)
            if message.get("id") is None and "error" in message:
                # JSON-RPC's answer to a line it cannot parse (NaN and Infinity are not JSON)
                return dict(message)

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()


@pytest.fixture
def raw_server(seeded: Seeded) -> Iterator[RawServer]:
    server = RawServer(seeded.home, seeded.home.parent / "raw-server.log")
    yield server
    server.close()


@fuzz(120)
@given(data=st.data())
def test_mcp_tool_arguments_on_the_wire(
    seeded: Seeded, raw_server: RawServer, data: st.DataObject
) -> None:
    """A real propose-only server on raw JSON-RPC: every tool, fuzzed arguments with lone
    surrogates and NaN. Each request is answered: a JSON-RPC error (a request the protocol
    layer refuses; for a line that is not JSON, NaN and Infinity included, with a null id) or
    a tool result as above. No request goes unanswered."""
    tool = data.draw(st.sampled_from([t.name for t in TOOLS]), "tool")
    arguments = data.draw(tool_arguments(seeded, tool), "arguments")
    note(f"arguments nest {nesting(arguments)} levels deep")
    before = store_state(seeded.home)
    answer = raw_server.request("tools/call", {"name": tool, "arguments": arguments})
    what = f"{tool} on the wire"
    if "error" in answer:
        error = answer["error"]
        assert isinstance(error.get("code"), int) and error.get("message"), f"{what}: {answer}"
        assert "Traceback" not in json.dumps(answer), f"{what}: a traceback in {answer}"
        assert_unchanged(before, store_state(seeded.home), f"{what} (JSON-RPC {error['code']})")
        return
    result = types.CallToolResult.model_validate(answer["result"])
    check_tool_result(tool, result, before, store_state(seeded.home), what, enable_write=False)


# Inputs the fuzzing found, kept as fixed cases so that they are tried on every run (a
# random run may not draw them again).
FOUND_ON_THE_WIRE = {
    "a lone surrogate and Infinity": (
        "gno_remember",
        {"text": "a\ud800", "scopes": ["s"], "x": math.inf},
    ),
    "a lone surrogate and NaN": (
        "gno_recall",
        {"query": "a\ud800", "scopes": ["s"], "maxFacts": math.nan},
    ),
    "a surrogate key holding Infinity": (
        "memory_recall",
        {"cursor": {"": math.inf, "\ud800": None}},
    ),
    "a surrogate and a big number": (
        "gno_remember",
        {"text": "a\ud800", "scopes": ["s"], "x": -7.04e16},
    ),
    "NaN alone": ("gno_recall", {"query": "tea", "scopes": ["s"], "maxFacts": math.nan}),
    "150 levels deep": (
        "memory_remember",
        {"memory": {"content": "t", "metadata": nested(150, "dict")}},
    ),
}


@pytest.mark.parametrize("case", sorted(FOUND_ON_THE_WIRE))
def test_inputs_found_on_the_wire_are_answered(
    seeded: Seeded, raw_server: RawServer, case: str
) -> None:
    tool, arguments = FOUND_ON_THE_WIRE[case]
    before = store_state(seeded.home)
    answer = raw_server.request("tools/call", {"name": tool, "arguments": arguments})
    if "error" in answer:  # a JSON-RPC error (a line that is not JSON) is an answer too
        assert isinstance(answer["error"].get("code"), int), f"{case}: {answer}"
        assert_unchanged(before, store_state(seeded.home), case)
        return
    result = types.CallToolResult.model_validate(answer["result"])
    check_tool_result(tool, result, before, store_state(seeded.home), case, enable_write=False)


FOUND_ON_THE_CLI: dict[str, tuple[list[str], bytes]] = {
    "a budget in superscript digits": (
        ["recall", "tea", "--scope", "s", "--max-tokens", "²", "--json"],
        b"",
    ),
    "a budget in Arabic-Indic digits": (
        ["recall", "tea", "--scope", "s", "--max-facts", "٣", "--json"],
        b"",
    ),
    "an unknown argument that is a newline": (["collection", "list", "\n"], b""),
    "an unknown argument with a terminal escape": (["collection", "list", "\x1b[31mX"], b""),
    "an unknown argument that is not UTF-8": (["recall", "-", "\udc80", "--json"], b""),
    "a root path that is not UTF-8": (
        ["collection", "add", "nope", "--path", "/tmp/gno-fuzz-\udcff", "--json"],
        b"",
    ),
    "stdin that is not UTF-8": (["remember", "-", "--scope", "s", "--add", "--json"], b"\x80"),
    "a receipt on stdin that is not UTF-8": (
        ["remember", "a b", "--scope", "s", "--receipt", "-", "--json"],
        b"\xff",
    ),
    "a key that is not UTF-8": (["memory", "get", "\udc80", "--json"], b""),
}


@pytest.mark.parametrize("case", sorted(FOUND_ON_THE_CLI))
def test_inputs_found_on_the_cli_are_answered_cleanly(seeded: Seeded, case: str) -> None:
    argv, stdin = FOUND_ON_THE_CLI[case]
    before = store_state(seeded.home)
    ran = run_main(seeded.home, argv, stdin)
    check_ran(ran, before, store_state(seeded.home))


# -- the real console script and a real server (slow) -----------------------------------------


def console_script() -> str:
    return str(Path(sys.executable).parent / "gno-tui")


ARGV_BYTES = st.one_of(
    st.binary(min_size=1, max_size=20).map(lambda b: b.replace(b"\x00", b"0")),  # argv has no NUL
    st.builds(
        lambda t: t.encode("utf-8", "surrogateescape"),
        chars_text(ARGV_CHARS, min_size=1, max_size=20),
    ),
)


@pytest.mark.slow
@fuzz(25)
@given(data=st.data())
def test_console_script_on_raw_bytes(seeded: Seeded, data: st.DataObject) -> None:
    """The installed console script on argv bytes (not necessarily UTF-8) and stdin bytes, in
    a strict UTF-8 locale's streams, as a shell would start it."""
    value = data.draw(ARGV_BYTES, "value")
    stdin = data.draw(st.one_of(st.binary(max_size=30), json_document(ANY_JSON)), "stdin")
    shape = data.draw(
        st.sampled_from(
            [
                [b"remember", b"VALUE", b"--scope", b"s", b"--add", b"--json"],
                [b"remember", b"-", b"--scope", b"VALUE", b"--add", b"--json"],
                [
                    b"remember",
                    b"x y",
                    b"--supersede",
                    b"VALUE",
                    b"--predecessor-hash",
                    b"00",
                    b"--json",
                ],
                [b"remember", b"x y", b"--scope", b"s", b"--add", b"--receipt", b"-", b"--json"],
                [b"recall", b"VALUE", b"--scope", b"s", b"--json"],
                [b"recall", b"tea", b"--scope", b"s", b"--max-facts", b"VALUE", b"--json"],
                [b"recall", b"tea", b"--scope", b"s", b"--egress", b"VALUE"],
                [b"collection", b"add", b"VALUE", b"--json"],
                [b"collection", b"set-policy", b"work", b"VALUE", b"--json"],
                [b"memory", b"get", b"VALUE", b"--json"],
                [b"memory", b"remember", b"--namespace", b"VALUE", b"--json"],
                [b"memory", b"search", b"--json"],
                [b"remember", b"VALUE", b"--scope", b"s", b"--add"],
            ]
        ),
        "shape",
    )
    args = [value if part == b"VALUE" else part for part in shape]
    env = {k.encode(): v.encode() for k, v in cli_env().items()}
    env[b"LC_ALL"] = b"C.UTF-8"  # a UTF-8 locale: strict UTF-8 streams
    before = store_state(seeded.home)
    done = subprocess.run(
        [console_script().encode(), b"--home", str(seeded.home).encode(), *args],
        input=stdin,
        capture_output=True,
        env=env,
        timeout=60,
        check=False,
    )
    try:
        done.stdout.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AssertionError(f"{args!r}: stdout is not UTF-8: {done.stdout[:300]!r}") from exc
    argv = [part.decode("utf-8", "surrogateescape") for part in args]
    ran = Ran(
        argv,
        done.returncode,
        done.stdout.decode("utf-8", "replace"),
        done.stderr.decode("utf-8", "replace"),
        None,
    )
    note(
        f"argv={args!r} stdin={stdin[:100]!r} exit={done.returncode} "
        f"stdout={ran.stdout[:300]!r} stderr={ran.stderr[-600:]!r}"
    )
    check_ran(ran, before, store_state(seeded.home))
