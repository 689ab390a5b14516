"""The gno_remember and gno_recall tools' contracts (docs/contract.md section 11b): input
schemas, descriptions, and the translation of tool arguments into engine requests. The tools
themselves are entries of gno_tui/mcp_registry.py's table.

Input schemas are written out by hand so every property carries a description and nothing
unknown gets through (additionalProperties false). Output schemas are the seed result schemas
verbatim. Arguments are checked against the input schema here, before the engine sees them,
and a violation becomes the contract error an agent can act on (MEMORY_SCOPES_REQUIRED, ...)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import fastjsonschema
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

from engine.facade import (
    MAX_FACTS_LIMIT,
    MAX_TOKENS_LIMIT,
    UINT64_MAX,
    MemoryFailure,
    RecallRequest,
    RememberRequest,
    check_json_depth,
)

_SHA256 = {"type": "string", "pattern": "^[a-f0-9]{64}$"}
_SCOPES = {
    "type": "array",
    "minItems": 1,
    "items": {"type": "string", "minLength": 1, "maxLength": 64},
    "description": "Required: 1 to 8 scopes (counted after trimming, lowercasing and removing "
    'duplicates), e.g. ["user:alice", "project:gno"]. There is no global scope: a fact is '
    "only visible to recalls that name one of its scopes. A scope starts with a letter or "
    "digit, then letters, digits or . _ : / @ - (at most 64 characters).",
}
_COLLECTION = {
    "type": "string",
    "minLength": 1,
    "description": 'Collection to use (default "memory"). Collections are created by a '
    "person with `gno-tui collection add`; an unknown name is MEMORY_COLLECTION_NOT_FOUND.",
}

_RECEIPT = {
    "type": "object",
    "additionalProperties": False,
    "required": ["caller", "session", "issuedAt", "memoryIds", "spanHashes", "digest"],
    "description": "The `receipt` object of your last gno_recall result, passed back "
    "unmodified. It fences replays: remembering a text that this recall returned is refused "
    "(MEMORY_FENCED_REPLAY), so recalled memory is not laundered into new facts. An altered "
    "or unknown receipt is MEMORY_RECEIPT_INVALID.",
    "properties": {
        "caller": {"type": "string", "description": "As issued."},
        "session": {"type": "string", "description": "As issued."},
        "issuedAt": {"type": "string", "description": "As issued (RFC 3339 UTC)."},
        "memoryIds": {
            "type": "array",
            "items": {"type": "string"},
            "description": "As issued: recordIds of the recalled facts.",
        },
        "spanHashes": {
            "type": "array",
            "items": _SHA256,
            "description": "As issued: contentHashes of the recalled facts.",
        },
        "digest": {**_SHA256, "description": "As issued: SHA-256 binding the fields above."},
    },
}

REMEMBER_INPUT: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["text", "scopes"],
    "properties": {
        "text": {
            "type": "string",
            "minLength": 1,
            "description": "The fact, one self-contained statement (at most 4096 UTF-8 bytes "
            'after whitespace is collapsed), e.g. "Alice prefers green tea".',
        },
        "scopes": _SCOPES,
        "decision": {
            "type": "string",
            "enum": ["propose", "add", "supersede"],
            "description": "propose (default): write nothing, answer the near-duplicate "
            "candidates. add: store a new fact. supersede: replace `predecessor` (needs "
            "`predecessorHash`). On a propose-only server add and supersede are held for a "
            "person and answered with `candidates`.",
        },
        "predecessor": {
            "type": "string",
            "pattern": "^gno://[^/]+/.+",
            "description": "With decision supersede: the gno:// uri of the fact to replace, "
            "as a recall or a candidates result reported it.",
        },
        "predecessorHash": {
            **_SHA256,
            "description": "With decision supersede: the predecessor's contentHash as you "
            "read it. If the fact changed since, the write is refused "
            "(MEMORY_PREDECESSOR_HASH_MISMATCH or MEMORY_SUPERSEDE_CONFLICT): recall again.",
        },
        "source": {
            "type": "string",
            "description": "Free-text evidence: where the fact came from (a message, a file, "
            "a URL). Stored with the fact.",
        },
        "receipt": _RECEIPT,
        "derivedFrom": {
            "type": "string",
            "description": "Where the text came from, if it was derived from something. A "
            "gno:// uri (a stored memory) is refused with MEMORY_FENCED_DERIVED: supersede "
            "that fact instead.",
        },
        "collection": _COLLECTION,
        "requestId": {
            "type": "string",
            "minLength": 1,
            "maxLength": 128,
            "description": "Optional: your id for this write (a UUID), to retry it safely. "
            "The same id again answers the first result without writing twice; the same id "
            "with a different request is MEMORY_REQUEST_CONFLICT.",
        },
    },
}

RECALL_INPUT: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["query", "scopes"],
    "properties": {
        "query": {
            "type": "string",
            "minLength": 1,
            "description": 'What to look for, in plain words, e.g. "what does alice drink".',
        },
        "scopes": {
            **_SCOPES,
            "description": "Required: the scopes to search (1 to 8); a fact "
            "is visible when it shares at least one of them. There is no global scope.",
        },
        "maxFacts": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_FACTS_LIMIT,
            "description": f"At most this many facts (default 8, at most {MAX_FACTS_LIMIT}).",
        },
        "maxTokens": {
            "type": "integer",
            "minimum": 1,
            "maximum": MAX_TOKENS_LIMIT,
            "description": "Token budget for the returned texts, estimated as UTF-8 bytes / 4 "
            f"(default 512, at most {MAX_TOKENS_LIMIT}). Facts that do not fit are counted "
            "in budget.omitted.",
        },
        "collection": {**_COLLECTION, "description": "Only this collection (default: all)."},
        "egress": {
            "type": "string",
            "enum": ["local_only", "lan", "remote"],
            "description": "Where the answer will go. lan returns only facts whose collection "
            "may leave for the LAN (policy lan or remote); remote only policy remote; "
            "local_only (default) admits every fact.",
        },
    },
}

REMEMBER_DESCRIPTION = """\
Store a fact in the user's long-term memory, or ask which stored facts it repeats.

