"""Arguments the schema check must not be handed as they are (gno_tui/mcp_tools.py
check_arguments): an argument nested far deeper than any tool takes, or a number beyond the
keyed requests' uint64 bound, is answered with the argument's own code, never
MEMORY_INTERNAL, a RecursionError or silence; nothing is written or held.

Driven by the official MCP client on the installed console script. The client itself refuses
to serialise more than about 250 levels, so the 100 000 levels of the brief are checked on
check_arguments directly."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_harness import fact_files, mcp_session, run_cli, structured_error, structured_ok

from engine.facade import UINT64_MAX, MemoryFailure
from gno_tui.mcp_tools import RECALL_INPUT, REMEMBER_INPUT, check_arguments

# Deep enough for every check (the limit is 32 levels), shallow enough for the SDK's own JSON
# parser on the server (about 200 levels, the request's envelope included).
DEPTHS = (33, 64, 150)


def nested(depth: int, *, kind: str = "object") -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"a": value} if kind == "object" else [value]
    return value


def deep_calls(depth: int) -> list[tuple[str, dict[str, Any], str]]:
    """(tool, arguments, the code expected) with one argument nested `depth` levels."""
    return [
        ("gno_remember", {"text": "t", "scopes": ["s"], "receipt": nested(depth)}, "RECEIPT"),
        ("gno_remember", {"text": "t", "scopes": nested(depth, kind="array")}, "SCOPES"),
        ("gno_remember", {"text": nested(depth, kind="array"), "scopes": ["s"]}, "USAGE"),
        ("gno_remember", {"text": "t", "scopes": ["s"], "metadata": nested(depth)}, "USAGE"),
        ("gno_recall", {"query": "t", "scopes": ["s"], "egress": nested(depth)}, "POLICY"),
        ("gno_recall", {"query": "t", "scopes": ["s"], "maxFacts": nested(depth)}, "BUDGET"),
        ("memory_remember", {"memory": {"content": "t", "metadata": nested(depth)}}, "REQUEST"),
        (
            "memory_search",
            {"query": "t", "expansion_terms": nested(depth, kind="array")},
            "REQUEST",
        ),
    ]


CODES = {
    "RECEIPT": "MEMORY_RECEIPT_INVALID",
    "SCOPES": "MEMORY_SCOPES_INVALID",
    "USAGE": "MEMORY_USAGE_INVALID",
    "POLICY": "MEMORY_POLICY_INVALID",
    "BUDGET": "MEMORY_BUDGET_INVALID",
    "REQUEST": "MEMORY_REQUEST_INVALID",
}


def assert_nothing_stored(home: Path) -> None:
    assert fact_files(home) == []
    assert run_cli(home, "review", "--list", "--all", "--json") == {"proposals": []}


async def test_deeply_nested_arguments_get_the_arguments_code(mcp_home: Path) -> None:
    async with mcp_session(mcp_home) as session:
        for depth in DEPTHS:
            for tool, arguments, code in deep_calls(depth):
                with anyio.fail_after(20):  # an unanswered request fails here, not at 60 s
                    result = await session.call_tool(tool, arguments)
                message = structured_error(result, CODES[code])
                if tool.startswith("gno_"):
                    assert "too deep" in message and "32 levels" in message, message
        # The server is still there and still answers ordinary calls.
        recalled = await session.call_tool("gno_recall", {"query": "t", "scopes": ["s"]})
        structured_ok(recalled, "recall")
    assert_nothing_stored(mcp_home)


async def test_numbers_beyond_the_uint64_bound_get_the_arguments_code(mcp_home: Path) -> None:
    beyond = (UINT64_MAX + 1, -(UINT64_MAX + 1), 10**30, 1e300)
    async with mcp_session(mcp_home, enable_write=True) as session:
        for number in beyond:
            calls: list[tuple[str, dict[str, Any], str]] = [
                ("gno_recall", {"query": "t", "scopes": ["s"], "maxFacts": number}, "BUDGET"),
                ("gno_recall", {"query": "t", "scopes": ["s"], "maxTokens": number}, "BUDGET"),
                ("gno_recall", {"query": "t", "scopes": ["s"], "egress": number}, "POLICY"),
                (
                    "gno_remember",
                    {"text": "t", "scopes": ["s"], "decision": "add", "source": [number]},
                    "USAGE",
                ),
                (
                    "gno_remember",
                    {"text": "t", "scopes": ["s"], "receipt": {"memoryIds": [number]}},
                    "RECEIPT",
                ),
                ("memory_recall", {"query": "t", "since_ms": abs(number)}, "REQUEST"),
            ]
            for tool, arguments, code in calls:
                with anyio.fail_after(20):
                    result = await session.call_tool(tool, arguments)
                structured_error(result, CODES[code])
        # The bound itself is a number like any other: the schema's own range answers it.
        at_bound = await session.call_tool(
            "gno_recall", {"query": "t", "scopes": ["s"], "maxFacts": UINT64_MAX}
        )
        assert "from 1 to 256" in structured_error(at_bound, "MEMORY_BUDGET_INVALID")
    assert_nothing_stored(mcp_home)


async def test_a_request_too_deep_for_the_sdks_parser_is_answered(mcp_home: Path) -> None:
    async with mcp_session(mcp_home) as session:
        with anyio.fail_after(5):
            result = await session.call_tool(
                "memory_remember", {"memory": {"content": "t", "metadata": nested(220)}}
            )
        structured_error(result, "MEMORY_REQUEST_INVALID")


@pytest.mark.parametrize("depth", [33, 1_000, 100_000])
def test_check_arguments_bounds_depth_without_recursing(depth: int) -> None:
    """What reaches check_arguments in-process (no JSON parser limits it) at any depth."""
    for tool, arguments, code in deep_calls(depth):
        if not tool.startswith("gno_"):
            continue  # the keyed tools' requests are checked by the engine
        schema = REMEMBER_INPUT if tool == "gno_remember" else RECALL_INPUT
        with pytest.raises(MemoryFailure) as refused:
            check_arguments(tool, schema, arguments)
        assert refused.value.code == CODES[code], (tool, refused.value)
        assert "at most 32 levels" in str(refused.value)


def test_check_arguments_never_writes_out_a_huge_number() -> None:
    """A number of 5000 digits would make jsonschema's message fail (Python refuses to turn
    it into text); it is refused first, and the message does not repeat it."""
    for number in (10**5000, -(10**5000), float("inf"), float("nan")):
        with pytest.raises(MemoryFailure) as refused:
            check_arguments(
                "gno_recall", RECALL_INPUT, {"query": "t", "scopes": ["s"], "maxFacts": number}
            )
        assert refused.value.code == "MEMORY_BUDGET_INVALID"
        assert len(str(refused.value)) < 400
    arguments = {"query": "t", "scopes": ["s"], "maxFacts": 8, "maxTokens": 512}
    assert check_arguments("gno_recall", RECALL_INPUT, arguments) is arguments
