"""Every REST route, fuzzed from the live server's own /openapi.json (schemathesis): whatever
a client sends, the server answers with a status and a body its document declares, never a
failure inside (500), for a token that writes and for one whose writes are held.

Bounded (a fixed seed, a few dozen examples per route, no example database) so that it runs
the same way each time, in well under a minute."""

from __future__ import annotations

import pytest
import schemathesis
from http_harness import SharedServer
from schemathesis.checks import (
    content_type_conformance,
    ignored_auth,
    negative_data_rejection,
    not_a_server_error,
    response_headers_conformance,
    response_schema_conformance,
    status_code_conformance,
    unsupported_method,
)
from schemathesis.config import HealthCheck
from schemathesis.specs.openapi.schemas import OpenApiSchema

# Not positive_data_acceptance: the document's schemas are looser than the engine's checks
# (a scope's grammar, the UTF-8 byte limits, a collection that must exist), so a request the
# schema allows may rightly be refused with a 4xx.
CHECKS = [
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
    content_type_conformance,
    response_headers_conformance,
    negative_data_rejection,
    ignored_auth,
    unsupported_method,
]
EXAMPLES = 25  # per route and token

pytestmark = pytest.mark.slow  # about 15 s per token here, 20 s on PostgreSQL


def schema_for(shared: SharedServer, token: str) -> OpenApiSchema:
    schema = schemathesis.openapi.from_url(f"{shared.server.url}/openapi.json")
    schema.config.update(
        base_url=shared.server.url,
        headers={"Authorization": f"Bearer {token}"},
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )
    schema.config.generation.update(max_examples=EXAMPLES, deterministic=True, database="none")
    schema.config.seed = 12345
    return schema


@pytest.fixture(scope="module")
def writer_schema(shared: SharedServer) -> OpenApiSchema:
    return schema_for(shared, shared.writer)


@pytest.fixture(scope="module")
def proposer_schema(shared: SharedServer) -> OpenApiSchema:
    return schema_for(shared, shared.proposer)


as_writer = schemathesis.pytest.from_fixture("writer_schema")
as_proposer = schemathesis.pytest.from_fixture("proposer_schema")


@as_writer.parametrize()
def test_every_route_answers_as_documented_for_a_writer(case: schemathesis.Case) -> None:
    case.call_and_validate(checks=CHECKS)


@as_proposer.parametrize()
def test_every_route_answers_as_documented_for_a_propose_only_token(
    case: schemathesis.Case,
) -> None:
    case.call_and_validate(checks=CHECKS)