- `scopes` are required: no global scope exists, and only recalls naming one of the fact's
  scopes will see it.
- decision `propose` (the default) writes nothing and answers `candidates`: the near-duplicates
  already stored. Check them before you add; supersede a stale candidate instead of adding
  a contradicting fact.
- {mode}
- When what you remember came after a gno_recall, pass that recall's `receipt` object: a text
  that the recall returned is refused (MEMORY_FENCED_REPLAY). Remember what is new only.
- A text already stored in an intersecting scope answers `existing` and writes nothing.
- Errors come back as a tool error whose structured content is {{"error": {{"code", "message"}}}};
  the message says how to fix the call.
- The result is the GNO memory-remember@1.0 result (outcome existing | candidates | added |
  superseded). Who you are is taken from the connection, never from arguments."""

PROPOSE_ONLY = (
    "This server is PROPOSE-ONLY: an add or supersede is held as a pending proposal for a "
    "person to review (the result is `candidates` and nothing is stored yet). Do not repeat "
    "the call; the person decides."
)
WRITE_ENABLED = (
    "This server is WRITE-ENABLED: add stores the fact at once (outcome `added`); supersede "
    "replaces its predecessor (outcome `superseded`)."
)

RECALL_DESCRIPTION = """\
Recall the user's stored facts relevant to a query, best first, within a budget.

- `scopes` are required: only facts sharing one of them are returned.
- Each fact carries its gno:// `uri`, `contentHash` (use it as `predecessorHash` to supersede
  it) and egress lineage; `budget.omitted` counts matches that did not fit.
- The result's `receipt` is content-free and bound to this connection: pass it as `receipt`
  to your next gno_remember, so recalled text is not stored again as a new fact.
