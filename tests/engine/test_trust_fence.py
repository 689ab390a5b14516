"""The replay fence compares normalised forms, not only contentHashes (docs/contract.md
section 5): a recalled span re-sent with its receipt is fenced whatever its case, invisible
characters, look-alike letters or punctuation at the ends; and the near misses a person may
want to look at (close, but not the same) are listed. Plus remember's text content rules and
the keyed API's input limits (nesting depth, uint64 fields)."""

from __future__ import annotations

import pytest

from engine.contract.errors import ERROR_CODES, MemoryFailure
from engine.facade.service import MemoryService
from engine.keyed.requests import parse_request_json, validate_request
from engine.memory.receipts import fence_exposure

FACT = "Alice drinks green tea at the café"

# Every one of these is the fact above, as a person reads it.
REPLAYS = {
    "double spaces": "Alice  drinks green  tea at the café",
    "nbsp": "Alice\u00a0drinks green tea at the café",
    "nfd": "Alice drinks green tea at the cafe\u0301",
    "newline and tab": "Alice drinks\ngreen\ttea at the café",
    "case": "ALICE DRINKS GREEN TEA AT THE CAFÉ",
    "final period": "Alice drinks green tea at the café.",
    "zero-width space": "Alice drinks gre\u200ben tea at the café",
    "fullwidth": "Ａｌｉｃｅ drinks green tea at the café",
    "cyrillic a": "Alice drinks green te\u0430 at the café",
    "added quotes": '"Alice drinks green tea at the café"',
    "soft hyphen": "Alice drinks green tea at the ca\u00adfé",
    "greek epsilon": "Alice drinks gr\u03b5en tea at the café",
    "bom and bidi marks": "\ufeffAlice drinks green tea\u200e at the café\u200f",
    "curly quotes": "“Alice drinks green tea at the café”",
    "cyrillic capital": "\u0410lice drinks green tea at the café",
    "greek capital": "\u0391lice drinks green tea at the café",
}


def _fail(call, code: str) -> MemoryFailure:
    with pytest.raises(MemoryFailure) as caught:
        call()
    assert caught.value.code == code, caught.value
    return caught.value


@pytest.mark.parametrize("variant", sorted(REPLAYS))
def test_a_replayed_span_is_fenced_whatever_its_surface_form(client, probe, variant):
    client.add(FACT, "user:alice")
    recalled = client.recall("alice green tea cafe", ["user:alice"])
    assert len(recalled["facts"]) == 1
    before = probe.state()
    failure = _fail(
        lambda: client.remember(REPLAYS[variant], ["elsewhere"], receipt=recalled),
        "MEMORY_FENCED_REPLAY",
    )
    assert "supersede" in failure.message
    probe.assert_nothing_written(before)


@pytest.mark.parametrize(
    "text",
    [
        "Alice drinks black tea at the café",
        "Alice drinks green tea at the cafe",  # another word (no accent): a near miss
        "Alice, drinks green tea at the café",  # punctuation inside is kept
        "Bob drinks green tea at the café",
    ],
)
def test_a_different_text_with_the_receipt_is_not_fenced(client, text):
    client.add(FACT, "user:alice")
    recalled = client.recall("alice green tea cafe", ["user:alice"])
    assert client.remember(text, ["user:alice"], receipt=recalled)["outcome"] == "added"


def test_the_fence_form_rules():
    from engine.contract.normalize import fence_form

    assert fence_form(" «Hello,  Wörld!» ") == "hello, wörld"
    assert fence_form("Ｈｅｌｌｏ") == "hello"
    assert fence_form("h\u200be\u00adl\u2060l\ufeffo") == "hello"
    assert fence_form("\u0421\u0410\u0422") == "cat"  # Cyrillic capitals
    assert fence_form("\u03bf\u03c1") == "op"  # Greek small omicron, rho
    assert fence_form("it’s") == fence_form("it's")
    assert fence_form("...") == ""


def test_near_misses_are_close_receipted_spans_that_are_not_fenced(client, engine):
    from engine.memory.receipts import fence_near_misses

    fact = client.add(FACT, "user:alice")["record"]
    client.add("Bob likes coffee", "user:alice")
    client.recall("alice green tea cafe", ["user:alice"], caller="agent:one")
    # Without an accent: a different text, so not fenced, but close.
    misses = fence_near_misses(engine, "alice drinks green tea at the cafe")
    assert [m.record_id for m in misses] == [fact["recordId"]]
    assert misses[0].text == FACT
    assert 90 <= misses[0].similarity < 100
    assert misses[0].receipts == 1 and misses[0].latest_caller == "agent:one"
    # A fenced text is not a near miss; nor is something unrelated or never recalled.
    assert fence_near_misses(engine, FACT.upper() + ".") == []
    assert fence_near_misses(engine, "Bob likes coffee!") == []
    assert fence_near_misses(engine, "Carol lives in Paris") == []
    # Through the façade, limited to one presented receipt.
    service = MemoryService(engine)
    recalled = client.recall("bob coffee", ["user:alice"], max_facts=1)
    assert service.receipts.near_misses("Bob likes cofee", receipt=recalled["receipt"])
    assert not service.receipts.near_misses(FACT.replace("é", "e"), receipt=recalled)


