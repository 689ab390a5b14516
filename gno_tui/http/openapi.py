"""The OpenAPI 3.1 document of the REST routes, made from the route table: every route, its
body's schema and each answer's schema (the seed schemas verbatim, their `$defs` lifted into
components), the error object, and the bearer scheme. /mcp is MCP's own protocol, described
by MCP's tools/list, not here."""

from __future__ import annotations

import copy
import re
from typing import Any

from gno_tui import __version__
from gno_tui.http.routes import HttpRoute

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "additionalProperties": False,
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "pattern": "^MEMORY_[A-Z_]+$"},
                "message": {"type": "string"},
            },
        }
    },
}
_ERRORS = {
    400: "Bad input: the code names the field, the message says how to fix it.",
    401: "No token, or an unknown or revoked one (MEMORY_AUTH_REQUIRED).",
    403: "The token lacks a grant or a scope (MEMORY_GRANT_MISSING, MEMORY_SCOPE_FORBIDDEN).",
    404: "Not found: a collection, predecessor, key, proposal or request id.",
    409: "A conflict: a supersede or revision race, a busy write lease, a reused requestId.",
    413: "The body is over the server's limit.",
    500: "A failure inside gno-tui (MEMORY_INTERNAL).",
}
_PARAMETER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)(?::[a-z]+)?\}")


class _Components:
    def __init__(self) -> None:
        self.schemas: dict[str, Any] = {"Error": ERROR_SCHEMA}

    def add(self, name: str, schema: dict[str, Any]) -> dict[str, str]:
        """A $ref to `schema`, registered under `name` (its $defs under name_def)."""
        body = copy.deepcopy(schema)
        for key in ("$schema", "$id"):
            body.pop(key, None)
        defs = body.pop("$defs", {})
        renamed = {f"#/$defs/{d}": f"#/components/schemas/{name}_{d}" for d in defs}
        for inner, definition in defs.items():
            self.schemas[f"{name}_{inner}"] = _rewrite(definition, renamed)
        self.schemas[name] = _rewrite(body, renamed)
        return {"$ref": f"#/components/schemas/{name}"}


def _rewrite(value: Any, renamed: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {
            key: renamed.get(item, item) if key == "$ref" else _rewrite(item, renamed)
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [_rewrite(item, renamed) for item in value]
    return value


def _operation(route: HttpRoute, components: _Components) -> dict[str, Any]:
    operation: dict[str, Any] = {
        "operationId": route.operation_id,
        "summary": route.summary,
        "tags": [route.tag],
        "responses": {},
    }
    if route.description:
        operation["description"] = route.description
    parameters = [
        {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
        for name in _PARAMETER.findall(route.path)
    ]
    parameters += [
        {"name": name, "in": "query", "required": False, "schema": schema, "description": text}
        for name, schema, text in route.query_parameters
    ]
    parameters += [
        {"name": name, "in": "header", "required": False, "schema": {"type": "string"},
         "description": text}
        for name, text in route.headers_in
    ]  # fmt: skip
    if parameters:
        operation["parameters"] = parameters
    if route.request_schema is not None:
        reference = components.add(f"{route.operation_id}Request", route.request_schema)
        operation["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": reference}},
        }
    for status, schema in sorted(route.responses.items()):
        if status == 204:
            operation["responses"]["204"] = {"description": "Success, no content."}
            continue
        reference = components.add(f"{route.operation_id}{status}", schema)
        operation["responses"][str(status)] = {
            "description": "Success.",
            "content": {"application/json": {"schema": reference}},
        }
    if not route.public:
        operation["security"] = [{"bearer": []}]
        for status, text in _ERRORS.items():
            operation["responses"].setdefault(
                str(status),
                {
                    "description": text,
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                    },
                },
            )
    return operation


OPENAPI_PATH = "/openapi.json"
_SELF = {
    "get": {
        "operationId": "openapi",
        "summary": "This document: every REST route",
        "tags": ["server"],
        "responses": {
            "200": {
                "description": "The OpenAPI 3.1 document.",
                "content": {"application/json": {"schema": {"type": "object"}}},
            }
        },
    }
}


def document(routes: tuple[HttpRoute, ...]) -> dict[str, Any]:
    components = _Components()
    paths: dict[str, Any] = {OPENAPI_PATH: _SELF}
    for route in routes:
        path = _PARAMETER.sub(lambda match: "{" + match.group(1) + "}", route.path)
        paths.setdefault(path, {})[route.method.lower()] = _operation(route, components)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "gno-tui memory server",
            "version": __version__,
            "description": "An agent's memory over HTTP: GNO's memory routes, OB1's agent-"
            "memory routes and the keyed API. Every route but /healthz and /openapi.json "
            "needs `Authorization: Bearer <token>`; the token decides the caller, its scopes "
            "and whether writes apply or wait for a person's review. MCP over Streamable "
            "HTTP is served at /mcp.",
        },
        "paths": paths,
        "components": {
            "schemas": components.schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
