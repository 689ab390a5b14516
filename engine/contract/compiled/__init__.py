"""Validators generated from the JSON Schemas (engine/contract/validation.py writes them and
says when): one module per schema, each with `validate` and the SHA-256 of its schema.

The exceptions below are what the generated code raises, constructed as fastjsonschema's
are, so that a validator kept here runs without importing fastjsonschema."""

from __future__ import annotations

from typing import Any


class SchemaViolation(ValueError):
    """A document breaks its schema; the message says where."""


class JsonSchemaValueException(SchemaViolation):
    def __init__(
        self,
        message: str,
        value: Any = None,
        name: str | None = None,
        definition: Any = None,
        rule: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.value = value
        self.name = name
        self.definition = definition
        self.rule = rule


class JsonSchemaValuesException(SchemaViolation):
    def __init__(self, errors: list[JsonSchemaValueException]) -> None:
        self.message = "; ".join(error.message for error in errors)
        super().__init__(self.message)
        self.errors = errors