def test_exposure_and_would_fence_use_the_fence_form(client, engine):
    client.add(FACT, "user:alice")
    recalled = client.recall("alice green tea cafe", ["user:alice"])
    assert fence_exposure(engine, FACT.upper() + ".").receipts == 1
    service = MemoryService(engine)
    assert service.receipts.would_fence(recalled, "“alice drinks green tea at the café”")
    assert not service.receipts.would_fence(recalled, "Alice drinks black tea at the café")


# -- remember's text content rules -------------------------------------------------------------


@pytest.mark.parametrize(
    "text", ["\x00", "\x00\x00 \x01", "\u200b\u200c\u200d", "\ufeff \u2060", "\x1b\x7f\u00ad"]
)
def test_a_text_without_a_visible_character_is_refused(client, probe, text):
    before = probe.state()
    failure = _fail(lambda: client.remember(text, ["s"]), "MEMORY_TEXT_REQUIRED")
    assert "visible" in failure.message
    probe.assert_nothing_written(before)


@pytest.mark.parametrize("field", ["text", "caller", "session", "source"])
def test_a_lone_surrogate_is_text_invalid_not_internal(client, probe, field):
    assert "MEMORY_TEXT_INVALID" in ERROR_CODES
    values = {"text": "Alice likes tea", "caller": "agent:x", "session": "s1", "source": "chat"}
    values[field] = values[field] + "\udcff"
    before = probe.state()
    failure = _fail(
        lambda: client.remember(
            values["text"],
            ["s"],
            caller=values["caller"],
            session=values["session"],
            source=values["source"],
        ),
        "MEMORY_TEXT_INVALID",
    )
    assert "UTF-8" in failure.message and failure.exit_code == 1
    probe.assert_nothing_written(before)


def test_a_receipt_with_a_lone_surrogate_is_receipt_invalid(client):
    client.add(FACT, "user:alice")
    recalled = client.recall("alice green tea cafe", ["user:alice"])
    receipt = dict(recalled["receipt"], caller="agent\ud800")
    _fail(lambda: client.remember("new text", ["s"], receipt=receipt), "MEMORY_RECEIPT_INVALID")


# -- the keyed API's input limits ---------------------------------------------------------------


def _nested(depth: int) -> str:
    return '{"a":' * depth + "1" + "}" * depth


@pytest.mark.parametrize("depth", [40, 900, 100_000])
def test_a_deeply_nested_keyed_request_is_invalid_not_internal(depth):
    raw = '{"key": "k", "memory": {"content": "x", "metadata": ' + _nested(depth) + "}}"
    failure = _fail(lambda: parse_request_json(raw), "MEMORY_REQUEST_INVALID")
    assert "deep" in failure.message


def test_a_deeply_nested_request_dict_is_invalid_before_the_schema_check():
    metadata: dict = {}
    inner = metadata
    for _ in range(2000):
        inner["a"] = {}
        inner = inner["a"]
    request = {"key": "k", "memory": {"content": "x", "metadata": metadata}}
    _fail(lambda: validate_request("remember", request), "MEMORY_REQUEST_INVALID")
    from engine.contract.normalize import json_depth

    assert json_depth({"a": [1, {"b": []}]}) == 4


def test_a_moderately_nested_keyed_request_is_fine():
    raw = '{"key": "k", "memory": {"content": "x", "metadata": ' + _nested(20) + "}}"
    assert validate_request("remember", parse_request_json(raw))["key"] == "k"


@pytest.mark.parametrize("field", ["since_ms", "until_ms"])
def test_a_range_bound_above_uint64_is_refused(memory, field):
    request = {field: 2**64}
    _fail(lambda: memory.keyed.recall(request), "MEMORY_REQUEST_INVALID")
    assert memory.keyed.recall({field: 2**64 - 1})["items"] == []


def test_other_uint64_fields_above_the_limit_are_refused(memory):
    for request in (
        {"memory": {"content": "x", "occurred_at_ms": 2**64}},
        {"key": "k", "ttl_seconds": 2**64, "memory": {"content": "x"}},
        {"key": "k", "if_revision": 2**70, "memory": {"content": "x"}},
    ):
        _fail(
            lambda r=request: memory.keyed.remember(r, caller="a", session="s"),
            "MEMORY_REQUEST_INVALID",
        )
