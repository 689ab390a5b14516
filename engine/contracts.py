"""The JSON Schemas every result is validated against before it leaves the engine."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft7Validator, Draft202012Validator, FormatChecker
from jsonschema.protocols import Validator

from engine.errors import MemoryFailure

SCHEMA_FILES = {
    "remember": "gno-memory-remember-result.schema.json",
    "recall": "gno-memory-recall-result.schema.json",
    "ob1_recall": "ob1-agent-memory-recall-response.schema.json",
    "keyed_requests": "keyed-memory-requests.schema.json",
}


def schema_dir() -> Path:
    """schemas/ ships inside the wheel as engine/schemas; in a source checkout it is beside it."""
    packaged = Path(__file__).parent / "schemas"
    return packaged if packaged.is_dir() else Path(__file__).parent.parent / "schemas"


@cache
def load_schema(name: str) -> dict[str, Any]:
    file = schema_dir() / SCHEMA_FILES.get(name, name)
    return json.loads(file.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@cache
def validator(name: str) -> Validator:
    schema = load_schema(name)
    cls = Draft202012Validator if "2020-12" in schema.get("$schema", "") else Draft7Validator
    return cls(schema, format_checker=FormatChecker())  # type: ignore[no-any-return]


def schema_errors(name: str, document: Any) -> list[str]:
    return [
        f"{'/'.join(str(p) for p in err.absolute_path) or '<root>'}: {err.message}"
        for err in validator(name).iter_errors(document)
    ]


def ensure_valid(name: str, document: dict[str, Any]) -> dict[str, Any]:
    """Refuse to hand out a result that breaks its contract: that is our bug, reported as such."""
    errors = schema_errors(name, document)
    if errors:
        raise MemoryFailure(
            "MEMORY_INTERNAL",
            f"gno-tui built a {name} result that breaks its schema ({errors[0]}); "
            "please report this with the command you ran.",
        )
    return document
