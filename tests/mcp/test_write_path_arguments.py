"""The MCP tools' argument check has a compiled fast path (gno_tui/mcp_tools.py): a call it
accepts skips jsonschema. It must never accept a call that jsonschema, the judge, refuses, and
a refused call still gets the contract code for its argument."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from engine.facade import MemoryFailure
from gno_tui.mcp_tools import RECALL_INPUT, REMEMBER_INPUT, check_arguments, fits_compiled

SCHEMAS = {"gno_remember": REMEMBER_INPUT, "gno_recall": RECALL_INPUT}

# Values near the edges the schemas draw: empty and long strings, patterns met and missed,
# numbers of every JSON type (booleans are not numbers), nested objects and lists.
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-3, max_value=300),
    st.floats(min_value=-2, max_value=300, allow_nan=False),
    st.sampled_from(
        [
            "",
            "a",
            "add",
            "propose",
            "supersede",
            "ADD",
            "user:alice",
            "x" * 64,
            "x" * 65,
            "f" * 64,
            "F" * 64,
            "gno://memory/2026-11-30/mem-0123456789abcdef",
            "gno:///nothing",
            "memory",
        ]
    ),
    st.text(max_size=8),
)
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _fitting(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values that meet one property's schema (built from its keywords)."""
    kind = schema.get("type")
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if kind == "string":
        if "pattern" in schema:
            return st.from_regex(schema["pattern"], fullmatch=True)
        low = schema.get("minLength", 0)
        return st.text(min_size=low, max_size=max(low, schema.get("maxLength", 12)))
    if kind == "integer":
        return st.integers(schema.get("minimum", -5), schema.get("maximum", 300))
    if kind == "array":
        return st.lists(_fitting(schema.get("items", {})), min_size=schema.get("minItems", 0))
    if kind == "object":
        properties = schema.get("properties", {})
        return st.fixed_dictionaries(
            {name: _fitting(properties[name]) for name in schema.get("required", [])},
            optional={
                name: _fitting(sub)
                for name, sub in properties.items()
                if name not in schema.get("required", [])
            },
        )
    return _VALUES


def _documents(schema: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    """Argument objects that fit the schema, and the same with one argument replaced, added
    or dropped (so that most miss by exactly one thing)."""
    fitting = _fitting(schema)
    names = st.sampled_from([*schema["properties"], "unknown"])

    def broken(document: dict[str, Any], name: str, value: Any, drop: bool) -> dict[str, Any]:
        changed = dict(document)
        if drop:
            changed.pop(name, None)
        else:
            changed[name] = value
        return changed

    return st.one_of(fitting, st.builds(broken, fitting, names, _VALUES, st.booleans()))


@pytest.mark.parametrize("tool", sorted(SCHEMAS))
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_the_compiled_check_accepts_only_what_jsonschema_accepts(tool: str, data: Any) -> None:
    schema = SCHEMAS[tool]
    document = data.draw(_documents(schema))
    if fits_compiled(tool, schema, document):
        assert list(Draft202012Validator(schema).iter_errors(document)) == []


@pytest.mark.parametrize(
    ("arguments", "code", "says"),
    [
        ({"text": "Alice drinks tea", "scopes": []}, "MEMORY_SCOPES_REQUIRED", "at least 1"),
        ({"scopes": ["user:alice"]}, "MEMORY_TEXT_REQUIRED", "needs `text`"),
        ({"text": 5, "scopes": ["user:alice"]}, "MEMORY_USAGE_INVALID", "of type string"),
        (
            {"text": "Alice drinks tea", "scopes": ["user:alice"], "decision": "keep"},
            "MEMORY_DECISION_INVALID",
            "must be one of propose, add, supersede",
        ),
        (
            {"text": "Alice drinks tea", "scopes": ["user:alice"], "colour": "red"},
            "MEMORY_USAGE_INVALID",
            "unknown argument(s) colour",
        ),
        (
            {"text": "Alice drinks tea", "scopes": ["user:alice"], "predecessorHash": "F" * 64},
            "MEMORY_DECISION_INVALID",
            "`predecessorHash` is malformed",
        ),
        (
            {"text": "Alice drinks tea", "scopes": ["user:alice"], "receipt": {"caller": "c"}},
            "MEMORY_RECEIPT_INVALID",
            "`receipt` lacks 'session'",
        ),
    ],
)
def test_a_refused_call_still_gets_its_arguments_code(
    arguments: dict[str, Any], code: str, says: str
) -> None:
    with pytest.raises(MemoryFailure) as refused:
        check_arguments("gno_remember", REMEMBER_INPUT, arguments)
    assert refused.value.code == code
    assert says in refused.value.message


def test_a_call_that_fits_comes_back_as_it_was_sent() -> None:
    arguments = {"text": "Alice drinks tea", "scopes": ["user:alice"], "decision": "add"}
    assert check_arguments("gno_remember", REMEMBER_INPUT, arguments) is arguments