- No match: `facts` is empty and `hint` says so.
- The result is the GNO memory-recall@1.0 result; errors are tool errors whose structured
  content is {"error": {"code", "message"}}."""


def remember_description(enable_write: bool) -> str:
    return REMEMBER_DESCRIPTION.format(mode=WRITE_ENABLED if enable_write else PROPOSE_ONLY)


# -- argument checks ------------------------------------------------------------------------

_VALIDATORS: dict[str, Draft202012Validator] = {}  # by tool name, made at its first call
# The schemas compiled (fastjsonschema), by tool name: a call that fits takes ~8 us, not ~80.
# jsonschema checks again only what they refuse, naming the error. They use only keywords
# both read alike (tests/mcp/test_write_path_arguments.py compares the two).
_COMPILED: dict[str, Callable[[Any], Any]] = {}
# A missing required argument -> the engine's own code for it.
_MISSING_CODES = {
    "text": "MEMORY_TEXT_REQUIRED",
    "query": "MEMORY_QUERY_REQUIRED",
    "scopes": "MEMORY_SCOPES_REQUIRED",
}
# Any other problem with an argument -> the code the engine uses for that argument.
_ARGUMENT_CODES = {
    "text": "MEMORY_TEXT_REQUIRED",
    "query": "MEMORY_QUERY_REQUIRED",
    "scopes": "MEMORY_SCOPES_INVALID",
    "decision": "MEMORY_DECISION_INVALID",
    "predecessor": "MEMORY_DECISION_INVALID",
    "predecessorUri": "MEMORY_DECISION_INVALID",
    "predecessorHash": "MEMORY_DECISION_INVALID",
    "receipt": "MEMORY_RECEIPT_INVALID",
    "maxFacts": "MEMORY_BUDGET_INVALID",
    "maxTokens": "MEMORY_BUDGET_INVALID",
    "egress": "MEMORY_POLICY_INVALID",
    "collection": "MEMORY_COLLECTION_NOT_FOUND",
    "requestId": "MEMORY_REQUEST_INVALID",
}
_JSON_TYPES = {
    bool: "boolean",
    int: "integer",
    float: "number",
    str: "string",
    list: "array",
    dict: "object",
    type(None): "null",
}


def _json_type(value: Any) -> str:
    return _JSON_TYPES.get(type(value), type(value).__name__)


def _describe(error: ValidationError) -> str:
    """A short message about one violation, without echoing a long value back."""
    where = "/".join(str(part) for part in error.absolute_path)
    subject = f"`{where}`" if where else "the arguments"
    schema = error.schema if isinstance(error.schema, dict) else {}
    if error.validator == "type":
        return (
            f"{subject} must be of type {error.validator_value}, not {_json_type(error.instance)}"
        )
    if error.validator == "enum":
        return f"{subject} must be one of {', '.join(map(str, error.validator_value))}"
    if error.validator == "additionalProperties":
        known = ", ".join(sorted(schema.get("properties", {})))
        extra = ", ".join(sorted(set(error.instance) - set(schema.get("properties", {}))))
        if where:
            return f"{subject} has unknown field(s) {extra}; its fields are: {known}"
        return f"unknown argument(s) {extra}; the arguments are: {known}"
    if error.validator in ("minimum", "maximum"):
        return f"{subject} must be from {schema.get('minimum')} to {schema.get('maximum')}"
    if error.validator == "minItems":
        return f"{subject} must hold at least {error.validator_value} item(s)"
    if error.validator == "minLength":
        return f"{subject} must not be empty"
    if error.validator == "maxLength":
        return f"{subject} is longer than {error.validator_value} characters"
    if error.validator == "pattern":
        return f"{subject} is malformed (expected {error.validator_value})"
    if error.validator == "required":
        return f"{subject} lacks {error.message.removesuffix(' is a required property')}"
    return f"{subject}: {error.message[:200]}"


def check_arguments(tool: str, schema: dict[str, Any], arguments: Any) -> dict[str, Any]:
    """The arguments, if they fit the tool's input `schema`; else the matching MemoryFailure."""
    if not isinstance(arguments, dict):
        raise MemoryFailure("MEMORY_USAGE_INVALID", f"{tool} takes an object of arguments.")
    _check_bounds(tool, arguments)
    if fits_compiled(tool, schema, arguments):
        return arguments
    validator = _VALIDATORS.get(tool)
    if validator is None:
        validator = _VALIDATORS[tool] = Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(arguments), key=_priority)
    if not errors:
        return arguments
    error = errors[0]
    if error.validator == "required" and not error.absolute_path:
        missing = [name for name in schema["required"] if name not in arguments]
        name = missing[0]
        raise MemoryFailure(
            _MISSING_CODES.get(name, "MEMORY_USAGE_INVALID"),
            f"{tool} needs `{name}`: {_hint(name)}",
        )
    name = str(error.absolute_path[0]) if error.absolute_path else ""
    code = _ARGUMENT_CODES.get(name, "MEMORY_USAGE_INVALID")
    if name == "scopes" and error.validator == "minItems":
        code = "MEMORY_SCOPES_REQUIRED"
    if name in ("text", "query", "collection") and error.validator == "type":
        code = "MEMORY_USAGE_INVALID"  # a wrong type is a malformed call, not a missing value
    hint = f" Fix: {_hint(name)}" if _hint(name) else ""
    raise MemoryFailure(code, f"{tool}: {_describe(error)}.{hint}")


def fits_compiled(tool: str, schema: dict[str, Any], arguments: dict[str, Any]) -> bool:
    """Whether `arguments` fit `schema` by its compiled check (check_arguments' fast path)."""
    check = _COMPILED.get(tool)
    if check is None:
        draft7 = {**schema, "$schema": "http://json-schema.org/draft-07/schema#"}
        check = _COMPILED[tool] = fastjsonschema.compile(draft7)
    try:
        check(arguments)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def _check_bounds(tool: str, arguments: dict[str, Any]) -> None:
    """What the schema check cannot be trusted with, refused first with the argument's code:
    jsonschema recurses into a value and repeats it in its messages, so an argument nested
    thousands of levels deep, or a number of thousands of digits, would fail inside it
    (RecursionError, Python's digit limit) instead of being answered. As the keyed requests
    do, every argument may nest at most 32 levels (check_json_depth) and its numbers must be
    finite and within the keyed requests' uint64 bound, ±(2**64 - 1)."""
    order = {"text": 1, "query": 1, "scopes": 2}
    for name in sorted(arguments, key=lambda key: (order.get(key, 3), key)):
        value = arguments[name]
        code = _bound_code(name)
        shown = f"{tool}: `{_short(name)}`"
        check_json_depth(value, what=shown, code=code)
        where = _first_unbounded_number(value, _short(name))
        if where is not None:
            raise MemoryFailure(
                code,
                f"{tool}: `{where}` is a number that is not finite or lies outside "
                f"±{UINT64_MAX} (2**64 - 1); no argument takes one.{_fix(name)}",
            )


def _bound_code(name: str) -> str:
    if name in ("text", "query", "collection"):
        return "MEMORY_USAGE_INVALID"  # a structure or number there is a malformed call
    return _ARGUMENT_CODES.get(name, "MEMORY_USAGE_INVALID")


def _short(name: str) -> str:
    return name if len(name) <= 40 else name[:40] + "…"


def _fix(name: str) -> str:
    return f" Fix: {_hint(name)}" if _hint(name) else ""


def _first_unbounded_number(value: Any, where: str) -> str | None:
    """The path of the first number in `value` that is not finite or lies outside
    ±UINT64_MAX, or None; without recursion (`value` nests at most 32 levels by now)."""
    stack: list[tuple[Any, str]] = [(value, where)]
    while stack:
        item, path = stack.pop()
        if isinstance(item, bool):
            continue
        if isinstance(item, int):
            if not -UINT64_MAX <= item <= UINT64_MAX:
                return path
        elif isinstance(item, float):
            if not math.isfinite(item) or abs(item) > UINT64_MAX:
                return path
        elif isinstance(item, dict):
            stack.extend((child, f"{path}/{_short(str(key))}") for key, child in item.items())
        elif isinstance(item, list | tuple):
            stack.extend((child, f"{path}/{index}") for index, child in enumerate(item))
    return None


def _priority(error: ValidationError) -> tuple[int, str]:
    """Report problems in the engine's order: text/query, then scopes, then the rest."""
    name = str(error.absolute_path[0]) if error.absolute_path else ""
    if error.validator == "required" and not error.absolute_path:
        return (0, "")
    order = {"text": 1, "query": 1, "scopes": 2}
    return (order.get(name, 3), name)


_HINTS = {
    "text": 'pass the fact as a string, e.g. "Alice prefers green tea".',
    "query": 'say what to look for as a string, e.g. "what does alice drink".',
    "scopes": 'pass 1 to 8 scope strings, e.g. ["user:alice"]; there is no global scope.',
    "decision": "use propose (default), add or supersede.",
    "predecessor": "pass the gno:// uri a recall or candidates result reported.",
    "predecessorHash": "pass the predecessor's contentHash (64 lowercase hex) as you read it.",
    "receipt": "pass the `receipt` object of the last gno_recall result, unmodified.",
    "maxFacts": f"a whole number from 1 to {MAX_FACTS_LIMIT} (default 8).",
    "maxTokens": f"a whole number from 1 to {MAX_TOKENS_LIMIT} (default 512).",
    "egress": "use local_only (default), lan or remote.",
    "collection": 'a collection name, e.g. "memory" (the default).',
    "source": "free text: where the fact came from.",
    "derivedFrom": "a string naming where the text came from.",
}


def _hint(name: str) -> str:
    return _HINTS.get(name, "")


def remember_request(arguments: dict[str, Any], *, caller: str, session: str) -> RememberRequest:
    """Identity is the connection's; created_by stays the engine's default, "agent"."""
    return RememberRequest(
        text=arguments["text"],
        scopes=list(arguments["scopes"]),
        caller=caller,
        session=session,
        decision=arguments.get("decision"),
        predecessor=arguments.get("predecessor"),
        predecessor_hash=arguments.get("predecessorHash"),
        collection=arguments.get("collection"),
        source=arguments.get("source"),
        receipt=arguments.get("receipt"),
        derived_from=arguments.get("derivedFrom"),
    )


def recall_request(arguments: dict[str, Any], *, caller: str, session: str) -> RecallRequest:
    request = RecallRequest(
        query=arguments["query"],
        scopes=list(arguments["scopes"]),
        caller=caller,
        session=session,
        collection=arguments.get("collection"),
        egress=arguments.get("egress"),
    )
    if "maxFacts" in arguments:
        request.max_facts = arguments["maxFacts"]
    if "maxTokens" in arguments:
        request.max_tokens = arguments["maxTokens"]
    return request
